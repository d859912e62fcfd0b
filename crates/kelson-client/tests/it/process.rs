//! A real child process: a legacy stdio server written in POSIX sh, stderr capture, and the
//! shutdown sequence (stdin closed, SIGTERM, SIGKILL).

use std::os::unix::process::ExitStatusExt as _;
use std::time::Duration;

use futures_util::StreamExt as _;
use kelson_client::{Client, Era, ListenEvent, Stderr};
use kelson_types::SubscriptionFilter;
use serde_json::json;
use tokio::process::Command;

use crate::harness::{text, within};

/// A 2025-06-18 server: it refuses `server/discover` like a legacy server does, shakes hands, and
/// answers `tools/call` only after the client answered the `ping` it sends first.
const LEGACY_SERVER: &str = r#"
echo "legacy server starting" >&2
call=""
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"server/discover"'*)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n' "$id";;
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true}},"serverInfo":{"name":"sh-legacy","version":"1"}}}\n' "$id";;
    *'"method":"tools/call"'*)
      call="$id"
      printf '{"jsonrpc":"2.0","id":"srv-1","method":"ping"}\n';;
    *'"method":"resources/subscribe"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id"
      printf '{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///watched/a"}}\n'
      printf '{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}\n'
      printf '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n';;
    *'"method":"resources/unsubscribe"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id"
      echo "unsubscribed" >&2;;
    *'"id":"srv-1"'*'"result":{}'*)
      echo "ping answered" >&2
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"from sh"}]}}\n' "$call";;
  esac
done
"#;

