//! How `kelson serve` ends, as an exit status: the client commands' scheme (see main.rs), read for a
//! server. What was typed or written is wrong: 4, as for every command. What it names cannot be
//! used (the port, a file, a database, a server it must reach): 3, the client's transport class.
//! A server that started and then failed: 1.

use std::fmt;

use crate::client::{EXIT_TRANSPORT, EXIT_USAGE};

/// Exit status of a server that failed after it started serving.
pub(crate) const EXIT_SERVING: u8 = 1;

/// The exit statuses of `kelson serve`, for its --help (a macro, so that `concat!` can join it to
/// the rest of the help).
macro_rules! exit_codes_help {
    () => {
        "Exit codes: 0 stopped by SIGTERM or Ctrl-C (requests in flight drained or stopped), at \
the end of stdin with --stdio, or --check found nothing wrong; 1 the server failed while \
serving; 3 something the settings name cannot be used: the address cannot be bound (in use, \
not this machine's, privileged), a database cannot be opened or reached (a missing file or one \
that is not SQLite, a refused connection or login, a privileged role), a key or certificate \
file does not load, the authorization server, task store or approval ledger does not answer; 4 \
a usage error: an unknown flag, a bad value, a configuration file that cannot be read or holds \
an unknown key or a bad value, settings that conflict, a database setting its engine refuses \
(a name, a URL it cannot read, an unsupported option), nothing to serve."
    };
}
pub(crate) use exit_codes_help;

/// Why `kelson serve` stopped without serving to the end.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A flag, a value or the configuration file is wrong: nothing was opened.
    Usage(anyhow::Error),
    /// The settings are fine, but something they name cannot be used.
    Unavailable(anyhow::Error),
    /// The server started, then failed.
    Serving(anyhow::Error),
}

impl Failure {
    /// The process's exit status.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) => EXIT_USAGE,
            Failure::Unavailable(_) => EXIT_TRANSPORT,
            Failure::Serving(_) => EXIT_SERVING,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Failure::Usage(e) | Failure::Unavailable(e) | Failure::Serving(e)) = self;
        write!(f, "{e:#}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_has_its_status_and_keeps_the_whole_message() {
        let e = Failure::Usage(anyhow::anyhow!("inner").context("outer"));
        assert_eq!(e.exit_code(), 4);
        assert_eq!(e.to_string(), "outer: inner");
        assert_eq!(Failure::Unavailable(anyhow::anyhow!("x")).exit_code(), 3);
        assert_eq!(Failure::Serving(anyhow::anyhow!("x")).exit_code(), 1);
    }
}
