use kelson_macros::tool;
use kelson_server::RequestContext;

/// Two contexts.
#[tool]
async fn twice(first: RequestContext, second: RequestContext) -> String {
    format!("{} {}", first.method(), second.method())
}

fn main() {}
