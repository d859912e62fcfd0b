//! The sample database: created once, never overwritten, deterministic, and ready to query.

use kelson_sql::{
    DatabaseConfig, SAMPLE_TABLES, SAMPLE_VIEWS, SampleOutcome, SqlAdapter, create_sample_database,
};
use serde_json::json;

use crate::support::{Client, TempDir, ok, text};

/// Every row of every table, as text: equal for equal data.
fn dump(path: &std::path::Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut out = String::new();
    for (table, _) in SAMPLE_TABLES {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))
            .unwrap();
        let width = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..width)
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap();
        for row in rows {
            out.push_str(&row.unwrap().join(","));
            out.push('\n');
        }
    }
    out
}

#[tokio::test]
async fn the_sample_database_has_what_it_promises() {
    let dir = TempDir::new();
    let path = dir.path("nested/data/sample.db");
    assert_eq!(
        create_sample_database(&path).unwrap(),
        SampleOutcome::Created
    );
    assert!(path.exists());
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left behind");

    let conn = rusqlite::Connection::open(&path).unwrap();
    for (table, rows) in SAMPLE_TABLES {
        let n: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(n as usize, *rows, "{table}");
    }
    let total: usize = SAMPLE_TABLES.iter().map(|(_, n)| n).sum();
    assert!(
        (5_000..20_000).contains(&total),
        "a few thousand rows: {total}"
    );
    let violations: i64 = conn
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(violations, 0);
    let statuses: i64 = conn
        .query_row("SELECT count(DISTINCT status) FROM orders", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(statuses, 5);
    drop(conn);

    // Deterministic: a second database built elsewhere holds the same rows.
    let other = dir.path("other.db");
    create_sample_database(&other).unwrap();
    assert_eq!(dump(&path), dump(&other));

    // Never overwritten: not the sample, not anything else.
    let before = std::fs::read(&path).unwrap();
    assert_eq!(
        create_sample_database(&path).unwrap(),
        SampleOutcome::AlreadyExists
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let notes = dir.path("notes.txt");
    std::fs::write(&notes, "keep me").unwrap();
    assert_eq!(
        create_sample_database(&notes).unwrap(),
        SampleOutcome::AlreadyExists
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "keep me");

    // Served at once.
    let adapter = SqlAdapter::sqlite(path.as_path(), DatabaseConfig::default()).unwrap();
    let client = Client::new(&adapter).await;
    let listed = client.call("list_tables", json!({})).await;
    let names: Vec<&str> = ok(&listed)["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut expected: Vec<&str> = SAMPLE_TABLES
        .iter()
        .map(|(t, _)| *t)
        .chain(SAMPLE_VIEWS.iter().copied())
        .collect();
    expected.sort_unstable();
    assert_eq!(names, expected);
    let top = client
        .call(
            "query",
            json!({"sql": "SELECT c.country, round(sum(t.total), 2) AS revenue FROM order_totals t \
                           JOIN customers c ON c.id = t.customer_id WHERE t.status <> 'cancelled' \
                           GROUP BY c.country ORDER BY revenue DESC LIMIT 3"}),
        )
        .await;
    assert_eq!(ok(&top)["row_count"], 3);
    assert!(text(&top).starts_with("country"), "{}", text(&top));
}
