//! `subscriptions/listen`.

use kelson_types::{SubscriptionFilter, SubscriptionsListenRequestParams};

use crate::Server;
use crate::hub::ListenStream;
use crate::registry::Registry;
use crate::router::{Prepared, Reply, RequestIo, error_reply};

impl Server {
    pub(crate) async fn listen(
        &self,
        req: Prepared<'_>,
        registry: &Registry,
        mut io: RequestIo<'_>,
    ) -> Reply {
        let params: SubscriptionsListenRequestParams = match super::params(&req) {
            Ok(p) => p,
            Err(e) => return Reply::Message(error_reply(Some(&req.id), &e, false)),
        };
        // Updates of a resource tell when it changes, which is for callers who may read it: a
        // subscription to a scoped resource is refused as its read would be.
        for uri in params.notifications.resource_subscriptions.iter().flatten() {
            if let Some(found) = registry.find_resource(uri)
                && !found.scopes.allows(&io.principal)
            {
                let what = format!("the resource {uri}");
                return Reply::Message(crate::scopes::refusal(&req.id, &what, &found.scopes));
            }
        }
        // The tasks extension: following tasks needs the extension declared on this request, and
        // only the caller's own tasks are followed (others are left out of the acknowledgement,
        // as if they did not exist).
        let mut task_ids = None;
        if let Some(asked) = &params.notifications.task_ids {
            if !req
                .meta
                .client_capabilities
                .as_ref()
                .is_some_and(|c| c.supports_extension(kelson_types::TASKS_EXTENSION))
            {
                let e = crate::tasks::undeclared("following tasks");
                return Reply::Message(error_reply(Some(&req.id), &e, false));
            }
            let owner = io.principal.id();
            let mut own = Vec::new();
            for id in asked {
                if !own.contains(id)
                    && let Ok(Some(record)) = self.inner.tasks.store.get(id).await
                    && record.owner == owner
                {
                    own.push(id.clone());
                }
            }
            task_ids = (!own.is_empty()).then_some(own);
        }
        // spec 2026-07-28 subscriptions: acknowledge the subset this server honours; a type whose
        // capability is not advertised is omitted, and `false` means "not subscribed".
        let asked = params.notifications;
        let honoured = SubscriptionFilter {
            tools_list_changed: (asked.tools_list_changed == Some(true) && registry.has_tools())
                .then_some(true),
            prompts_list_changed: (asked.prompts_list_changed == Some(true)
                && registry.has_prompts())
            .then_some(true),
            resources_list_changed: (asked.resources_list_changed == Some(true)
                && registry.has_resources())
            .then_some(true),
            resource_subscriptions: asked
                .resource_subscriptions
                .filter(|_| registry.has_resources()),
            task_ids,
        };
        // The resources below a subscribed URI are checked at each update.
        let gate: Option<crate::hub::ReadGate> = (!io.principal.is_anonymous()
            && honoured.resource_subscriptions.is_some())
        .then(|| {
            let inner = self.inner.clone();
            let principal = io.principal.clone();
            Box::new(move |uri: &str| inner.registry.load().may_read(uri, &principal)) as _
        });
        let events = self.inner.hub.subscribe();
        let close = io.close.take().unwrap_or_else(|| self.shutdown_token());
        let watch = io
            .probe
            .as_deref_mut()
            .and_then(|probe| probe.hand_to_listen(&req.id, &close));
        Reply::Listen(ListenStream::new(
            req.id,
            honoured,
            events,
            close,
            self.inner.info.clone(),
            watch,
            gate,
            io.principal.id(),
        ))
    }
}
