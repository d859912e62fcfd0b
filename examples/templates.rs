//! Resources and a resource template: `notes://index` lists the notes, `notes://{id}` reads one,
//! its variable typed as a number; a note that does not exist is the spec's "not found".
//! `cargo run --example templates [-- --http ADDR]`.
use std::collections::BTreeMap;

use kelson::prelude::*;

struct Notes {
    by_id: BTreeMap<u32, String>,
}

/// The URI of every note, one per line.
#[resource("notes://index", mime_type = "text/plain")]
async fn index(notes: State<Notes>) -> String {
    let lines: Vec<String> = notes
        .by_id
        .keys()
        .map(|id| format!("notes://{id}"))
        .collect();
    lines.join("\n")
}

/// One note by its number.
#[resource("notes://{id}", name = "note", mime_type = "text/markdown")]
async fn note(id: u32, notes: State<Notes>) -> Option<String> {
    notes.by_id.get(&id).cloned()
}

fn main() -> kelson::Result<()> {
    let by_id = BTreeMap::from([
        (1, "# Groceries\n\nMilk, bread.".to_owned()),
        (2, "# Ideas\n\nA faster MCP server.".to_owned()),
    ]);
    let server = Server::builder("notes", "1.0.0").state(Notes { by_id });
    kelson::run(server.routes([index_resource(), note_resource()]))
}
