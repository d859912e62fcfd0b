//! `conformance-client`: the client the official conformance suite drives (client leg, 2026-07-28).
//!
//! The suite starts a mock server per scenario and runs `conformance-client <url>` with the
//! scenario's name in `MCP_CONFORMANCE_SCENARIO` and, for some scenarios, a JSON context in
//! `MCP_CONFORMANCE_CONTEXT`. Each scenario is a short script over `kelson_client::Client`; the suite's
//! mock checks what went over the wire. Everything here goes through the library's ordinary API:
//! a scenario that needs a special path through the client is a bug in the client, not here.
//!
//! Exit status: 0 when the script ran, 1 when a call failed (the message goes to stderr), 2 for a
//! usage error.
//!
//! The `auth/*` scenarios run `kelson_client::auth` against the suite's authorization server, which
//! approves every authorization request at once: [`FollowRedirects`] plays the browser.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use kelson_client::auth::{FollowRedirects, OAuth, PrivateKey};
use kelson_client::{Client, ClientBuilder, HandlerError};
use kelson_types::{ElicitRequestFormParams, ElicitResult, ElicitValue, Implementation};
use serde_json::{Value, json};

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let mut args = std::env::args().skip(1);
    let (Some(url), None) = (args.next(), args.next()) else {
        eprintln!("usage: conformance-client URL  (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) if !text.is_empty() => match serde_json::from_str::<Value>(&text) {
            Ok(value) => value,
            Err(e) => {
                eprintln!("conformance-client: MCP_CONFORMANCE_CONTEXT is not JSON: {e}");
                return ExitCode::from(2);
            }
        },
        _ => Value::Null,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("conformance-client: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&scenario, &url, &context)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-client: scenario {scenario:?}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn builder() -> ClientBuilder {
    Client::builder()
        .client_info(Implementation::new(
            "kelson-conformance-client",
            env!("CARGO_PKG_VERSION"),
        ))
        .timeout(Duration::from_secs(20))
}

async fn run(scenario: &str, url: &str, context: &Value) -> anyhow::Result<()> {
    match scenario {
        "tools_call" => tools_call(url).await,
        "initialize" => first_tool(url).await,
        "elicitation-sep1034-client-defaults" => elicitation_defaults(url).await,
        "sse-retry" => sse_retry(url).await,
        "request-metadata" => request_metadata(url).await,
        "sep-2322-client-request-state" => request_state(url).await,
        "http-standard-headers" => standard_headers(url).await,
        "http-custom-headers" => custom_headers(url, context).await,
        "http-invalid-tool-headers" => invalid_tool_headers(url).await,
        "json-schema-ref-no-deref" => ref_no_deref(url).await,
        "json-schema-2020-12-preservation" => schema_preservation(url).await,
        "auth/client-credentials-basic" | "auth/client-credentials-jwt" => {
            client_credentials(url, context).await
        }
        other if other.starts_with("auth/") => authorization_code(url, context).await,
        "" => bail!("MCP_CONFORMANCE_SCENARIO is not set"),
        other => bail!("unknown scenario {other:?}"),
    }
}

/// Connect (the handshake on a handshake-era server), list the tools, call the first with two
/// numbers.
async fn first_tool(url: &str) -> anyhow::Result<()> {
    let client = builder().connect_http(url).await?;
    let tools = client.list_all_tools().await?;
    if let Some(tool) = tools.first() {
        client
            .call_tool(&tool.name, json!({"a": 2, "b": 3}))
            .await?;
    }
    client.close().await?;
    Ok(())
}

/// The server asks for a form whose fields all have defaults; the user accepts it empty, and the
/// client fills in the defaults.
async fn elicitation_defaults(url: &str) -> anyhow::Result<()> {
    let client = builder()
        .on_elicit_form(|_p: ElicitRequestFormParams| async {
            Ok::<_, HandlerError>(ElicitResult::accept(Default::default()))
        })
        .connect_http(url)
        .await?;
    client
        .call_tool("test_client_elicitation_defaults", json!({}))
        .await?;
    client.close().await?;
    Ok(())
}

/// The server closes the call's response stream before the response: the client resumes it with
/// `Last-Event-ID` after the `retry` delay, and the response arrives there.
async fn sse_retry(url: &str) -> anyhow::Result<()> {
    let client = builder().connect_http(url).await?;
    let result = client.call_tool("test_reconnection", json!({})).await?;
    println!("{}", serde_json::to_string(&result)?);
    client.close().await?;
    Ok(())
}

/// The redirect URI the suite's clients register, and this client's metadata document URL (the
/// suite's authorization server accepts it without fetching it).
const REDIRECT_URI: &str = "http://localhost:3000/callback";
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The authorization code grant: connect (the server's 401 starts the flow), list the tools and
/// call `test-tool`. Pre-registered credentials come in the context when the scenario has them.
async fn authorization_code(url: &str, context: &Value) -> anyhow::Result<()> {
    let mut oauth = OAuth::authorization_code(FollowRedirects::new(REDIRECT_URI))
        .client_metadata_url(CLIENT_METADATA_URL)
        .client_name("kelson-conformance-client");
    if let Some(id) = context["client_id"].as_str() {
        oauth = oauth.client_id(id);
        if let Some(secret) = context["client_secret"].as_str() {
            oauth = oauth.client_secret(secret);
        }
    }
    let client = builder().oauth(oauth.build()?).connect_http(url).await?;
    let tools = client.list_all_tools().await?;
    if tools.iter().any(|t| t.name == "test-tool") {
        client.call_tool("test-tool", json!({})).await?;
    }
    client.close().await?;
    Ok(())
}

/// The client credentials grant with the context's secret or private key, then the tool list.
async fn client_credentials(url: &str, context: &Value) -> anyhow::Result<()> {
    let id = context["client_id"]
        .as_str()
        .context("the context has no client_id")?;
    let mut oauth = OAuth::client_credentials(id);
    if let Some(pem) = context["private_key_pem"].as_str() {
        let algorithm = context["signing_algorithm"].as_str().unwrap_or("ES256");
        oauth = oauth.private_key(PrivateKey::from_pem(pem.as_bytes(), algorithm)?);
    } else {
        let secret = context["client_secret"]
            .as_str()
            .context("the context has neither client_secret nor private_key_pem")?;
        oauth = oauth.client_secret(secret);
    }
    let client = builder().oauth(oauth.build()?).connect_http(url).await?;
    client.list_all_tools().await?;
    client.close().await?;
    Ok(())
}

/// List the tools, then call `add_numbers` with two numbers.
async fn tools_call(url: &str) -> anyhow::Result<()> {
    let client = builder().connect_http(url).await?;
    let tools = client.list_all_tools().await?;
    if !tools.iter().any(|t| t.name == "add_numbers") {
        bail!("the server does not list add_numbers");
    }
    let result = client
        .call_tool("add_numbers", json!({"a": 2, "b": 3}))
        .await?;
    println!("{}", serde_json::to_string(&result)?);
    client.close().await?;
    Ok(())
}

/// The first request is rejected with -32022; the client retries with a version the server lists,
/// and every later request carries `_meta` and the matching header.
async fn request_metadata(url: &str) -> anyhow::Result<()> {
    let client = builder()
        .on_elicit_form(|_p: ElicitRequestFormParams| async {
            Ok::<_, HandlerError>(ElicitResult::decline())
        })
        .connect_http(url)
        .await?;
    let discover = client.discover().await?;
    println!("{}", serde_json::to_string(&discover)?);
    let tools = client.list_all_tools().await?;
    println!("{} tools", tools.len());
    client.close().await?;
    Ok(())
}

/// MRTR from the client side: echo `requestState` byte for byte under a new id, omit it when the
/// server sent none, keep it off unrelated calls, and take a result without `resultType` as
/// complete.
async fn request_state(url: &str) -> anyhow::Result<()> {
    // The form handler calls an unrelated tool while the MRTR flow of another call is open, so the
    // mock sees a request in the middle of the flow that must carry none of its state.
    let unrelated: std::sync::Arc<tokio::sync::OnceCell<Client>> = Default::default();
    let slot = unrelated.clone();
    let client = builder()
        .on_elicit_form(move |params: ElicitRequestFormParams| {
            let slot = slot.clone();
            async move {
                if let Some(client) = slot.get() {
                    client
                        .call_tool("test_mrtr_unrelated", json!({}))
                        .await
                        .map_err(|e| -> HandlerError { Box::new(e) })?;
                }
                let mut content = std::collections::BTreeMap::new();
                for (name, _) in &params.requested_schema.properties {
                    content.insert(name.clone(), ElicitValue::Boolean(true));
                }
                Ok::<_, HandlerError>(ElicitResult::accept(content))
            }
        })
        .connect_http(url)
        .await?;
    let _ = unrelated.set(client.clone());
    client.list_all_tools().await?;
    for tool in [
        "test_mrtr_echo_state",
        "test_mrtr_no_state",
        "test_mrtr_no_result_type",
    ] {
        let result = client
            .call_tool(tool, json!({}))
            .await
            .with_context(|| format!("calling {tool}"))?;
        println!("{tool}: {}", serde_json::to_string(&result)?);
    }
    client.close().await?;
    Ok(())
}

/// Every method that carries standard headers: `Mcp-Method` everywhere, `Mcp-Name` on calls, reads
/// and prompts.
async fn standard_headers(url: &str) -> anyhow::Result<()> {
    let client = builder().connect_http(url).await?;
    let tools = client.list_all_tools().await?;
    for tool in &tools {
        client
            .call_tool(tool.name.clone(), json!({}))
            .await
            .with_context(|| format!("calling {}", tool.name))?;
    }
    let resources = client.list_all_resources().await?;
    let mut uris: Vec<String> = resources.into_iter().map(|r| r.uri).collect();
    if uris.is_empty() {
        uris.push("file:///path/to/file%20name.txt".into());
    }
    for uri in uris {
        client
            .read_resource(uri.clone())
            .await
            .with_context(|| format!("reading {uri}"))?;
    }
    let prompts = client.list_all_prompts().await?;
    for prompt in prompts {
        client
            .get_prompt(prompt.name.clone(), Default::default())
            .await
            .with_context(|| format!("getting prompt {}", prompt.name))?;
    }
    client.close().await?;
    Ok(())
}

/// The calls named in the context, verbatim: the client mirrors each `x-mcp-header` argument into
/// its `Mcp-Param-*` header.
async fn custom_headers(url: &str, context: &Value) -> anyhow::Result<()> {
    let calls = context
        .get("toolCalls")
        .and_then(Value::as_array)
        .context("MCP_CONFORMANCE_CONTEXT has no toolCalls")?;
    let client = builder().connect_http(url).await?;
    client.list_all_tools().await?;
    for call in calls {
        let name = call
            .get("name")
            .and_then(Value::as_str)
            .context("a toolCalls entry without a name")?;
        let arguments = call.get("arguments").cloned().unwrap_or(Value::Null);
        client
            .call_tool(name, arguments)
            .await
            .with_context(|| format!("calling {name}"))?;
    }
    client.close().await?;
    Ok(())
}

/// List the tools (the client drops those with invalid `x-mcp-header` declarations) and call every
/// one that is left.
async fn invalid_tool_headers(url: &str) -> anyhow::Result<()> {
    let client = builder().connect_http(url).await?;
    let tools = client.list_all_tools().await?;
    for tool in &tools {
        let arguments = sample_arguments(&tool.input_schema);
        client
            .call_tool(tool.name.clone(), arguments)
            .await
            .with_context(|| format!("calling {}", tool.name))?;
    }
    client.close().await?;
    Ok(())
}

/// List the tools: a `$ref` to a remote schema must stay a reference, never fetched.
async fn ref_no_deref(url: &str) -> anyhow::Result<()> {
    let client = builder().connect_http(url).await?;
    let tools = client.list_all_tools().await?;
    for tool in &tools {
        println!(
            "{}: {}",
            tool.name,
            Value::Object(tool.input_schema.clone())
        );
    }
    client.close().await?;
    Ok(())
}

/// List the tools and send `json_schema_2020_12_tool`'s input schema back through `json_schema_echo`
/// as it was received: no keyword may be lost in the client's own decoding.
async fn schema_preservation(url: &str) -> anyhow::Result<()> {
    let client = builder().connect_http(url).await?;
    let tools = client.list_all_tools().await?;
    let focal = tools
        .iter()
        .find(|t| t.name == "json_schema_2020_12_tool")
        .context("the server does not list json_schema_2020_12_tool")?;
    let schema = Value::Object(focal.input_schema.clone());
    client
        .call_tool("json_schema_echo", json!({ "schema": schema }))
        .await?;
    client.close().await?;
    Ok(())
}

/// Arguments that satisfy the simple schemas of the suite's mocks: a value of the declared type
/// for every required property.
fn sample_arguments(schema: &serde_json::Map<String, Value>) -> Value {
    let mut arguments = serde_json::Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let value = match kind {
            "integer" | "number" => json!(1),
            "boolean" => json!(true),
            "array" => json!([]),
            "object" => json!({}),
            _ => json!("us-west1"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
