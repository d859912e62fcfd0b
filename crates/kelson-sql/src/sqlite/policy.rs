//! The SQLite authorizer: what a statement may do, decided by the engine while it prepares the
//! statement, never by reading the SQL text.
//!
//! SQLite calls the authorizer once for every table, column, function, pragma and schema change a
//! statement touches, before the statement exists. A denial makes preparation fail with
//! `SQLITE_AUTH`, so a refused statement never runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};

/// Functions that touch files, load code or hand out raw pointers. SQLite's own `load_extension`
/// is also disabled at the connection level; the shell's file functions are not compiled into this
/// build, but a name on this list stays refused should they ever be.
const DENIED_FUNCTIONS: &[&str] = &[
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
    "zipfile",
    "zipfile_cds",
    "sqlar_compress",
    "sqlar_uncompress",
    "lsmode",
    "shell_add_schema",
    "sqlite_dbdata",
    "sqlite_dbptr",
];

/// Pragmas that only read the schema, whatever their argument. Everything else, including every
/// pragma that sets a value, is refused.
const READ_PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "collation_list",
    "function_list",
];

/// Why the authorizer refused an action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Denial {
    pub(crate) why: String,
    /// The action would have changed the database (so `execute` could run it).
    pub(crate) write: bool,
}

/// Which connection the authorizer guards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The read-only connections behind `query`, `list_tables` and `describe_table`: only reads.
    Read,
    /// The connection behind `execute`: changes to the main database, but no attaching, no
    /// file-touching functions, no pragmas that change settings, no temporary objects (they would
    /// outlive the call on this connection), and no transaction control (the adapter owns the
    /// transaction).
    Write,
}

/// The authorizer state of one connection.
#[derive(Clone, Debug)]
pub(crate) struct Policy {
    mode: Mode,
    /// Set while the adapter itself runs `BEGIN`, `COMMIT` or `ROLLBACK`.
    internal: Arc<AtomicBool>,
    /// Set while the tail after the first statement is prepared: then everything is refused, so
    /// nothing in a second statement is ever authorized.
    tail: Arc<AtomicBool>,
    /// What the first denial refused, for the message, and whether it was a write.
    denied: Arc<Mutex<Option<Denial>>>,
}

impl Policy {
    pub(crate) fn new(mode: Mode) -> Self {
        Policy {
            mode,
            internal: Arc::default(),
            tail: Arc::default(),
            denied: Arc::default(),
        }
    }

