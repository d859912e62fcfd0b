use kelson_macros::tool;

/// Not async.
#[tool]
fn shout(text: String) -> String {
    text.to_uppercase()
}

fn main() {}
