//! The client verbs of `kelson`: `discover`, `tools`, `call`, `resources`, `templates`, `read`,
//! `prompts`, `prompt`, `complete`, `listen` and `task`, against a server started over stdio or reached
//! over Streamable HTTP.
//!
//! Exit codes (also in `kelson --help`):
//! - 0: success;
//! - 1: the tool ran and reported an error (`isError`);
//! - 2: a protocol error: the server answered with a JSON-RPC error, broke the protocol, shares no
//!   protocol revision with us, does not speak the era `--era` forced, or lacks what was asked
//!   (e.g. `listen` on a legacy server without a stream);
//! - 3: a transport error (cannot connect or start the server, I/O, an HTTP status, the server
//!   exited) or a local timeout (`--timeout`: the request was cancelled; the server is not blamed);
//! - 4: a usage or local error (bad arguments, an input handler that failed);
//! - 130: Ctrl-C during a call or `kelson task wait`, which cancelled the request or the task.

mod args;
mod auth;
mod connect;
mod hints;
mod json;
mod media;
mod offers;
mod output;
mod progress;
mod prompt;
mod roots;
pub(crate) mod suggest;
mod task;
mod tools;
mod verbs;
pub(crate) mod words;

/// For `kelson bench`, which prints what servers answer too.
pub(crate) use output::clean_line;

use std::fmt;
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgGroup, Args, Subcommand};
use kelson_client::ErrorKind;

/// Exit status: the tool reported an error.
pub(crate) const EXIT_TOOL_ERROR: u8 = 1;
/// Exit status: a protocol error.
pub(crate) const EXIT_PROTOCOL: u8 = 2;
/// Exit status: a transport error or a local timeout.
pub(crate) const EXIT_TRANSPORT: u8 = 3;
/// Exit status: a usage or local error.
pub(crate) const EXIT_USAGE: u8 = 4;
/// Exit status: interrupted (Ctrl-C), as a shell reports a process SIGINT ended.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// How to reach the server, and how to show what it says; shared by every client verb.
#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("server").required(true).args(["stdio", "url"])))]
pub(crate) struct Common {
    /// Start this server and speak stdio to it, e.g. "conformance-server --stdio". The line is split
    /// into words like a shell would (quotes and backslashes), without any expansion, and run
    /// without a shell (for pipes, variables or ~, give "sh -c '...'").
    #[arg(long, value_name = "COMMAND")]
    stdio: Option<String>,

    /// Show what the --stdio server writes on stderr as it writes it. Without this flag it is kept,
    /// and its last lines are shown only when the server fails.
    #[arg(long, requires = "stdio")]
    server_stderr: bool,

    /// Speak Streamable HTTP to this endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long, value_name = "URL")]
    url: Option<String>,

    /// Trust the CA certificates in this PEM file, besides the system's, for an https:// --url
    /// whose certificate a private CA issued. SSL_CERT_FILE, when set, replaces the system's
    /// certificates instead.
    #[arg(long, value_name = "FILE", requires = "url")]
    ca_cert: Option<PathBuf>,