fn sh(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c").arg(script);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_child_process_is_spoken_to_in_its_revision() {
    let client = within(
        Client::builder()
            .stderr(Stderr::Capture)
            .connect_stdio(sh(LEGACY_SERVER)),
    )
    .await
    .unwrap();
    assert_eq!(
        client.era(),
        Era::Legacy {
            version: "2025-06-18"
        }
    );
    let result = within(client.call_tool("anything", json!({})))
        .await
        .unwrap();
    assert_eq!(text(&result), "from sh");
    let stderr = client.stderr().await.unwrap();
    assert!(stderr.contains("legacy server starting"), "{stderr}");
    assert!(stderr.contains("ping answered"), "{stderr}");

    // listen: the untagged notifications, filtered by what was asked and offered, after
    // resources/subscribe; dropping the stream unsubscribes.
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        prompts_list_changed: Some(true),
        resource_subscriptions: Some(vec!["file:///watched".into()]),
        ..SubscriptionFilter::default()
    };
    let mut sub = within(client.listen(filter)).await.unwrap();
    assert_eq!(sub.acknowledged().prompts_list_changed, None, "not offered");
    assert_eq!(
        within(sub.next()).await.unwrap().unwrap(),
        ListenEvent::ResourceUpdated {
            uri: "file:///watched/a".into()
        }
    );
    assert_eq!(
        within(sub.next()).await.unwrap().unwrap(),
        ListenEvent::ToolsListChanged
    );
    drop(sub);
    within(async {
        // The unsubscribe runs in the background; poll the captured stderr until it shows.
        while !client.stderr().await.unwrap().contains("unsubscribed") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // Closing stdin ends the read loop, and the shell exits by itself.
    let status = within(client.close()).await.unwrap().unwrap();
    assert!(status.success(), "{status:?}");
}

/// A modern server that keeps running after its input closes.
fn stubborn(trap: &str) -> String {
    format!(
        r#"
{trap}
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  printf '{{"jsonrpc":"2.0","id":%s,"result":{{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{{}},"ttlMs":0,"cacheScope":"public"}}}}\n' "$id"
done
while :; do sleep 0.05; done
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_escalates_from_eof_to_sigterm_to_sigkill() {
    let grace = Duration::from_millis(200);
    // Exits on SIGTERM.
    let client = within(
        Client::builder()
            .shutdown_grace(grace)
            .connect_stdio(sh(&stubborn(""))),
    )
    .await
    .unwrap();
    assert_eq!(client.era().version(), "2026-07-28");
    let status = within(client.close()).await.unwrap().unwrap();
    assert_eq!(status.signal(), Some(15), "{status:?}");

    // Ignores SIGTERM: killed.
    let client = within(
        Client::builder()
            .shutdown_grace(grace)
            .connect_stdio(sh(&stubborn("trap '' TERM"))),
    )
    .await
    .unwrap();
    let status = within(client.close()).await.unwrap().unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_a_spawn_error() {
    let err = Client::builder()
        .connect_stdio(Command::new("/nonexistent/mcp-server"))
        .await
        .unwrap_err();
    assert!(matches!(err, kelson_client::Error::Spawn { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "command not found: /nonexistent/mcp-server"
    );
    assert_eq!(err.kind(), kelson_client::ErrorKind::Transport);
}

/// Starts `script` with stderr captured and the given probe and request timeouts; the error.
async fn start_failure(script: &str, wait: Duration) -> kelson_client::Error {
    within(
        Client::builder()
            .stderr(Stderr::Capture)
            .probe_timeout(wait)
            .timeout(wait)
            .connect_stdio(sh(script)),
    )
    .await
    .unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_exits_is_reported_at_once_with_its_status_and_stderr() {
    let started = std::time::Instant::now();
    let err = start_failure(
        "echo 'loading config' >&2; echo 'config.toml: no such file' >&2; exit 3",
        Duration::from_secs(15),
    )
    .await;
    // Long before the probe's wait would have ended.
    assert!(started.elapsed() < Duration::from_secs(5), "{err}");
    let kelson_client::Error::ServerStart {
        command,
        problem,
        stderr_tail,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert!(command.starts_with("sh -c 'echo"), "{command}");
    assert!(
        matches!(problem, kelson_client::StartProblem::Exited(Some(s)) if s.code() == Some(3)),
        "{problem:?}"
    );
    assert_eq!(
        stderr_tail.as_deref(),
        Some("loading config\nconfig.toml: no such file")
    );
    assert!(
        err.to_string()
            .contains("exited with status 3 before answering"),
        "{err}"
    );
    assert_eq!(err.kind(), kelson_client::ErrorKind::Transport);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_prints_text_is_reported_with_what_it_printed() {
    let started = std::time::Instant::now();
    let err = start_failure(
        "echo 'Serving HTTP on 0.0.0.0 port 8000'; exec sleep 30",
        Duration::from_secs(15),
    )
    .await;
    // After a short grace, not after the probe's wait.
    assert!(started.elapsed() < Duration::from_secs(5), "{err}");
    let kelson_client::Error::ServerStart {
        problem, stdout, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*problem, kelson_client::StartProblem::NotJsonRpc);
    assert_eq!(stdout, &["Serving HTTP on 0.0.0.0 port 8000"]);
    assert!(
        err.to_string().ends_with(
            "printed text that is not JSON-RPC on its stdout: \"Serving HTTP on 0.0.0.0 port 8000\""
        ),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_child_is_reported_when_the_wait_ends() {
    let err = start_failure(
        "echo 'listening on http://127.0.0.1:8080' >&2; exec sleep 30",
        Duration::from_millis(400),
    )
    .await;
    let kelson_client::Error::ServerStart {
        problem,
        stdout,
        stderr_tail,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    // The probe's wait, then initialize's.
    assert_eq!(
        *problem,
        kelson_client::StartProblem::Silent(Duration::from_millis(800))
    );
    assert!(stdout.is_empty());
    assert_eq!(
        stderr_tail.as_deref(),
        Some("listening on http://127.0.0.1:8080")
    );
    assert!(
        err.to_string()
            .contains("said nothing on its stdout within 0.8s"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_or_chatty_servers_still_connect() {
    // Starts after a second of silence (a slow start is not a failure while the wait lasts) ...
    let slow = format!("sleep 1; {}", stubborn(""));
    let client = within(
        Client::builder()
            .probe_timeout(Duration::from_secs(10))
            .shutdown_grace(Duration::from_millis(100))
            .connect_stdio(sh(&slow)),
    )
    .await
    .unwrap();
    assert_eq!(client.era().version(), "2026-07-28");
    let _ = within(client.close()).await;
    // ... and prints a banner on stdout before answering properly.
    let chatty = format!("echo 'my server v1'; {}", stubborn(""));
    let client = within(
        Client::builder()
            .shutdown_grace(Duration::from_millis(100))
            .connect_stdio(sh(&chatty)),
    )
    .await
    .unwrap();
    assert_eq!(client.era().version(), "2026-07-28");
    let _ = within(client.close()).await;
}
