//! Connecting to the server named by `--stdio` or `--url`, with the terminal's input handlers.

use std::io::IsTerminal as _;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use kelson_client::{Client, HandlerError, Stderr};
use kelson_types::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult, Implementation,
    ListRootsResult, Root,
};

use super::output::Style;
use super::progress::Progress;
use super::prompt::{self, Asker};
use super::{CliError, Common, EraArg, roots, words};

/// The longest a request may run, whatever progress says, unless `--timeout` is longer.
const HARD_MAX: Duration = Duration::from_secs(600);
/// The longest the era probe waits (a silent stdio server is taken for a legacy one).
const PROBE_MAX: Duration = Duration::from_secs(10);

/// The style of prompts and notes on stderr.
pub(crate) fn stderr_style() -> Style {
    Style::for_stream(std::io::stderr().is_terminal())
}

/// Parses `NAME:VALUE` into a header.
fn header(text: &str) -> Result<(HeaderName, HeaderValue), CliError> {
    let Some((name, value)) = text.split_once(':') else {
        return Err(CliError::usage(format!(
            "--header {text:?}: expected NAME:VALUE"
        )));
    };
    let name = HeaderName::try_from(name.trim())
        .map_err(|e| CliError::usage(format!("--header {text:?}: bad name: {e}")))?;
    let value = HeaderValue::try_from(value.trim())
        .map_err(|e| CliError::usage(format!("--header {text:?}: bad value: {e}")))?;
    Ok((name, value))
}

/// Connects as `common` says. Elicitations are asked in the terminal (or declined with
/// `--no-input`); `--root` answers roots requests; progress hides while a prompt asks.
pub(crate) async fn connect(common: &Common, progress: &Progress) -> Result<Client, CliError> {
    if common.timeout.is_zero() {
        return Err(CliError::usage("--timeout must be more than zero"));
    }
    let timeout = common.timeout;
    let mut builder = Client::builder()
        .client_info(
            Implementation::new("kelson-cli", env!("CARGO_PKG_VERSION")).with_title("kelson"),
        )
        .timeout(timeout)
        .max_request_time(HARD_MAX.max(timeout))
        .probe_timeout(PROBE_MAX.min(timeout))
        .era(common.era.into());

    if common.no_input {
        builder = builder
            .on_elicit_form(|p: ElicitRequestFormParams| async move {
                prompt::note_declined(&stderr_style(), &p.message, None);
                Ok::<_, HandlerError>(ElicitResult::decline())
            })
            .on_elicit_url(|p: ElicitRequestURLParams| async move {
                prompt::note_declined(&stderr_style(), &p.message, Some(&p.url));
                Ok::<_, HandlerError>(ElicitResult::decline())
            });
    } else {
        let form_progress = progress.clone();
        let url_progress = progress.clone();
        builder = builder
            .on_elicit_form(move |p: ElicitRequestFormParams| {
                let progress = form_progress.clone();
                async move {
                    ask(move || {
                        progress.suspend(|| {
                            let style = stderr_style();
                            let stdin = std::io::stdin();
                            Asker::new(stdin.lock(), std::io::stderr(), &style)
                                .echo(!stdin.is_terminal())
                                .form(&p)
                        })
                    })
                    .await
                }
            })
            .on_elicit_url(move |p: ElicitRequestURLParams| {
                let progress = url_progress.clone();
                async move {
                    ask(move || {
                        progress.suspend(|| {
                            let style = stderr_style();
                            let stdin = std::io::stdin();
                            Asker::new(stdin.lock(), std::io::stderr(), &style)
                                .echo(!stdin.is_terminal())
                                .url(&p)
                        })
                    })
                    .await
                }
            });
    }
    if !common.roots.is_empty() {
        let roots: Vec<Root> = common
            .roots
            .iter()
            .map(|r| roots::root(r))
            .collect::<Result<_, _>>()?;
        builder = builder.on_roots(move |()| {
            let roots = roots.clone();
            async move { Ok::<_, HandlerError>(ListRootsResult { roots }) }
        });
    }

    if let Some(line) = &common.stdio {
        let words = words::split(line).map_err(|e| CliError::usage(format!("--stdio: {e}")))?;
        let mut command = tokio::process::Command::new(&words[0]);
        command.args(&words[1..]);
        // Kept, so that it does not cut through the output; shown when the server fails.
        let stderr = if common.server_stderr {
            Stderr::Inherit
        } else {
            Stderr::Capture
        };
        let connecting = builder.stderr(stderr).connect_stdio(command);
        if common.era != EraArg::Auto {
            // No fallback to wait for: a forced era has one wait, the probe's or initialize's.
            return Ok(connecting.await?);
        }
        tokio::pin!(connecting);
        // A server silent through the era probe gets the legacy handshake and the whole
        // --timeout; say so rather than wait without a word (its stderr is kept meanwhile).
        let probe = PROBE_MAX.min(timeout);
        tokio::select! {
            connected = &mut connecting => return Ok(connected?),
            () = tokio::time::sleep(probe) => {
                let note = stderr_style().dim(&format!(
                    "note: the server has not answered for {}; waiting up to {} more (--timeout)",
                    seconds(probe),
                    seconds(timeout)
                ));
                progress.suspend(|| eprintln!("{note}"));
            }
        }
        return Ok(connecting.await?);
    }
    let url = common
        .url
        .as_deref()
        .ok_or_else(|| CliError::usage("give --stdio COMMAND or --url URL"))?;
    let mut authorization = false;
    for text in &common.headers {
        let (name, value) = header(text)?;
        authorization |= name == http::header::AUTHORIZATION;
        builder = builder.header(name, value);
    }
    // The token kept by `kelson auth login`, renewed as needed; a server that asks for one runs the
    // flow. A token given with -H is used as it is instead.
    if !authorization {
        builder = builder.oauth(super::auth::for_verb(
            url,
            common.ca_cert.as_deref(),
            common.no_input,
        )?);
    }
    let http = match &common.ca_cert {
        Some(ca_file) => kelson_http::client::HttpClient::with_ca_file(url, ca_file),
        None => kelson_http::client::HttpClient::new(url),
    }
    .map_err(kelson_client::Error::from)?;
    Ok(builder.connect_http_client(http).await?)
}

