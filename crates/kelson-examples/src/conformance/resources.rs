//! The resources and the resource template.

use kelson_server::{Json, ServerBuilder, Uri};
use kelson_types::{BlobResourceContents, Resource, ResourceContents, ResourceTemplate};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::PNG_1X1;

pub(super) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .resource(
            Resource::new("test://static-text", "static-text")
                .with_title("Static Text Resource")
                .with_description("A static text resource for testing")
                .with_mime_type("text/plain"),
            static_text,
        )
        .resource(
            Resource::new("test://static-binary", "static-binary")
                .with_title("Static Binary Resource")
                .with_description("A static binary resource (image) for testing")
                .with_mime_type("image/png"),
            static_binary,
        )
        .resource(
            Resource::new("test://watched-resource", "watched-resource")
                .with_title("Watched Resource")
                .with_description("A resource listeners may subscribe to")
                .with_mime_type("text/plain"),
            watched,
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "template")
                .with_title("Resource Template")
                .with_description("A resource template with parameter substitution")
                .with_mime_type("application/json"),
            template,
        )
}

async fn static_text() -> &'static str {
    "This is the content of the static text resource."
}

/// The PNG is kept base64-encoded, as the wire carries it.
async fn static_binary(uri: Uri) -> ResourceContents {
    BlobResourceContents::new(uri.0, PNG_1X1)
        .with_mime_type("image/png")
        .into()
}

async fn watched() -> &'static str {
    "Watched resource content"
}

/// The template's variable.
#[derive(Deserialize, JsonSchema)]
struct TemplateId {
    id: String,
}

async fn template(TemplateId { id }: TemplateId) -> Json<serde_json::Value> {
    Json(json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}))
}
