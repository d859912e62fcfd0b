//! What the user can do about an error: a hint added to the message when the error has a usual
//! cause (nothing listening, a wrong endpoint path, the Host check of `mcp serve`).

use http::StatusCode;
use mcp_client::HttpError;

use super::{CliError, Common};

/// `error` with a hint, when one applies to it and to how the server was reached.
pub(crate) fn explain(error: CliError, common: &Common) -> CliError {
    let CliError::Client(client_error) = &error else {
        return error;
    };
    match hint(client_error, common) {
        Some(hint) => CliError::Explained {
            error: Box::new(error),
            hint,
        },
        None => error,
    }
}

fn hint(error: &mcp_client::Error, common: &Common) -> Option<String> {
    let mcp_client::Error::Http(http) = error else {
        return None;
    };
    let url = common
        .url
        .as_deref()
        .and_then(|u| http::Uri::try_from(u).ok());
    match http {
        HttpError::Connect { reason, .. } if reason == "connection refused" => {
            Some("is the server running?".to_owned())
        }
        HttpError::Connect { reason, .. } if reason.starts_with("cannot resolve") => {
            Some("is the host name right?".to_owned())
        }
        HttpError::Status { status, .. } if *status == StatusCode::NOT_FOUND => {
            let path = url.as_ref().map_or("/", http::Uri::path);
            Some(if path == "/mcp" {
                "is this the server's MCP endpoint?".to_owned()
            } else {
                format!("nothing is served at {path}; is the path /mcp? (mcp serve's default)")
            })
        }
        HttpError::Status { status, body }
            if matches!(
                *status,
                StatusCode::FORBIDDEN | StatusCode::MISDIRECTED_REQUEST
            ) && body.contains("Host") =>
        {
            // The name the server saw: a Host header given with -H, else the URL's.
            let host = common
                .headers
                .iter()
                .filter_map(|h| h.split_once(':'))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
                .map(|(_, value)| value.trim().to_owned())
                .or_else(|| url.as_ref().and_then(|u| u.host()).map(str::to_owned))
                .unwrap_or_else(|| "NAME".to_owned());
            let host = host
                .rsplit_once(':')
                .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
                .map_or(host.as_str(), |(name, _)| name)
                .to_owned();
            Some(format!(
                "the server refused the host name {host:?} (a guard against DNS rebinding); \
                 if it is mcp serve, start it with --allowed-host {host}"
            ))
        }
        _ => None,
    }
}
