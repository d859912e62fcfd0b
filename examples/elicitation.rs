//! Asking the user mid-call (MRTR): `greet` needs a name, so it asks for one through elicitation.
//! The first call ends with `input_required`; the client shows the form, and the call comes back
//! with the answer, which `elicit` then returns. Nothing is held on the server in between.
//! `cargo run --example elicitation [-- --http ADDR]`.
use kelson::prelude::*;
use kelson::types::{ElicitAction, ElicitRequestFormParams, RequestedSchema, StringSchema};

/// Greets the user, asking their name first.
#[tool]
async fn greet(mut ctx: RequestContext) -> Result<String, HandlerError> {
    let form = RequestedSchema::new().required_property("name", StringSchema::new());
    let answer = ctx.elicit("name", ElicitRequestFormParams::new("Your name?", form))?;
    let name = answer.content.as_ref().and_then(|c| c.get("name"));
    Ok(match (answer.action, name) {
        (ElicitAction::Accept, Some(kelson::types::ElicitValue::String(name))) => {
            format!("Hello, {name}!")
        }
        _ => "Hello, whoever you are.".to_owned(),
    })
}

fn main() -> kelson::Result<()> {
    kelson::run(Server::builder("elicitation", "1.0.0").route(greet_tool()))
}
