use kelson_macros::tool;

struct Notes;

impl Notes {
    /// Writes a note.
    #[tool]
    async fn note(&self, text: String) -> String {
        text
    }
}

fn main() {}
