use kelson_macros::tool;

/// Returns a number, which is not a tool result.
#[tool]
async fn answer() -> i32 {
    42
}

fn main() {}
