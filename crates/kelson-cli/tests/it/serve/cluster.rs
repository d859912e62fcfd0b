//! Three `kelson serve` instances on one PostgreSQL database behind a real haproxy (Debian's package;
//! `.ci/run` installs it), sharing a state key, an approval ledger and a NATS broker:
//!
//! - `kelson bench` through the balancer answers every call;
//! - haproxy routes calls for one database to an instance group of its own by the
//!   `Mcp-Param-Database` header alone (the `database` argument's `x-mcp-header`), and an instance
//!   refuses a header that disagrees with the body;
//! - handshake-era sessions stay on their instance (haproxy sticks them by `Mcp-Session-Id`);
//! - an MRTR write approval asked by one instance is completed on another, once;
//! - a listen stream on a third instance hears of the write, and that instance lists the new table;
//! - an instance killed with SIGKILL mid-load costs at most the calls in flight on it, haproxy marks
//!   it down through `/readyz`, the load goes on, and the instance rejoins when restarted;
//! - a list cursor from one instance gives the next page on another.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{
    Pg, Serve, TempDir, admin_role, http, meta, pg_url, rpc_headers, rpc_message,
};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// haproxy with `config`, stopped when dropped.
struct Haproxy(Child);

impl Haproxy {
    fn start(dir: &Path, config: &str) -> Haproxy {
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config).unwrap();
        let check = Command::new("haproxy")
            .arg("-c")
            .arg("-f")
            .arg(&file)
            .output()
            .expect("haproxy runs (Debian's haproxy package; .ci/run installs it)");
        assert!(
            check.status.success(),
            "haproxy refuses the configuration:\n{}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy starts");
        Haproxy(child)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// haproxy's stats page as CSV (the page comes chunked even to an HTTP/1.0 request).
fn stats_csv(stats_url: &str) -> String {
    let reply = http(stats_url, "GET", &[], "");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let chunked = reply
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
    if !chunked {
        return reply.body;
    }
    let mut body = reply.body.as_str();
    let mut csv = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        csv.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    csv
}

/// The state of each server of each backend, from haproxy's stats page:
/// `(backend, server) -> (status, total sessions)`.
fn haproxy_servers(stats_url: &str) -> Vec<(String, String, String, u64)> {
    stats_csv(stats_url)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 18 || f[1] == "FRONTEND" || f[1] == "BACKEND" {
                return None;
            }
            Some((
                f[0].to_owned(),
                f[1].to_owned(),
                f[17].to_owned(),
                f[7].parse().unwrap_or(0),
            ))
        })
        .collect()
}

fn status_of(stats_url: &str, backend: &str, server: &str) -> (String, u64) {
    haproxy_servers(stats_url)
        .into_iter()
        .find(|(b, s, _, _)| b == backend && s == server)
        .map(|(_, _, status, total)| (status, total))
        .unwrap_or_else(|| panic!("no server {backend}/{server} in the stats"))
}

