//! `mcp serve`.

use anyhow::Context as _;
use clap::Args;
use mcp_server::{Server, stdio};

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Serve on stdin/stdout (newline-delimited JSON-RPC) for a local host that spawns this process.
    #[arg(long)]
    stdio: bool,

    /// Longest accepted message, in bytes.
    #[arg(long, default_value_t = 4 * 1024 * 1024, value_name = "BYTES")]
    max_message: usize,
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let server = Server::builder("mcp-rs", env!("CARGO_PKG_VERSION"))
        .info(
            mcp_types::Implementation::new("mcp-rs", env!("CARGO_PKG_VERSION"))
                .with_title("mcp-rs"),
        )
        .build()
        .context("building the server")?;
    if !args.stdio {
        anyhow::bail!("only --stdio is available in this build");
    }
    let config = stdio::StdioConfig {
        max_line: args.max_message,
        ..Default::default()
    };
    stdio::serve_stdio(server, config)
        .await
        .context("serving on stdio")
}