    /// An HTTP header for every request, as NAME:VALUE (repeatable), e.g. "Authorization: Bearer x".
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME:VALUE",
        requires = "url"
    )]
    headers: Vec<String>,

    /// How long to wait for each answer: seconds, or with a unit (500ms, 30s, 2m); progress
    /// notifications restart the wait. A timeout is a local decision (the request is cancelled)
    /// and exits with 3.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::flags::duration)]
    timeout: Duration,

    /// Print the result as the server sent it, as JSON (each list page's items merged when there
    /// are several pages; `discover` on a legacy server: its initialize result; one line per
    /// notification for `listen`). A JSON-RPC error is printed on stdout too, as {"error": {"code",
    /// "message", "data"}}; any other failure of a command that printed nothing as {"error":
    /// {"kind", "message", "hint"}}, kind being protocol, transport, timeout, usage or
    /// interrupted.
    #[arg(long)]
    json: bool,

    /// Decline elicitations instead of asking in the terminal.
    #[arg(long)]
    no_input: bool,

    /// Where images, audio and binary resources are saved (default: ~/.cache/kelson/media, or
    /// $XDG_CACHE_HOME/kelson/media, where files older than a day are removed). An existing file is
    /// never overwritten: the new one gets a number (image-1.png), and both names are printed.
    #[arg(long, value_name = "DIR")]
    save_dir: Option<PathBuf>,

    /// A root to offer a server that asks for roots (repeatable): a directory (".", "~/notes"),
    /// sent as its canonical file:// URI, or a URI, sent as it is.
    #[arg(long = "root", value_name = "DIR|URI")]
    roots: Vec<String>,

    /// Which protocol era to speak: auto probes with server/discover and falls back to the
    /// initialize handshake for a 2025 server; modern never sends initialize (a 2025 server is an
    /// error, exit 2); legacy sends initialize at once, without the probe (a dual-era server then
    /// serves a 2025 session).
    #[arg(long, value_enum, value_name = "ERA", default_value_t = EraArg::Auto)]
    era: EraArg,
}

/// `--era`, for the client verbs and `kelson bench`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum EraArg {
    /// Probe, then the handshake when the server is a 2025 one.
    #[default]
    Auto,
    /// Revision 2026-07-28 only.
    Modern,
    /// The 2025 handshake (initialize) only.
    Legacy,
}

impl From<EraArg> for kelson_client::EraChoice {
    fn from(era: EraArg) -> Self {
        match era {
            EraArg::Auto => kelson_client::EraChoice::Auto,
            EraArg::Modern => kelson_client::EraChoice::Modern,
            EraArg::Legacy => kelson_client::EraChoice::Legacy,
        }
    }
}

/// The client verbs.
#[derive(Subcommand, Debug)]
pub(crate) enum Verb {
    /// Show the server: identity, protocol revision, capabilities, instructions.
    Discover(Common),
    /// List the tools (`--wide`: no value cut to the terminal's width), or show one in full:
    /// `kelson tools NAME`.
    Tools(tools::ToolsArgs),
    /// Call a tool: `kelson call NAME '{"a": 1}'` or `kelson call NAME --arg a=1`.
    Call(CallArgs),
    /// List the resources.
    Resources(Common),
    /// List the resource templates.
    Templates(Common),
    /// Read a resource.
    Read(ReadArgs),
    /// List the prompts.
    Prompts(Common),
    /// Get a prompt, with its arguments as --arg NAME=VALUE.
    Prompt(PromptArgs),
    /// Complete an argument of a prompt (--prompt NAME) or a resource template (--template URI).
    Complete(CompleteArgs),
    /// Print change notifications as they come, until Ctrl-C (default: every list change).
    Listen(ListenArgs),
    /// Follow a task a call became (`kelson call --task`): get, wait for, or cancel it.
    #[command(subcommand)]
    Task(TaskAction),
    /// OAuth for servers that require it: log in (the token is kept and used by the other
    /// commands), log out, show what is kept.
    #[command(subcommand)]
    Auth(auth::AuthAction),
}

#[derive(Args, Debug)]
pub(crate) struct CallArgs {
    /// The tool.
    name: String,
    /// The arguments as one JSON object. They are checked against the tool's inputSchema before
    /// the call is sent (`kelson tools` lists each tool's arguments).
    #[arg(value_name = "ARGS_JSON")]
    args_json: Vec<String>,
    /// One argument as KEY=VALUE (repeatable; wins over ARGS_JSON). The value is JSON where the
    /// tool's schema allows a non-string type and it parses, else a string.
    #[arg(long = "arg", short = 'a', value_name = "KEY=VALUE")]
    args: Vec<String>,
    /// Ask for the server's log messages at this level and above (debug, info, warning, error, ...),
    /// printed on stderr.
    #[arg(long, value_name = "LEVEL")]
    log: Option<String>,
    /// Print the structured content too when the text already renders it (a query's table). It is
    /// printed anyway when it is the same JSON as a text block (once) or when there is no text.
    #[arg(long)]
    structured: bool,
    /// Ask for the call to run as a task and print its handle at once (id, status, poll interval;
    /// --json: the task as sent), without waiting; follow it with `kelson task wait ID`. A server
    /// that answers at once prints the result as usual. Without --task, a call the server turns
    /// into a task is waited for (its status messages shown as progress; Ctrl-C cancels it).
    #[arg(long)]
    task: bool,
    #[command(flatten)]
    common: Common,
}