/// The error a legacy (2025-11-25) server answers when a request needs the user to open a URL
/// first (`URLElicitationRequiredError`, retired in 2026-07-28 for the in-band request).
pub(crate) const URL_ELICITATION_REQUIRED: i64 = -32042;

/// Asks consent for each URL of a -32042 error, with the prompt of in-band URL elicitations (or
/// declines them under `--no-input`), and says what happens next. An error whose data names no
/// URL is returned as it is.
pub(crate) async fn url_required(
    error: kelson_client::Error,
    common: &Common,
    progress: &Progress,
) -> CliError {
    let urls: Vec<ElicitRequestURLParams> = error
        .error_object()
        .and_then(|e| e.data.as_ref())
        .and_then(|d| d.get("elicitations"))
        .and_then(|e| e.as_array())
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let message = item.get("message")?.as_str()?;
                    let url = item.get("url")?.as_str()?;
                    Some(ElicitRequestURLParams::new(message, url))
                })
                .collect()
        })
        .unwrap_or_default();
    let Some(method) = (match &error {
        kelson_client::Error::Protocol { method, .. } if !urls.is_empty() => Some(method.clone()),
        _ => None,
    }) else {
        return CliError::Client(error);
    };
    let mut accepted = true;
    for params in urls {
        let answer = if common.no_input {
            prompt::note_declined(&stderr_style(), &params.message, Some(&params.url));
            ElicitResult::decline()
        } else {
            let progress = progress.clone();
            ask(move || {
                progress.suspend(|| {
                    let style = stderr_style();
                    let stdin = std::io::stdin();
                    Asker::new(stdin.lock(), std::io::stderr(), &style)
                        .echo(!stdin.is_terminal())
                        .url(&params)
                })
            })
            .await
            .unwrap_or_else(|_| ElicitResult::cancel())
        };
        accepted &= answer.action == ElicitAction::Accept;
    }
    CliError::Protocol(if accepted {
        format!(
            "{method}: the server needs the URL above opened first; run the command again once \
             you are done there"
        )
    } else {
        format!("{method}: the server needs the URL above opened first, which was declined")
    })
}

/// `10s`, `1.5s`, `500ms`: a wait as the duration flags take it.
fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// Runs a blocking prompt off the async threads.
async fn ask(
    f: impl FnOnce() -> ElicitResult + Send + 'static,
) -> Result<ElicitResult, HandlerError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| -> HandlerError { format!("the prompt failed: {e}").into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse() {
        let (name, value) = header("Authorization: Bearer a:b").unwrap();
        assert_eq!(name, "authorization");
        assert_eq!(value, "Bearer a:b");
        assert!(header("nocolon").is_err());
        assert!(header("bad name: x").is_err());
        assert!(header("X: a\nb").is_err());
    }
}
