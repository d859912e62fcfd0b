//! The command line of a server started with [`run`](crate::run): `--stdio`, `--http ADDR`,
//! `--help` and `--version`, and how a mistake or a failure ends the process (in words on stderr,
//! with a status that says which).

use std::fmt;

use crate::Transport;

/// Exit status of a command-line mistake (the usual one of command-line programs).
pub(crate) const EXIT_USAGE: i32 = 2;
/// Exit status of a server that could not start or failed while serving.
pub(crate) const EXIT_FAILURE: i32 = 1;

/// A command line the server does not understand: what is wrong, in words. Its `Debug` is its
/// message too, so that a `main` returning it (through `?`) prints words, not a quoted string.
pub struct UsageError(String);

impl UsageError {
    pub(crate) fn new(problem: impl Into<String>) -> Self {
        UsageError(problem.into())
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; usage: [--stdio | --http ADDR]", self.0)
    }
}

impl fmt::Debug for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for UsageError {}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Invocation {
    /// Serve on this transport.
    Serve(Transport),
    /// Print the usage text.
    Help,
    /// Print the name and version.
    Version,
}

/// Reads the command line (without the program name): `--help`/`-h` or `--version`/`-V`
/// anywhere wins, as command-line programs do; otherwise the transport.
pub(crate) fn invocation(args: Vec<String>) -> Result<Invocation, UsageError> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(Invocation::Help);
    }
    if args.iter().any(|a| a == "--version" || a == "-V") {
        return Ok(Invocation::Version);
    }
    Transport::parse_args(args).map(Invocation::Serve)
}

/// The program's name as it was run (its file name), for the usage text and error messages.
pub(crate) fn program() -> String {
    std::env::args_os()
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "server".to_owned())
}

/// The text `--help` prints.
pub(crate) fn usage(program: &str, name: &str, version: &str) -> String {
    let http = if cfg!(feature = "http") {
        "      --http ADDR    Serve Streamable HTTP at http://ADDR/mcp, e.g. --http 127.0.0.1:8080 \
         (keep it on\n                     loopback unless something authenticates in front)\n"
    } else {
        ""
    };
    format!(
        "{name} {version}: an MCP server (Model Context Protocol), built with kelson.\n\
         \n\
         Usage: {program} [--stdio | --http ADDR]\n\
         \n\
         Options:\n      \
         --stdio        Serve on stdin and stdout, one JSON-RPC message per line (the default),\n                     \
         for an MCP host that starts this program\n\
         {http}  \
         -h, --help         Print this help\n  \
         -V, --version      Print the version\n\
         \n\
         Exit status: 0 when it stops (the end of stdin, or SIGINT/SIGTERM over HTTP), 1 when it\n\
         cannot start or fails while serving, {EXIT_USAGE} for a command-line mistake.\n"
    )
}

/// Prints `error` on stderr, in words with its causes, and ends the process with `code`.
pub(crate) fn exit_with(program: &str, error: &(dyn std::error::Error + 'static), code: i32) -> ! {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    eprintln!("{program}: error: {message}");
    if code == EXIT_USAGE {
        eprintln!("Try '{program} --help' for more information.");
    }
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn help_and_version_win_anywhere() {
        assert_eq!(invocation(args(&["--help"])).unwrap(), Invocation::Help);
        assert_eq!(
            invocation(args(&["--http", "x", "-h"])).unwrap(),
            Invocation::Help
        );
        assert_eq!(invocation(args(&["-V"])).unwrap(), Invocation::Version);
        assert_eq!(
            invocation(args(&[])).unwrap(),
            Invocation::Serve(Transport::Stdio)
        );
        let e = invocation(args(&["--verbose"])).unwrap_err();
        assert_eq!(
            format!("{e:?}"),
            "unknown argument --verbose; usage: [--stdio | --http ADDR]"
        );
    }

    #[test]
    fn the_usage_names_the_program_and_every_option() {
        let text = usage("calc", "calc", "1.0.0");
        assert!(text.starts_with("calc 1.0.0: an MCP server"), "{text}");
        assert!(
            text.contains("Usage: calc [--stdio | --http ADDR]"),
            "{text}"
        );
        for option in ["--stdio", "-h, --help", "-V, --version"] {
            assert!(text.contains(option), "{option}: {text}");
        }
    }
}
