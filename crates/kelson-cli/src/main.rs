//! `kelson`: run ready MCP servers, talk to any MCP server, and load-test one.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod client;
mod flags;
mod gateway;
mod logging;
#[cfg(feature = "otel")]
mod otel;
mod serve;

/// The kelson command line: ready-to-run Model Context Protocol servers (2026-07-28), and a client
/// for any MCP server over stdio or Streamable HTTP.
#[derive(Parser, Debug)]
#[command(
    name = "kelson",
    version,
    about,
    propagate_version = true,
    after_help = "Exit codes, one scheme for every command: 0 success; 1 the tool reported an \
error (isError), or kelson serve failed while serving; 2 a protocol error (a JSON-RPC error from \
the server, no common protocol revision, or a server that does not speak the era --era forces); \
3 a transport error (connect, I/O, HTTP status, the server exited) or a local timeout \
(--timeout), or for kelson serve something its settings name that cannot be used (the address, a \
database, a file); 4 a usage or local error (a bad flag or value, a bad configuration file); 130 \
interrupted by Ctrl-C while a call or `kelson task wait` ran (the request, or the task, was \
cancelled). kelson serve --help details its own."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run an MCP server.
    Serve(Box<serve::ServeArgs>),
    /// Serve many MCP servers behind one endpoint, with one policy, pinned tool definitions and
    /// an audit log.
    Gateway(Box<gateway::GatewayArgs>),
    /// Load-test an MCP server and report throughput and latency.
    Bench(bench::BenchArgs),
    #[command(flatten)]
    Client(client::Verb),
    /// Print the shell completion script of kelson (bash, zsh, fish, elvish, powershell).
    ///
    /// Installed, for example, with `kelson completions bash >
    /// ~/.local/share/bash-completion/completions/kelson`, `kelson completions zsh >
    /// ~/.zfunc/_kelson` (with ~/.zfunc in fpath before compinit) or `kelson completions fish >
    /// ~/.config/fish/completions/kelson.fish`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // clap's own usage status is 2, which the client commands use for protocol errors.
            return if e.use_stderr() {
                ExitCode::from(client::EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if let Command::Completions { shell } = cli.command {
        return completions(shell);
    }
    // Logs go to stderr: on stdio, stdout carries only protocol messages. The client commands
    // show warnings only, unless KELSON_LOG says otherwise. `kelson serve` sets up its own once it has
    // read its settings (the log format may come from its configuration file).
    match cli.command {
        Command::Serve(_) | Command::Gateway(_) | Command::Completions { .. } => {}
        Command::Bench(_) | Command::Client(_) => logging::init("warn", logging::LogFormat::Text),
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(3);
        }
    };
    let code = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => match serve::run(*args).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(e.exit_code())
                }
            },
            Command::Gateway(args) => match gateway::run(*args).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(e.exit_code())
                }
            },
            Command::Bench(args) => ExitCode::from(bench::run(args).await),
            Command::Client(verb) => client::run(verb).await,
            Command::Completions { .. } => ExitCode::SUCCESS,
        }
    });
    // A prompt may still be blocked reading stdin (the answer came another way, or Ctrl-C): do not
    // wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    code
}

/// `kelson completions SHELL`: the script on stdout. Written whole from a buffer: clap_complete
/// panics on a write error, and a reader that stops early (`| head`) is no error of ours.
fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut command = <Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "kelson", &mut script);
    match std::io::Write::write_all(&mut std::io::stdout().lock(), &script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: cannot write the script: {e}");
            ExitCode::from(client::EXIT_USAGE)
        }
        _ => ExitCode::SUCCESS,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
