use kelson_macros::tool;

/// Echoes.
#[tool(readonly)]
async fn echo(text: String) -> String {
    text
}

fn main() {}
