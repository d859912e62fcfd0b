//! Notification parameters: progress, log messages, cancellation and resource updates.
//!
//! The list-changed notifications take [`NotificationParams`](crate::NotificationParams), and the
//! subscription acknowledgement lives with the subscriptions.

use kelson_jsonrpc::Id;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::LoggingLevel;
use crate::meta::{NotificationMeta, ProgressToken};
use crate::wire::{serialize_number, serialize_opt_number};

/// The parameters of `notifications/progress` (`ProgressNotificationParams`).
///
/// spec 2026-07-28 basic/patterns/progress: `progress` MUST increase with each notification, and
/// progress travels only on the response stream of the request that carried the token, never on a
/// listen stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; a whole number is written as a JSON integer.
    #[serde(serialize_with = "serialize_number")]
    pub progress: f64,
    /// The total, when known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_number"
    )]
    pub total: Option<f64>,
    /// A human-readable description of the current step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ProgressNotificationParams {
    /// Progress for a token.
    pub fn new(progress_token: ProgressToken, progress: f64) -> Self {
        ProgressNotificationParams {
            meta: None,
            progress_token,
            progress,
            total: None,
            message: None,
        }
    }

    /// Sets the total.
    #[must_use]
    pub fn with_total(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// Sets the message.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// The parameters of `notifications/message` (`LoggingMessageNotificationParams`, deprecated).
///
/// spec 2026-07-28 server/utilities/logging: sent only when the request's `_meta` set a log level,
/// only on that request's response stream, never on a listen stream, and never with secrets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The severity.
    pub level: LoggingLevel,
    /// The name of the logger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value.
    pub data: Value,
}

impl LoggingMessageNotificationParams {
    /// A log message.
    pub fn new(level: LoggingLevel, data: impl Into<Value>) -> Self {
        LoggingMessageNotificationParams {
            meta: None,
            level,
            logger: None,
            data: data.into(),
        }
    }

    /// Sets the logger name.
    #[must_use]
    pub fn with_logger(mut self, logger: impl Into<String>) -> Self {
        self.logger = Some(logger.into());
        self
    }
}

/// The parameters of `notifications/cancelled` (`CancelledNotificationParams`).
///
/// spec 2026-07-28 basic/patterns/cancellation: the client sends it on stdio only (on HTTP, closing
/// the stream is the cancellation); the server sends it only to end a listen stream. After a cancel the
/// server MUST NOT send anything more for that request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The id of the request to cancel.
    pub request_id: Id,
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl CancelledNotificationParams {
    /// A cancellation of the request with this id.
    pub fn new(request_id: Id) -> Self {
        CancelledNotificationParams {
            meta: None,
            request_id,
            reason: None,
        }
    }

    /// Sets the reason.
    #[must_use]
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }
}

/// The parameters of `notifications/resources/updated` (`ResourceUpdatedNotificationParams`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedNotificationParams {
    /// Notification metadata, with the subscription id on a listen stream.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The URI that changed, possibly a sub-resource of a subscribed URI.
    pub uri: String,
}

impl ResourceUpdatedNotificationParams {
    /// An update of a URI on the listen stream with this id.
    pub fn new(subscription_id: Id, uri: impl Into<String>) -> Self {
        ResourceUpdatedNotificationParams {
            meta: Some(NotificationMeta::subscription(subscription_id)),
            uri: uri.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_numbers_round_trip_exactly() {
        for wire in [
            json!({"progressToken": "t", "progress": 50, "total": 100}),
            json!({"progressToken": 3, "progress": 0.25, "total": 1.5, "message": "m"}),
        ] {
            let p: ProgressNotificationParams = serde_json::from_value(wire.clone()).unwrap();
            assert_eq!(serde_json::to_value(&p).unwrap(), wire);
        }
    }
}