/// `kelson task`: a task a call became, by its id, on the same server (the same --url, or a --stdio
/// server that keeps its tasks in a shared store).
#[derive(Subcommand, Debug)]
pub(crate) enum TaskAction {
    /// Show the task: status, message, times; its result once completed, its error once failed,
    /// the input it waits for. Exits 0 while it runs, and once it ended as `kelson task wait` would
    /// (1 for a tool error, 2 once failed or cancelled).
    Get(TaskIdArgs),
    /// Wait for the task to end, showing its status messages on stderr, and print its result as
    /// `kelson call` does (same exit codes). Input the task asks for is asked in the terminal.
    /// Ctrl-C cancels the task (tasks/cancel) and exits 130; running out of time (10 minutes, or
    /// --timeout if longer) only stops waiting.
    Wait(TaskWaitArgs),
    /// Cancel the task (tasks/cancel) and show its status after; a task that already ended is
    /// left as it is.
    Cancel(TaskIdArgs),
}

impl TaskAction {
    fn common(&self) -> &Common {
        match self {
            TaskAction::Get(a) | TaskAction::Cancel(a) => &a.common,
            TaskAction::Wait(a) => &a.common,
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct TaskIdArgs {
    /// The task's id, as `kelson call --task` printed it (an id that starts with `-`, as other
    /// servers' may, is taken as the id).
    #[arg(allow_hyphen_values = true)]
    id: String,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct TaskWaitArgs {
    /// The task's id, as `kelson call --task` printed it (an id that starts with `-`, as other
    /// servers' may, is taken as the id).
    #[arg(allow_hyphen_values = true)]
    id: String,
    /// Print the structured content too when the text already renders it (see `kelson call`).
    #[arg(long)]
    structured: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct ReadArgs {
    /// The resource's URI.
    uri: String,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct PromptArgs {
    /// The prompt.
    name: String,
    /// One argument as NAME=VALUE (repeatable).
    #[arg(long = "arg", short = 'a', value_name = "NAME=VALUE")]
    args: Vec<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("reference").required(true).args(["prompt", "template"])))]
pub(crate) struct CompleteArgs {
    /// Complete an argument of this prompt.
    #[arg(long, value_name = "NAME")]
    prompt: Option<String>,
    /// Complete a variable of this resource template (its URI template).
    #[arg(long, value_name = "URI_TEMPLATE")]
    template: Option<String>,
    /// The argument (or template variable) to complete.
    argument: String,
    /// What is typed so far.
    #[arg(default_value = "")]
    value: String,
    /// An argument already chosen, as NAME=VALUE (repeatable).
    #[arg(long = "context", value_name = "NAME=VALUE")]
    context: Vec<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
pub(crate) struct ListenArgs {
    /// Tool list changes.
    #[arg(long)]
    tools: bool,
    /// Prompt list changes.
    #[arg(long)]
    prompts: bool,
    /// Resource list changes.
    #[arg(long)]
    resources: bool,
    /// Updates of this resource (repeatable).
    #[arg(long = "resource", value_name = "URI")]
    resource: Vec<String>,
    #[command(flatten)]
    common: Common,
}

/// Why a verb failed, and so its exit status.
#[derive(Debug)]
pub(crate) enum CliError {
    /// Bad arguments or another local problem: exit 4.
    Usage(String),
    /// The client library failed: exit 2, 3 or 4 by the error's kind.
    Client(kelson_client::Error),
    /// The tool reported an error; the result was printed: exit 1.
    ToolError,
    /// The server could not do what was asked, said in our words: exit 2.
    Protocol(String),
    /// Ctrl-C stopped the command; what was done about it: exit 130.
    Interrupted(String),
    /// An error with what the user can do about it, and the last lines a stdio server wrote on
    /// stderr; exits as the error does.
    Explained {
        error: Box<CliError>,
        hint: Option<String>,
        stderr: Option<String>,
    },
}

impl CliError {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        CliError::Usage(message.into())
    }

    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => EXIT_USAGE,
            CliError::ToolError => EXIT_TOOL_ERROR,
            CliError::Protocol(_) => EXIT_PROTOCOL,
            CliError::Interrupted(_) => EXIT_INTERRUPTED,
            CliError::Explained { error, .. } => error.exit_code(),
            // A URL that cannot be used is a mistake on the command line.
            CliError::Client(kelson_client::Error::Http(
                kelson_client::HttpError::InvalidUrl { .. },
            )) => EXIT_USAGE,
            CliError::Client(e) => match e.kind() {
                ErrorKind::Protocol => EXIT_PROTOCOL,
                ErrorKind::Transport | ErrorKind::Timeout => EXIT_TRANSPORT,
                _ => match e {
                    kelson_client::Error::UnsupportedVersion { .. }
                    | kelson_client::Error::Unsupported(_) => EXIT_PROTOCOL,
                    _ => EXIT_USAGE,
                },
            },
        }
    }
}

impl From<kelson_client::Error> for CliError {
    fn from(e: kelson_client::Error) -> Self {
        CliError::Client(e)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(message)
            | CliError::Protocol(message)
            | CliError::Interrupted(message) => f.write_str(message),
            CliError::ToolError => f.write_str("the tool reported an error (isError)"),
            CliError::Explained {
                error,
                hint,
                stderr,
            } => {
                let text = error.to_string();
                f.write_str(&text)?;
                match hint {
                    // After a message of several lines (a JSON-RPC error's data), on a line of
                    // its own.
                    Some(hint) if text.contains('\n') => write!(f, "\nhint: {hint}")?,
                    Some(hint) => write!(f, "; {hint}")?,
                    None => {}
                }
                if let Some(stderr) = stderr {
                    f.write_str("\nthe server's stderr ended with:")?;
                    for line in stderr.lines() {
                        write!(f, "\n  {line}")?;
                    }
                }
                Ok(())
            }
            CliError::Client(e) => {
                if let kelson_client::Error::Protocol { method, error } = e {
                    write!(
                        f,
                        "{method}: JSON-RPC error {}: {}",
                        error.code, error.message
                    )?;
                    if let Some(data) = &error.data {
                        write!(f, "\n  data: {data}")?;
                    }
                    return Ok(());
                }
                write!(f, "{e}")?;
                // A failed connection or start says why in its message; the chain under it is
                // the libraries' own account of the same thing.
                let mut source = match e {
                    kelson_client::Error::Http(kelson_client::HttpError::Connect { .. })
                    | kelson_client::Error::Spawn { .. } => None,
                    _ => std::error::Error::source(e),
                };
                while let Some(s) = source {
                    let text = s.to_string();
                    if !e.to_string().contains(&text) {
                        write!(f, ": {text}")?;
                    }
                    source = s.source();
                }
                if e.kind() == ErrorKind::Timeout {
                    f.write_str(" (raise the wait with --timeout, e.g. --timeout 5m)")?;
                }
                Ok(())
            }
        }
    }
}

/// Runs one client verb and returns the process's exit status.
pub(crate) async fn run(verb: Verb) -> ExitCode {
    let result = verbs::run(verb).await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::ToolError) => ExitCode::from(EXIT_TOOL_ERROR),
        Err(e) => {
            let colour = std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let label = if colour {
                "\x1b[31merror:\x1b[0m"
            } else {
                "error:"
            };
            // The message carries the server's words (a JSON-RPC error's message and data, an
            // HTTP body, the end of its stderr): cleaned, and only then put after our label.
            let message = e.to_string();
            let _ = writeln!(std::io::stderr(), "{label} {}", output::clean(&message));
            ExitCode::from(e.exit_code())
        }
    }
}