    /// Which connection this policy guards.
    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// Installs the authorizer on a connection.
    pub(crate) fn install(&self, conn: &mut rusqlite::Connection) -> rusqlite::Result<()> {
        let policy = self.clone();
        conn.authorizer(Some(move |ctx: AuthContext<'_>| policy.decide(ctx)))
    }

    /// Runs `f` with transaction control allowed (the adapter's own `BEGIN`/`COMMIT`).
    pub(crate) fn internal<T>(&self, f: impl FnOnce() -> T) -> T {
        self.internal.store(true, Ordering::SeqCst);
        let out = f();
        self.internal.store(false, Ordering::SeqCst);
        out
    }

    /// Refuses everything until [`end_tail`](Self::end_tail).
    pub(crate) fn begin_tail(&self) {
        self.tail.store(true, Ordering::SeqCst);
    }

    pub(crate) fn end_tail(&self) {
        self.tail.store(false, Ordering::SeqCst);
    }

    /// Forgets the last denial (before preparing a new statement).
    pub(crate) fn reset(&self) {
        *self.denied.lock().expect("denial lock") = None;
    }

    /// What the last denial refused.
    pub(crate) fn take_denial(&self) -> Option<Denial> {
        self.denied.lock().expect("denial lock").take()
    }

    fn decide(&self, ctx: AuthContext<'_>) -> Authorization {
        if self.tail.load(Ordering::SeqCst) {
            return Authorization::Deny;
        }
        match self.judge(&ctx.action, ctx.database_name) {
            Ok(()) => Authorization::Allow,
            Err(denial) => {
                let mut denied = self.denied.lock().expect("denial lock");
                // Keep the first reason: SQLite stops preparing at the first denial.
                if denied.is_none() {
                    *denied = Some(denial);
                }
                Authorization::Deny
            }
        }
    }

    fn judge(&self, action: &AuthAction<'_>, database: Option<&str>) -> Result<(), Denial> {
        use AuthAction as A;
        let refuse = |why: String| Denial { why, write: false };
        // Actions allowed on both connections.
        match action {
            A::Select | A::Recursive => return Ok(()),
            A::Read { .. } => return Ok(()),
            A::Function { function_name } => {
                let name = function_name.to_ascii_lowercase();
                return if DENIED_FUNCTIONS.contains(&name.as_str()) {
                    Err(refuse(format!(
                        "the function {name}() is not allowed: it loads code or touches files"
                    )))
                } else {
                    Ok(())
                };
            }
            A::Pragma {
                pragma_name,
                pragma_value,
            } => {
                let name = pragma_name.to_ascii_lowercase();
                return if READ_PRAGMAS.contains(&name.as_str()) {
                    Ok(())
                } else {
                    let what = match pragma_value {
                        Some(v) => format!("PRAGMA {name} = {v}"),
                        None => format!("PRAGMA {name}"),
                    };
                    Err(refuse(format!(
                        "{what} is not allowed: only pragmas that read the schema ({}) are",
                        READ_PRAGMAS.join(", ")
                    )))
                };
            }
            A::Attach { .. } => {
                return Err(refuse(
                    "ATTACH is not allowed: the statement may use only this database".into(),
                ));
            }
            A::Detach { .. } => return Err(refuse("DETACH is not allowed".into())),
            A::Transaction { .. } | A::Savepoint { .. } => {
                return if self.internal.load(Ordering::SeqCst) {
                    Ok(())
                } else {
                    Err(refuse("transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT) is not allowed: each call runs in a transaction of its own".into()))
                };
            }
            A::CreateTempTable { .. }
            | A::CreateTempIndex { .. }
            | A::CreateTempTrigger { .. }
            | A::CreateTempView { .. }
            | A::DropTempTable { .. }
            | A::DropTempIndex { .. }
            | A::DropTempTrigger { .. }
            | A::DropTempView { .. } => {
                return Err(refuse(
                    "temporary tables, indexes, triggers and views are not allowed".into(),
                ));
            }
            _ => {}
        }
        if database == Some("temp") {
            return Err(refuse(
                "temporary tables, indexes, triggers and views are not allowed".into(),
            ));
        }
        match (self.mode, action) {
            (_, A::Unknown { code, .. }) => Err(refuse(format!(
                "the statement asks for an operation this adapter does not know (authorizer code {code})"
            ))),
            (Mode::Read, _) => Err(Denial {
                why: write_description(action),
                write: true,
            }),
            (Mode::Write, _) => Ok(()),
        }
    }
}

/// Says what a refused action would have changed.
fn write_description(action: &AuthAction<'_>) -> String {
    use AuthAction as A;
    let schema_table = |t: &str| {
        matches!(
            t.to_ascii_lowercase().as_str(),
            "sqlite_master" | "sqlite_schema" | "sqlite_temp_master" | "sqlite_temp_schema"
        )
    };
    let what = match action {
        // SQLite asks about the schema table first when a statement creates or drops an object.
        A::Insert { table_name } | A::Delete { table_name } | A::Update { table_name, .. }
            if schema_table(table_name) =>
        {
            "change the schema (create, drop or alter a table, index, view or trigger)".to_owned()
        }
        A::Insert { table_name } => format!("insert into table \"{table_name}\""),
        A::Update { table_name, .. } => format!("update table \"{table_name}\""),
        A::Delete { table_name } => format!("delete from table \"{table_name}\""),
        A::CreateTable { table_name } => format!("create table \"{table_name}\""),
        A::CreateIndex { index_name, .. } => format!("create index \"{index_name}\""),
        A::CreateTrigger { trigger_name, .. } => format!("create trigger \"{trigger_name}\""),
        A::CreateView { view_name } => format!("create view \"{view_name}\""),
        A::CreateVtable { table_name, .. } => format!("create virtual table \"{table_name}\""),
        A::DropTable { table_name } => format!("drop table \"{table_name}\""),
        A::DropIndex { index_name, .. } => format!("drop index \"{index_name}\""),
        A::DropTrigger { trigger_name, .. } => format!("drop trigger \"{trigger_name}\""),
        A::DropView { view_name } => format!("drop view \"{view_name}\""),
        A::DropVtable { table_name, .. } => format!("drop virtual table \"{table_name}\""),
        A::AlterTable { table_name, .. } => format!("alter table \"{table_name}\""),
        A::Reindex { index_name } => format!("reindex \"{index_name}\""),
        A::Analyze { table_name } => format!("analyze \"{table_name}\""),
        _ => "change the database".to_owned(),
    };
    format!("`query` runs read-only statements, and this one would {what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(action: AuthAction<'_>) -> Result<(), Denial> {
        Policy::new(Mode::Read).judge(&action, Some("main"))
    }

    fn write(action: AuthAction<'_>) -> Result<(), Denial> {
        Policy::new(Mode::Write).judge(&action, Some("main"))
    }

    #[test]
    fn reads_allow_only_reading() {
        assert!(read(AuthAction::Select).is_ok());
        assert!(
            read(AuthAction::Read {
                table_name: "t",
                column_name: "c"
            })
            .is_ok()
        );
        assert!(
            read(AuthAction::Function {
                function_name: "upper"
            })
            .is_ok()
        );
        let e = read(AuthAction::Insert { table_name: "t" }).unwrap_err();
        assert!(
            e.write && e.why.contains("insert into table \"t\""),
            "{e:?}"
        );
        let e = read(AuthAction::Insert {
            table_name: "sqlite_master",
        })
        .unwrap_err();
        assert!(e.why.contains("change the schema"), "{e:?}");
        assert!(
            !read(AuthAction::Attach { filename: "x" })
                .unwrap_err()
                .write
        );
        assert!(read(AuthAction::CreateTable { table_name: "t" }).is_err());
        assert!(
            read(AuthAction::Unknown {
                code: 99,
                arg1: None,
                arg2: None
            })
            .is_err()
        );
    }

    #[test]
    fn both_refuse_escapes() {
        for judge in [read, write] {
            assert!(
                judge(AuthAction::Function {
                    function_name: "LOAD_EXTENSION"
                })
                .is_err()
            );
            assert!(
                judge(AuthAction::Function {
                    function_name: "writefile"
                })
                .is_err()
            );
            assert!(judge(AuthAction::Attach { filename: "x.db" }).is_err());
            assert!(
                judge(AuthAction::Pragma {
                    pragma_name: "writable_schema",
                    pragma_value: Some("ON")
                })
                .is_err()
            );
            assert!(
                judge(AuthAction::Pragma {
                    pragma_name: "table_info",
                    pragma_value: Some("t")
                })
                .is_ok()
            );
            assert!(judge(AuthAction::CreateTempTable { table_name: "x" }).is_err());
            assert!(
                judge(AuthAction::Transaction {
                    operation: rusqlite::hooks::TransactionOperation::Begin
                })
                .is_err()
            );
        }
    }

    #[test]
    fn writes_allow_changes_and_internal_transactions() {
        assert!(write(AuthAction::Insert { table_name: "t" }).is_ok());
        assert!(write(AuthAction::DropTable { table_name: "t" }).is_ok());
        let p = Policy::new(Mode::Write);
        let begin = AuthAction::Transaction {
            operation: rusqlite::hooks::TransactionOperation::Begin,
        };
        assert!(p.judge(&begin, None).is_err());
        assert!(p.internal(|| p.judge(&begin, None)).is_ok());
        assert!(p.judge(&begin, None).is_err());
        // Nothing in the temp schema, even a plain insert.
        assert!(
            p.judge(&AuthAction::Insert { table_name: "t" }, Some("temp"))
                .is_err()
        );
    }
}
