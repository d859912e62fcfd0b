//! The resources and the resource template.

use mcp_server::{HandlerError, RequestContext, ServerBuilder, TemplateVars};
use mcp_types::{
    BlobResourceContents, Resource, ResourceContents, ResourceTemplate, TextResourceContents,
};
use serde_json::json;

use super::PNG_1X1;

type ReadResult = Result<Vec<ResourceContents>, HandlerError>;

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

async fn static_text(_ctx: RequestContext, uri: String, _vars: TemplateVars) -> ReadResult {
    Ok(vec![
        TextResourceContents::new(uri, "This is the content of the static text resource.")
            .with_mime_type("text/plain")
            .into(),
    ])
}

async fn static_binary(_ctx: RequestContext, uri: String, _vars: TemplateVars) -> ReadResult {
    Ok(vec![
        BlobResourceContents::new(uri, PNG_1X1)
            .with_mime_type("image/png")
            .into(),
    ])
}

async fn watched(_ctx: RequestContext, uri: String, _vars: TemplateVars) -> ReadResult {
    Ok(vec![
        TextResourceContents::new(uri, "Watched resource content")
            .with_mime_type("text/plain")
            .into(),
    ])
}

async fn template(_ctx: RequestContext, uri: String, vars: TemplateVars) -> ReadResult {
    let id = vars.get("id").map(String::as_str).unwrap_or_default();
    let body = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
    Ok(vec![
        TextResourceContents::new(uri, body.to_string())
            .with_mime_type("application/json")
            .into(),
    ])
}
