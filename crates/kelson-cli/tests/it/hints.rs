//! Errors that say what to do: a refused connection, a wrong path, a URL without its scheme, the
//! Host check of a server, an HTML error page.

use crate::harness::{HttpServer, canned_http, mcp};

#[test]
fn a_refused_connection_names_the_address_and_asks_if_the_server_runs() {
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let run = mcp(&["tools", "--url", &format!("http://{addr}/mcp")], "");
    run.expect_code(3);
    assert_eq!(
        run.stderr,
        format!("error: cannot connect to {addr}: connection refused; is the server running?\n")
    );
}

#[test]
fn a_url_without_its_scheme_gets_a_suggestion() {
    for url in ["127.0.0.1:8080/mcp", "localhost:8080/mcp"] {
        let run = mcp(&["tools", "--url", url], "");
        run.expect_code(4);
        assert!(
            run.stderr
                .contains(&format!("it has no scheme; did you mean \"http://{url}\"?")),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn a_wrong_path_asks_for_the_endpoint() {
    let server = HttpServer::start();
    let url = server.url.replace("/mcp", "/api");
    let run = mcp(&["tools", "--url", &url], "");
    run.expect_code(3);
    assert!(
        run.stderr.contains(
            "HTTP 404 Not Found; nothing is served at /api; is the path /mcp? (kelson serve's default)"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_refused_host_names_allowed_host() {
    let server = HttpServer::start();
    let run = server.run(&["tools", "-H", "Host: mcp.example.com"], "");
    run.expect_code(3);
    assert!(
        run.stderr.starts_with("error: HTTP 403 Forbidden"),
        "{}",
        run.stderr
    );
    // Refused as such, not as a failed legacy handshake.
    assert!(!run.stderr.contains("initialize"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("if it is kelson serve, start it with --allowed-host mcp.example.com"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_html_error_page_is_summarised() {
    let url = canned_http(
        "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nConnection: close\r\n\
         Content-Length: 157\r\n\r\n\
         <html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
         <center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n\
         </body>\r\n</html>\r\n",
        "/mcp",
    );
    let run = mcp(&["tools", "--url", &url], "");
    run.expect_code(3);
    assert_eq!(
        run.stderr,
        "error: HTTP 502 Bad Gateway: an HTML page: \"502 Bad Gateway\"\n"
    );
}
