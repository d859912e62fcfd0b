use kelson_macros::tool;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Query {
    sql: String,
}

/// Both kinds of arguments.
#[tool]
async fn query(#[args] query: Query, limit: u32) -> String {
    format!("{} {limit}", query.sql)
}

fn main() {}
