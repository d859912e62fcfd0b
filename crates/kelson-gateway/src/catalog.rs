//! The tools the gateway serves, kept in step with its upstreams.
//!
//! Each upstream has a supervisor task: it connects (restarting a program that exited, with
//! backoff), lists the upstream's tools, and registers what the policy and the pins let through
//! under their exposed names, replacing that upstream's previous set in one change of the
//! server's registry, so listeners hear of it once and never see half a list. It lists again when
//! the upstream says its list changed (a listen stream, in either era), every refresh interval,
//! and after a reconnection; a list that did not change changes nothing, and announces nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use kelson_client::ListenEvent;
use kelson_server::{Server, ToolDef, ToolHandler};
use kelson_types::{SubscriptionFilter, Tool};

use crate::Shared;
use crate::forward::{Forward, Mode};
use crate::pins::{self, Verdict};
use crate::upstream::State;

/// The longest tool name the spec allows (spec 2026-07-28 server/tools).
const MAX_NAME: usize = 128;

/// The first wait before reconnecting, doubled on each failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// One exposed tool as registered: its upstream, the definition served, and how it is served.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Exposed {
    pub upstream: usize,
    pub served: serde_json::Value,
    pub mode: Mode,
}

/// Runs one upstream until `stop` fires: connect, register its tools, follow its changes.
pub(crate) async fn supervise(
    shared: Arc<Shared>,
    server: Server,
    index: usize,
    stop: tokio_util::sync::CancellationToken,
    first: tokio::sync::oneshot::Sender<()>,
) {
    let upstream = shared.upstreams[index].clone();
    let mut first = Some(first);
    let mut backoff = FIRST_BACKOFF;
    loop {
        let connected = tokio::select! {
            c = upstream.connect() => c,
            () = stop.cancelled() => break,
        };
        let mut connection = match connected {
            Ok(c) => c,
            Err(reason) => {
                tracing::warn!(
                    "upstream {}: cannot connect to {}: {reason}; retrying in {:.1} s",
                    upstream.name(),
                    upstream.config.location(),
                    backoff.as_secs_f64()
                );
                upstream.set_state(State::Down { reason });
                if let Some(first) = first.take() {
                    let _ = first.send(());
                }
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = stop.cancelled() => break,
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        let client = connection.client.clone();
        let version = client.era().version().to_owned();
        tracing::info!(
            "upstream {}: connected to {} ({version})",
            upstream.name(),
            upstream.config.location()
        );
        upstream.set_client(Some(client.clone()));
        upstream.set_state(State::Ready { version });
        refresh(&shared, &server, index, &client).await;
        if let Some(first) = first.take() {
            let _ = first.send(());
        }
        backoff = FIRST_BACKOFF;

        // Changes to the upstream's list, in either era; without a stream, the interval alone.
        let mut changes = match client
            .listen(SubscriptionFilter {
                tools_list_changed: Some(true),
                ..SubscriptionFilter::default()
            })
            .await
        {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::debug!(
                    "upstream {}: no listen stream ({e}); its list is read every {} s",
                    upstream.name(),
                    shared.refresh.as_secs()
                );
                None
            }
        };
        let mut tick = tokio::time::interval(shared.refresh);
        tick.tick().await;
        let reason = loop {
            tokio::select! {
                () = stop.cancelled() => break None,
                () = upstream.broken.notified() => break Some("a call could not reach it".to_owned()),
                status = wait_child(&mut connection.child) => break Some(format!("the program exited ({status})")),
                event = next_change(&mut changes) => match event {
                    Some(ListenEvent::ToolsListChanged) => refresh(&shared, &server, index, &client).await,
                    Some(_) => {}
                    None => {
                        // The stream ended: a stdio upstream that exited ends it first; otherwise
                        // the interval goes on alone.
                        changes = None;
                    }
                },
                _ = tick.tick() => refresh(&shared, &server, index, &client).await,
            }
        };
        upstream.set_client(None);
        let _ = client.close().await;
        drop(connection);
        match reason {
            None => break,
            Some(reason) => {
                tracing::warn!("upstream {}: lost: {reason}; reconnecting", upstream.name());
                upstream.set_state(State::Down { reason });
            }
        }
    }
    upstream.set_client(None);
}

async fn wait_child(child: &mut Option<tokio::process::Child>) -> String {
    match child {
        Some(c) => match c.wait().await {
            Ok(status) => status.to_string(),
            Err(e) => e.to_string(),
        },
        None => std::future::pending().await,
    }
}

async fn next_change(changes: &mut Option<kelson_client::Subscription>) -> Option<ListenEvent> {
    match changes {
        Some(s) => match s.next().await {
            Some(Ok(event)) => Some(event),
            _ => None,
        },
        None => std::future::pending().await,
    }
}

/// How often the pin file is looked at for an acceptance made by `kelson gateway pin --accept`.
const PINS_POLL: Duration = Duration::from_secs(2);

/// Follows the pin file until `stop` fires: when it changes on disk (an acceptance, or another
/// instance's first sight), every upstream is judged again.
pub(crate) async fn watch_pins(
    shared: Arc<Shared>,
    server: Server,
    stop: tokio_util::sync::CancellationToken,
) {
    let mut last = pins::modified(shared.pins.path());
    loop {
        tokio::select! {
            () = tokio::time::sleep(PINS_POLL) => {}
            () = stop.cancelled() => return,
        }
        let now = pins::modified(shared.pins.path());
        if now != last {
            last = now;
            refresh_all(&shared, &server).await;
        }
    }
}

/// Lists every connected upstream again (after the pins changed).
pub(crate) async fn refresh_all(shared: &Arc<Shared>, server: &Server) {
    for (index, upstream) in shared.upstreams.iter().enumerate() {
        if let Some(client) = upstream.client() {
            refresh(shared, server, index, &client).await;
        }
    }
}

/// Lists one upstream's tools and registers what changed.
pub(crate) async fn refresh(
    shared: &Arc<Shared>,
    server: &Server,
    index: usize,
    client: &kelson_client::Client,
) {
    let upstream = &shared.upstreams[index];
    let tools = match client.list_all_tools().fresh().await {
        Ok(tools) => tools,
        Err(e) => {
            tracing::warn!(
                "upstream {}: listing its tools failed: {e}",
                upstream.name()
            );
            if e.kind() == kelson_client::ErrorKind::Transport {
                upstream.broken.notify_one();
            }
            return;
        }
    };
    apply(shared, server, index, tools);
}

/// Registers `tools` of upstream `index` as the policy and the pins allow, in one change.
pub(crate) fn apply(shared: &Arc<Shared>, server: &Server, index: usize, tools: Vec<Tool>) {
    let upstream = &shared.upstreams[index];
    let prefix = upstream.config.prefix();
    let mut offered = Vec::new();
    for tool in tools {
        let exposed = format!("{prefix}{}", tool.name);
        if exposed.len() > MAX_NAME {
            tracing::warn!(
                "upstream {}: tool {:?} is left out: {exposed:?} is longer than {MAX_NAME} characters",
                upstream.name(),
                tool.name
            );
            continue;
        }
        if let Err(why) = shared.policy.exposes(&exposed, &tool) {
            tracing::debug!("tool {exposed} is not exposed: {why:?}");
            continue;
        }
        offered.push((exposed, tool));
    }
    let verdicts = match shared.pins.judge(
        upstream.name(),
        &offered.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>(),
    ) {
        Ok(v) => v,
        Err(e) => {
            // Without the pins nothing can be judged: the upstream's set stays as it was.
            tracing::error!("upstream {}: {e}", upstream.name());
            return;
        }
    };
    let mut next: BTreeMap<String, (Tool, Exposed)> = BTreeMap::new();
    for ((exposed, tool), verdict) in offered.into_iter().zip(verdicts) {
        let upstream_name = tool.name.clone();
        let (mut served, mode) = match verdict {
            Verdict::New | Verdict::Same => (tool, Mode::Forward),
            Verdict::Changed(pin) => {
                tracing::warn!(
                    "upstream {}: the definition of {upstream_name:?} changed since it was pinned \
                     ({}); serving the pinned one and refusing its calls until \
                     `kelson gateway pin --accept {exposed}`",
                    upstream.name(),
                    pins::diff(&pin.definition, &pins::canonical(&tool)).join("; ")
                );
                match pin.tool() {
                    Some(t) => (t, Mode::PinRefused),
                    None => continue,
                }
            }
        };
        served.name = exposed.clone();
        let entry = Exposed {
            upstream: index,
            served: serde_json::to_value(&served).unwrap_or_default(),
            mode,
        };
        next.insert(exposed, (served, entry));
    }

    let mut catalog = shared.catalog.lock().expect("catalog lock");
    // A name another upstream has is left to it: never two tools under one name.
    next.retain(|name, _| match catalog.get(name) {
        Some(other) if other.upstream != index => {
            tracing::error!(
                "upstream {}: tool {name:?} is left out: upstream {} exposes a tool of that name; \
                 give one of them another prefix",
                upstream.name(),
                shared.upstreams[other.upstream].name()
            );
            false
        }
        _ => true,
    });
    let mut remove = Vec::new();
    for (name, entry) in catalog.iter() {
        if entry.upstream == index && next.get(name).is_none_or(|(_, e)| e != entry) {
            remove.push(name.clone());
        }
    }
    let mut add: Vec<(ToolDef, Arc<dyn ToolHandler>)> = Vec::new();
    for (name, (tool, entry)) in &next {
        if catalog.get(name) == Some(entry) {
            continue;
        }
        let handler = Forward {
            shared: shared.clone(),
            upstream: upstream.clone(),
            tool: strip_prefix(name, &prefix).to_owned(),
            exposed: name.clone(),
            mode: entry.mode,
        };
        add.push((ToolDef::from(tool.clone()), Arc::new(handler)));
    }
    if remove.is_empty() && add.is_empty() {
        return;
    }
    for name in &remove {
        catalog.remove(name);
    }
    let refused = server.change_tools(&remove, add);
    for (name, (_, entry)) in next {
        if refused.iter().any(|(n, _)| *n == name) {
            continue;
        }
        catalog.insert(name, entry);
    }
    for (name, error) in refused {
        tracing::error!(
            "upstream {}: tool {name:?} is left out: {error}",
            upstream.name()
        );
    }
}

fn strip_prefix<'a>(name: &'a str, prefix: &str) -> &'a str {
    name.strip_prefix(prefix).unwrap_or(name)
}
