//! The server's settings: the handler deadline, the approval ledger, the task store, the broker
//! and the state keys.

use super::*;

#[test]
fn the_approval_ledger_comes_from_the_flag_or_the_file_and_must_be_postgres() {
    assert!(
        resolve_with(&[], None)
            .unwrap()
            .server
            .approval_ledger
            .is_none()
    );
    let file = "[server]\napproval_ledger = \"postgres://ledger@db/mcp\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(
        s.server.approval_ledger,
        Some((
            "postgres://ledger@db/mcp".to_owned(),
            "server.approval_ledger"
        ))
    );
    let s = resolve_with(&["--approval-ledger", "postgresql://x@y/z"], Some(file)).unwrap();
    assert_eq!(
        s.server.approval_ledger,
        Some(("postgresql://x@y/z".to_owned(), "--approval-ledger"))
    );
    let e = resolve_with(&["--approval-ledger", "redis://x"], None).unwrap_err();
    assert!(e.starts_with("--approval-ledger:"), "{e}");
    let e = resolve_with(&[], Some("[server]\napproval_ledger = \"x\"\n")).unwrap_err();
    assert!(e.starts_with("server.approval_ledger:"), "{e}");
}

#[test]
fn the_task_store_and_the_task_threshold_come_from_the_flags_or_the_file() {
    let s = resolve_with(&[], None).unwrap();
    assert!(s.server.task_store.is_none());
    assert_eq!(s.server.task_after, Some(Duration::from_secs(5)));
    let file = "[server]\ntask_store = \"postgres://t@db/mcp\"\ntask_after = \"30s\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(
        s.server.task_store,
        Some(("postgres://t@db/mcp".to_owned(), "server.task_store"))
    );
    assert_eq!(s.server.task_after, Some(Duration::from_secs(30)));
    let s = resolve_with(&["--task-after", "off"], Some(file)).unwrap();
    assert_eq!(s.server.task_after, None);
    let s = resolve_with(&["--task-after", "750ms"], None).unwrap();
    assert_eq!(s.server.task_after, Some(Duration::from_millis(750)));
    let s = resolve_with(&[], Some("[server]\ntask_after = \"off\"\n")).unwrap();
    assert_eq!(s.server.task_after, None);
    assert_eq!(s.server.task_runner_timeout, Duration::from_secs(30));
    let s = resolve_with(&["--task-runner-timeout", "10s"], Some(file)).unwrap();
    assert_eq!(s.server.task_runner_timeout, Duration::from_secs(10));
    let e = resolve_with(&["--task-runner-timeout", "10s"], None).unwrap_err();
    assert!(
        e.starts_with("--task-runner-timeout: only with a shared task store"),
        "{e}"
    );
    let e = resolve_with(&["--task-runner-timeout", "2s"], Some(file)).unwrap_err();
    assert!(
        e.starts_with("--task-runner-timeout: must be at least 5s"),
        "{e}"
    );
    let e = resolve_with(&["--task-store", "redis://x"], None).unwrap_err();
    assert!(
        e.starts_with("--task-store: expected a postgres:// URL"),
        "{e}"
    );
    let e = resolve_with(&["--task-after", "0"], None).unwrap_err();
    assert!(e.contains("--task-after: must be more than zero"), "{e}");
    let e = parse("[server]\ntask_after = \"soon\"\n").unwrap_err();
    assert!(
        e.starts_with("server.task_after: invalid duration \"soon\"") && e.contains("or \"off\""),
        "{e}"
    );
    let e = Cli::try_parse_from(["serve", "--task-after", "later"])
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("invalid duration \"later\"") && e.contains("or off"),
        "{e}"
    );
}

#[test]
fn the_handler_deadline_comes_from_the_flag_over_the_file_over_five_minutes() {
    assert_eq!(
        resolve_with(&[], None).unwrap().handler_timeout,
        Duration::from_secs(300)
    );
    let file = "[server]\nhandler_timeout = \"90s\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(s.handler_timeout, Duration::from_secs(90));
    let s = resolve_with(&["--handler-timeout", "2m"], Some(file)).unwrap();
    assert_eq!(s.handler_timeout, Duration::from_secs(120));
    let err = resolve_with(&["--handler-timeout", "0s"], None).unwrap_err();
    assert!(
        err.contains("--handler-timeout: must be more than zero"),
        "{err}"
    );
    let err = resolve_with(&[], Some("[server]\nhandler_timeout = 0\n")).unwrap_err();
    assert!(
        err.contains("server.handler_timeout: must be more than zero"),
        "{err}"
    );
}

#[test]
fn the_broker_the_shutdown_grace_and_previous_keys_come_from_the_flags_or_the_file() {
    let s = resolve_with(&[], None).unwrap();
    assert!(s.server.broker.is_none());
    assert_eq!(s.http.shutdown_grace, Duration::ZERO);
    assert!(s.server.previous_state_keys.is_empty());

    let file = "[server]\nbroker = \"nats://10.0.0.5:4222\"\nstate_key_file = \"new.key\"\n\
                previous_state_key_files = [\"old.key\"]\n[http]\nshutdown_grace = 3\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    let broker = s.server.broker.expect("a broker");
    assert_eq!(
        (broker.url.as_str(), broker.channel.as_str(), broker.key),
        ("nats://10.0.0.5:4222", "mcp.changes", "server.broker")
    );
    assert_eq!(s.http.shutdown_grace, Duration::from_secs(3));
    assert_eq!(s.server.previous_state_keys.len(), 1);
    assert_eq!(
        s.server.previous_state_keys[0].path,
        PathBuf::from("/etc/mcp/old.key")
    );

    let s = resolve_with(
        &[
            "--broker",
            "redis://:pw@cache:6379",
            "--broker-channel",
            "prod.mcp",
            "--shutdown-grace",
            "500ms",
        ],
        Some(file),
    )
    .unwrap();
    let broker = s.server.broker.expect("a broker");
    assert_eq!(
        (broker.url.as_str(), broker.channel.as_str(), broker.key),
        ("redis://:pw@cache:6379", "prod.mcp", "--broker")
    );
    assert_eq!(s.http.shutdown_grace, Duration::from_millis(500));

    for (argv, says) in [
        (
            &["--broker", "amqp://x"][..],
            "--broker: unsupported scheme \"amqp\"",
        ),
        (
            &["--broker", "nats://x", "--broker-channel", "a b"][..],
            "--broker-channel: the channel \"a b\" is not usable",
        ),
        // A TLS broker's CA file is read when the settings are, not at the first connection.
        (
            &["--broker", "rediss://cache?sslrootcert=/nonexistent/ca.pem"][..],
            "--broker: cannot read the CA file /nonexistent/ca.pem",
        ),
    ] {
        let e = resolve_with(argv, None).unwrap_err();
        assert!(e.starts_with(says), "{e}");
    }
    let e = resolve_with(&[], Some("[server]\nbroker_channel = \"x\"\n")).unwrap_err();
    assert!(
        e.starts_with("server.broker_channel: only with a broker"),
        "{e}"
    );
    let e = resolve_with(
        &[],
        Some("[server]\nprevious_state_key_files = [\"old.key\"]\n"),
    )
    .unwrap_err();
    assert!(e.starts_with("server.previous_state_key_files:"), "{e}");
    let e = resolve_with(&["--path", "/readyz"], None).unwrap_err();
    assert!(e.contains("/readyz is where health is served"), "{e}");
}
