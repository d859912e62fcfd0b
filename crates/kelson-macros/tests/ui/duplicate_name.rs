use kelson_macros::tools;

struct Calculator;

#[tools]
impl Calculator {
    /// Adds.
    #[tool(name = "add")]
    async fn plus(&self, a: i64, b: i64) -> String {
        (a + b).to_string()
    }

    /// Also adds.
    #[tool]
    async fn add(&self, a: i64, b: i64) -> String {
        (a + b).to_string()
    }
}

fn main() {}
