//! What the server offers, from its discover result (spec 2026-07-28 server/discover: the
//! capabilities say which features exist), so that a verb does not ask for a feature the server
//! does not have and then show the -32601 that follows, or listen for notifications that will
//! never come.

use kelson_client::Client;
use kelson_types::{ServerCapabilities, SubscriptionFilter};

use super::{CliError, ListenArgs};

/// A feature a list verb needs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Feature {
    Tools,
    Prompts,
    /// Resources and resource templates.
    Resources,
}

/// The server's capabilities: the discover result the connection saw, else a discover; `None`
/// when they cannot be had.
async fn capabilities(client: &Client) -> Option<ServerCapabilities> {
    if let Some(seen) = client.discovered() {
        return Some(seen.capabilities);
    }
    client.discover().await.ok().map(|d| d.capabilities)
}

/// Whether the server offers `feature`. True when its capabilities are unknown: then the request
/// is made, and its answer shown.
pub(crate) async fn offers(client: &Client, feature: Feature) -> bool {
    let Some(caps) = capabilities(client).await else {
        return true;
    };
    match feature {
        Feature::Tools => caps.tools.is_some(),
        Feature::Prompts => caps.prompts.is_some(),
        Feature::Resources => caps.resources.is_some(),
    }
}

/// What `listen` asks for, checked against what the server can send: without flags, every list
/// change it announces; with flags, exactly those, each of which it must announce. Asking for
/// something it cannot send is an error rather than a wait that never ends.
pub(crate) async fn listen_filter(
    client: &Client,
    args: &ListenArgs,
) -> Result<SubscriptionFilter, CliError> {
    let everything = !args.tools && !args.prompts && !args.resources && args.resource.is_empty();
    let caps = capabilities(client).await;
    // Unknown capabilities: ask, and let the acknowledgement say what is honoured.
    let (tools, prompts, resources, subscribe) = match &caps {
        None => (true, true, true, true),
        Some(c) => (
            c.tools.as_ref().and_then(|t| t.list_changed) == Some(true),
            c.prompts.as_ref().and_then(|p| p.list_changed) == Some(true),
            c.resources.as_ref().and_then(|r| r.list_changed) == Some(true),
            c.resources.as_ref().and_then(|r| r.subscribe) == Some(true),
        ),
    };
    let unsupported =
        |what: &'static str| CliError::Client(kelson_client::Error::Unsupported(what));
    if everything {
        if !(tools || prompts || resources) {
            return Err(unsupported(
                "list change notifications (its capabilities announce no listChanged)",
            ));
        }
        return Ok(SubscriptionFilter {
            tools_list_changed: tools.then_some(true),
            prompts_list_changed: prompts.then_some(true),
            resources_list_changed: resources.then_some(true),
            resource_subscriptions: None,
            task_ids: None,
        });
    }
    if args.tools && !tools {
        return Err(unsupported(
            "tool list changes (its capabilities lack tools.listChanged)",
        ));
    }
    if args.prompts && !prompts {
        return Err(unsupported(
            "prompt list changes (its capabilities lack prompts.listChanged)",
        ));
    }
    if args.resources && !resources {
        return Err(unsupported(
            "resource list changes (its capabilities lack resources.listChanged)",
        ));
    }
    if !args.resource.is_empty() && !subscribe {
        return Err(unsupported(
            "resource updates (its capabilities lack resources.subscribe)",
        ));
    }
    Ok(SubscriptionFilter {
        tools_list_changed: args.tools.then_some(true),
        prompts_list_changed: args.prompts.then_some(true),
        resources_list_changed: args.resources.then_some(true),
        resource_subscriptions: (!args.resource.is_empty()).then(|| args.resource.clone()),
        task_ids: None,
    })
}
