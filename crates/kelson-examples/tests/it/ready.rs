//! Every example server says where it serves once it listens: `conformance-server --http` (which
//! the official suite drives) prints its URL on stderr, with the port bound, and the URL answers.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The first line a server started with a piped stderr prints there, within a minute; the rest of
/// its stderr is read and dropped so that the server never blocks on a full pipe.
pub(crate) fn first_line_on_stderr(child: &mut Child) -> Result<String, mpsc::RecvTimeoutError> {
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
}

#[test]
fn conformance_server_over_http_prints_its_url_on_stderr_when_ready() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_conformance-server"))
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("conformance-server starts");
    let line = match first_line_on_stderr(&mut child) {
        Ok(line) => line,
        Err(e) => {
            let _ = child.kill();
            panic!("conformance-server printed nothing on stderr ({e})");
        }
    };
    let url = line
        .strip_prefix("conformance-server serving MCP at ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("not an endpoint URL: {url:?}"));
    assert!(
        !authority.ends_with(":0"),
        "the port bound, not the one asked: {url}"
    );
    // It is ready: the address answers HTTP.
    let mut stream = std::net::TcpStream::connect(authority).expect("the URL's address listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET /nothing HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let _ = child.kill();
    let _ = child.wait();
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    // Nothing on stdout, which the fixture keeps for the protocol.
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut stdout)
        .unwrap();
    assert_eq!(stdout, "");
}