/// A counter of one server from haproxy's stats page, by its column name (`eresp`, `hrsp_5xx`).
fn counter_of(stats_url: &str, backend: &str, server: &str, column: &str) -> u64 {
    let csv = stats_csv(stats_url);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines
        .next()
        .expect("a header line")
        .trim_start_matches("# ")
        .split(',')
        .collect();
    let at = header
        .iter()
        .position(|c| *c == column)
        .unwrap_or_else(|| panic!("no column {column} in {header:?}"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f.len() > at && f[0] == backend && f[1] == server)
        .map(|f| f[at].parse().unwrap_or(0))
        .unwrap_or_else(|| panic!("no server {backend}/{server} in the stats"))
}

fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `tools/call` of `tool` on `database` with `arguments` (and `extra` params), with the
/// `Mcp-Param-Database` header the `database` argument mirrors (or `header` instead).
fn call(url: &str, tool: &str, arguments: Value, extra: Value, header: Option<&str>) -> Value {
    let database = arguments["database"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut params = json!({"name": tool, "arguments": arguments, "_meta": meta(true)});
    for (k, v) in extra.as_object().expect("an object") {
        params[k] = v.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let mut headers = rpc_headers("tools/call", Some(tool));
    let value = header.unwrap_or(&database).to_owned();
    headers.push(("Mcp-Param-Database", &value));
    let reply = http(url, "POST", &headers, &body.to_string());
    rpc_message(&reply)
}

/// A `subscriptions/listen` stream read line by line.
struct Listen(BufReader<TcpStream>);

impl Listen {
    fn open(url: &str, notifications: Value) -> Listen {
        let rest = url.strip_prefix("http://").unwrap();
        let (authority, path) = rest.split_at(rest.find('/').unwrap());
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
            "notifications": notifications,
            "_meta": meta(false),
        }})
        .to_string();
        let mut stream = TcpStream::connect(authority).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in rpc_headers("subscriptions/listen", None) {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut listen = Listen(BufReader::new(stream));
        let ack = listen.next();
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        listen
    }

    /// The next JSON-RPC message within `wait`, if one comes.
    fn next_within(&mut self, wait: Duration) -> Option<Value> {
        self.0.get_ref().set_read_timeout(Some(wait)).unwrap();
        let mut line = String::new();
        let message = loop {
            line.clear();
            match self.0.read_line(&mut line) {
                Ok(0) => panic!("the listen stream ended"),
                Ok(_) => {
                    if let Some(data) = line.trim_end().strip_prefix("data:")
                        && let Ok(message) = serde_json::from_str::<Value>(data.trim())
                    {
                        break Some(message);
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break None;
                }
                Err(e) => panic!("reading the listen stream: {e}"),
            }
        };
        self.0
            .get_ref()
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        message
    }

    /// The next JSON-RPC message on the stream.
    fn next(&mut self) -> Value {
        loop {
            let mut line = String::new();
            let n = self.0.read_line(&mut line).expect("the stream stays open");
            assert!(n > 0, "the listen stream ended");
            // Chunked framing and SSE fields other than data are skipped.
            if let Some(data) = line.trim_end().strip_prefix("data:")
                && let Ok(message) = serde_json::from_str::<Value>(data.trim())
            {
                return message;
            }
        }
    }
}

fn instance(port: u16, data: &Path, common: &[String]) -> Serve {
    let bind = format!("127.0.0.1:{port}");
    let mut args: Vec<&str> = vec!["--http", &bind];
    args.extend(common.iter().map(String::as_str));
    Serve::start_without_bind(data, &args)
}

fn bench(url: &str, connections: usize, seconds: u64, max_errors: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_kelson"))
        .args([
            "bench", "--url", url, "--era", "modern", "--json", "--warmup", "200ms",
        ])
        .args(["-c", &connections.to_string(), "-d", &format!("{seconds}s")])
        .args(["--call", "query", "--args"])
        .arg(r#"{"database": "acme", "sql": "SELECT name FROM pets WHERE id = 1"}"#)
        .args(["--max-errors", max_errors])
        .output()
        .expect("kelson bench runs");
    let mut report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: kelson bench printed {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    // Failed calls, whatever their kind.
    let failed = report["requests"].as_u64().unwrap() - report["ok"].as_u64().unwrap();
    report["failed"] = failed.into();
    report
}

#[test]
fn three_instances_behind_haproxy_share_state_and_notifications_and_survive_a_kill() {
    if !kelson_testenv::postgres() || !kelson_testenv::nats() || !kelson_testenv::program("haproxy")
    {
        return;
    }
    let pg = Pg::new(
        "CREATE TABLE pets (id int PRIMARY KEY, name text NOT NULL);
         INSERT INTO pets VALUES (1, 'Rex'), (2, 'Tom');",
    );
    let scratch = TempDir::new();
    let key = scratch.join("state.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let channel = format!("mcp.cluster.{}", std::process::id());
    // One folder every instance serves, as on a shared volume.
    let root = scratch.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "first").unwrap();
    let root = root.canonicalize().unwrap();
    let db = pg_url(&pg.writer);
    let common: Vec<String> = [
        "--db",
        &format!("acme={db}"),
        "--db",
        &format!("globex={db}"),
        "--allow-write",
        "--state-key-file",
        key.to_str().unwrap(),
        "--approval-ledger",
        &pg_url(&admin_role()),
        "--broker",
        "nats://127.0.0.1:4222",
        "--broker-channel",
        &channel,
        "--shutdown-grace",
        "1s",
        "--root",
        root.to_str().unwrap(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let ports = [free_port(), free_port(), free_port()];
    let data: Vec<_> = (0..3).map(|i| scratch.join(&format!("data{i}"))).collect();
    let a = instance(ports[0], &data[0], &common);
    let mut b = instance(ports[1], &data[1], &common);
    let c = instance(ports[2], &data[2], &common);
    for serve in [&a, &b, &c] {
        let log = serve.log();
        assert!(
            log.contains("change notifications are shared through nats://"),
            "{log}"
        );
    }

    let front = free_port();
    let stats = free_port();
    let server_line = |name: &str, port: u16| format!("  server {name} 127.0.0.1:{port} check\n");
    let config = format!(
        "global\n  maxconn 2000\n\
         defaults\n  mode http\n  timeout connect 2s\n  timeout client 30s\n  timeout server 30s\n  \
         timeout check 3s\n  \
         retries 2\n  option redispatch\n  \
         default-server inter 500ms fall 3 rise 2\n\
         frontend mcp\n  bind 127.0.0.1:{front}\n  \
         use_backend globex if {{ req.hdr(mcp-param-database) -m str globex }}\n  \
         default_backend acme\n\
         backend acme\n  balance roundrobin\n  option httpchk\n  \
         stick-table type string len 64 size 10k expire 1h\n  \
         stick on req.hdr(mcp-session-id)\n  \
         stick store-response res.hdr(mcp-session-id)\n  \
         http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1\n  \
         http-check expect status 200\n{}{}\
         backend globex\n  option httpchk\n  \
         http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1\n  \
         http-check expect status 200\n{}\
         listen stats\n  bind 127.0.0.1:{stats}\n  stats enable\n  stats uri /stats\n",
        server_line("a", ports[0]),
        server_line("b", ports[1]),
        server_line("c", ports[2]),
    );
    let _haproxy = Haproxy::start(scratch.path(), &config);
    let stats_url = format!("http://127.0.0.1:{stats}/stats;csv");
    let lb = format!("http://127.0.0.1:{front}/mcp");
    wait_for(
        "haproxy sees every instance up",
        Duration::from_secs(20),
        || {
            std::net::TcpStream::connect(("127.0.0.1", stats)).is_ok()
                && haproxy_servers(&stats_url)
                    .iter()
                    .all(|(_, _, status, _)| status == "UP")
        },
    );

    // Load through the balancer: every call answered.
    let report = bench(&lb, 4, 2, "0");
    assert_eq!(report["failed"], 0, "{report}");
    assert!(report["requests"].as_u64().unwrap() > 50, "{report}");

    // Routing by header alone: globex's calls all reach its own group (instance c).
    let (_, c_before) = status_of(&stats_url, "globex", "c");
    for _ in 0..5 {
        let answer = call(
            &lb,
            "query",
            json!({"database": "globex", "sql": "SELECT count(*) AS n FROM pets"}),
            json!({}),
            None,
        );
        assert_eq!(
            answer["result"]["structuredContent"]["rows"][0][0], 2,
            "{answer}"
        );
    }
    let (_, c_after) = status_of(&stats_url, "globex", "c");
    assert_eq!(c_after - c_before, 5);
    // A header that disagrees with the body is refused by the instance (-32020), so the header a
    // balancer routes or authorizes on is the database the call uses.
    let mismatch = call(
        &lb,
        "query",
        json!({"database": "acme", "sql": "SELECT 1"}),
        json!({}),
        Some("globex"),
    );
    assert_eq!(mismatch["error"]["code"], -32020, "{mismatch}");

    // Handshake-era sessions live in one instance; haproxy keeps each on its instance by the
    // session id it learnt from the answer to initialize.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "cluster-test", "version": "1"},
    }});
    let legacy_headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let opened = http(&lb, "POST", &legacy_headers, &initialize.to_string());
    assert_eq!(opened.status, 200, "{}", opened.body);
    let session = opened
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let mut in_session = legacy_headers.to_vec();
    in_session.push(("Mcp-Session-Id", &session));
    in_session.push(("MCP-Protocol-Version", "2025-11-25"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let reply = http(&lb, "POST", &in_session, &initialized.to_string());
    assert_eq!(reply.status, 202, "{}", reply.body);
    for id in 2..8 {
        let list = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
        let reply = http(&lb, "POST", &in_session, &list.to_string());
        assert_eq!(
            reply.status, 200,
            "request {id} of the session: {}",
            reply.body
        );
        assert!(rpc_message(&reply)["result"]["tools"].is_array());
    }

    // A listen stream on a; a table created by a write asked on b and approved on c.
    pg.exec(&format!(
        "GRANT CREATE ON SCHEMA {} TO {}",
        pg.schema, pg.writer
    ));
    let mut on_a = Listen::open(&a.url, json!({"resourcesListChanged": true}));
    let arguments = json!({"database": "acme", "sql": "CREATE TABLE visits (id int PRIMARY KEY)"});
    let asked = call(&b.url, "execute", arguments.clone(), json!({}), None)["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let input_key = asked["inputRequests"]
        .as_object()
        .and_then(|r| r.keys().next())
        .expect("an input request")
        .clone();
    let approval = json!({
        "inputResponses": {input_key: {"action": "accept", "content": {"approve": true}}},
        "requestState": asked["requestState"],
    });
    let ran = call(&c.url, "execute", arguments.clone(), approval.clone(), None)["result"].clone();
    assert_ne!(ran["isError"], json!(true), "{ran}");
    let visits = format!("SELECT to_regclass('{}.visits') IS NOT NULL", pg.schema);
    assert_eq!(pg.scalar(&visits), "true");
    // Replayed on the third instance: already used, through the shared ledger.
    let replayed = call(&a.url, "execute", arguments, approval, None)["result"].clone();
    assert_eq!(replayed["isError"], json!(true), "{replayed}");
    assert!(
        replayed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{replayed}"
    );
    // The new table, registered by c, reaches the stream held by a, once.
    let heard = on_a.next();
    assert_eq!(
        heard["method"], "notifications/resources/list_changed",
        "{heard}"
    );
    // And a re-reads its catalog, so that it lists the table too.
    wait_for(
        "a lists the table c created",
        Duration::from_secs(5),
        || {
            let list = super::support::post(
                &a.url,
                "resources/list",
                None,
                json!({"_meta": meta(false)}),
            );
            list["result"]["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .any(|r| r["uri"].as_str().is_some_and(|u| u.ends_with("/visits")))
        },
    );

    // A file changed in the folder they all serve: each instance sees it itself, and a's listener
    // hears of it once, not once per instance.
    let notes = format!("file://{}/notes.txt", root.display());
    let mut on_notes = Listen::open(&a.url, json!({"resourceSubscriptions": [notes]}));
    std::fs::write(root.join("notes.txt"), "second").unwrap();
    let heard = on_notes.next();
    assert_eq!(
        heard["method"], "notifications/resources/updated",
        "{heard}"
    );
    assert_eq!(heard["params"]["uri"], notes, "{heard}");
    if let Some(again) = on_notes.next_within(Duration::from_millis(1500)) {
        panic!("heard the change twice: {again}");
    }

    // SIGKILL b mid-load: at most the calls in flight on it fail; haproxy marks it down.
    let connections = 8;
    let lb_for_bench = lb.clone();
    let load = std::thread::spawn(move || bench(&lb_for_bench, connections, 6, "10%"));
    std::thread::sleep(Duration::from_secs(2));
    let killed = Command::new("kill")
        .args(["-KILL", &b.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_for("haproxy marks b down", Duration::from_secs(5), || {
        status_of(&stats_url, "acme", "b").0.starts_with("DOWN")
    });
    let report = load.join().unwrap();
    // The calls that failed are those b had when it died (haproxy retries the ones it could not
    // connect for on a until three missed checks, 500 ms apart, mark b down): answered 502 or
    // cut, never left hanging, and a few. (Checks may take up to 3 s, so that a loaded machine's
    // slow answer is not taken for a dead instance.)
    let errors = report["failed"].as_u64().unwrap();
    assert!(errors <= 4 * connections as u64, "{report}");
    for kind in report["errors"].as_object().unwrap().keys() {
        assert!(kind == "http_502" || kind == "transport", "{report}");
    }
    // None was lost on the other instance of the group: haproxy saw no failed answer from a.
    assert_eq!(counter_of(&stats_url, "acme", "a", "eresp"), 0);
    assert_eq!(counter_of(&stats_url, "acme", "a", "hrsp_5xx"), 0);
    assert!(report["ok"].as_u64().unwrap() > 20, "{report}");
    // The survivors answered everything after the kill.
    let after = bench(&lb, 4, 1, "0");
    assert_eq!(after["failed"], 0, "{after}");

    // Restarted on its port, b rejoins.
    b.stop();
    let b = instance(ports[1], &data[1], &common);
    wait_for("haproxy marks b up again", Duration::from_secs(10), || {
        status_of(&stats_url, "acme", "b").0 == "UP"
    });
    let (_, b_before) = status_of(&stats_url, "acme", "b");
    let again = bench(&lb, 3, 1, "0");
    assert_eq!(again["failed"], 0, "{again}");
    let (_, b_after) = status_of(&stats_url, "acme", "b");
    assert!(b_after > b_before, "b serves again");
    drop(b);
    let mut buf = String::new();
    let _ = on_a
        .0
        .get_mut()
        .set_read_timeout(Some(Duration::from_millis(10)));
    let _ = on_a.0.read_to_string(&mut buf);
}

/// A `resources/list` cursor is an offset into a list every instance builds the same way (from
/// the same catalog, in the same order), so a client behind a balancer may fetch its next page
/// from another instance: no shared store, no sticky routing. Each instance also refuses a cursor
/// that is not one, as on one instance (-32602).
#[test]
fn a_list_cursor_from_one_instance_pages_on_another() {
    if !kelson_testenv::postgres() {
        return;
    }
    // More tables than a page holds (100), one schema resource each.
    let tables: String = (0..130)
        .map(|i| format!("CREATE TABLE t{i:03} (id int);"))
        .collect();
    let pg = Pg::new(&tables);
    let scratch = TempDir::new();
    let common = vec!["--db".to_owned(), format!("acme={}", pg_url(&pg.reader))];
    let (a, b) = (
        instance(free_port(), &scratch.join("a"), &common),
        instance(free_port(), &scratch.join("b"), &common),
    );
    let list = |url: &str, cursor: Option<&str>| {
        let mut params = json!({"_meta": meta(false)});
        if let Some(cursor) = cursor {
            params["cursor"] = json!(cursor);
        }
        super::support::post(url, "resources/list", None, params)
    };
    let uris = |page: &Value| -> Vec<String> {
        page["result"]["resources"]
            .as_array()
            .unwrap_or_else(|| panic!("{page}"))
            .iter()
            .map(|r| r["uri"].as_str().expect("a uri").to_owned())
            .collect()
    };

    let first = list(&a.url, None);
    let cursor = first["result"]["nextCursor"]
        .as_str()
        .unwrap_or_else(|| panic!("a second page: {first}"))
        .to_owned();
    let second = list(&b.url, Some(&cursor));
    assert!(
        second["result"]["nextCursor"].is_null(),
        "two pages: {second}"
    );
    let mut paged = uris(&first);
    paged.extend(uris(&second));
    eprintln!(
        "{} resources: {} from a, then {} from b with a's cursor",
        paged.len(),
        uris(&first).len(),
        uris(&second).len()
    );
    assert_eq!(uris(&first).len(), 100, "{first}");
    assert!(paged.len() >= 130, "{} resources", paged.len());
    for i in [0, 99, 100, 129] {
        let table = format!("t{i:03}");
        assert_eq!(
            paged
                .iter()
                .filter(|u| u.ends_with(&format!("/{table}")))
                .count(),
            1,
            "{table} once in {paged:?}"
        );
    }
    // The same pages as b gives itself, and as a gives for b's cursor.
    let b_first = list(&b.url, None);
    assert_eq!(uris(&b_first), uris(&first));
    assert_eq!(
        b_first["result"]["nextCursor"],
        first["result"]["nextCursor"]
    );
    assert_eq!(uris(&list(&a.url, Some(&cursor))), uris(&second));

    let junk = list(&b.url, Some("bm90IGEgY3Vyc29y"));
    assert_eq!(junk["error"]["code"], -32602, "{junk}");
}

#[test]
fn readiness_reports_the_database_and_goes_false_while_draining() {
    let scratch = TempDir::new();
    let mut serve = Serve::start(&scratch.join("data"), &["--shutdown-grace", "2s"]);
    let base = serve.url.trim_end_matches("/mcp").to_owned();
    let ready = http(&format!("{base}/readyz"), "GET", &[], "");
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(ready.body, "database sample: ok\nready\n");
    let live = http(&format!("{base}/healthz"), "GET", &[], "");
    assert_eq!((live.status, live.body.as_str()), (200, "ok\n"));
    // Another Host is refused, as on the MCP endpoint.
    let rebinding = http(
        &format!("{base}/readyz"),
        "GET",
        &[("Host", "evil.example")],
        "",
    );
    assert_eq!(rebinding.status, 403, "{}", rebinding.body);

    // SIGTERM: readiness goes false at once, while requests are still served for the grace.
    let term = Command::new("kill")
        .args(["-TERM", &serve.pid().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    wait_for("readiness goes false", Duration::from_secs(2), || {
        http(&format!("{base}/readyz"), "GET", &[], "").status == 503
    });
    let draining = http(&format!("{base}/readyz"), "GET", &[], "");
    assert_eq!(draining.body, "draining\n");
    let still = super::support::post(
        &serve.url,
        "tools/call",
        Some("query"),
        json!({"name": "query", "arguments": {"sql": "SELECT 1 AS one"}, "_meta": meta(false)}),
    );
    assert_eq!(
        still["result"]["structuredContent"]["rows"][0][0], 1,
        "{still}"
    );
    let status = serve.stop();
    assert!(status.is_some_and(|s| s.success()), "{:?}", serve.log());
}
