//! Progress on stderr as a user sees it, against the fixture's tools that report it: the amount,
//! `n/total` and the percentage, the message and the elapsed time on every line; a task's id and
//! status; and a notice, within the first seconds, for a call that says nothing.

use crate::harness::HttpServer;
#[cfg(unix)]
use crate::terminal::in_terminal;

/// The elapsed time a progress line ends with (`... [0.1s]`), in seconds.
#[track_caller]
fn elapsed(line: &str) -> f64 {
    let time = line
        .strip_suffix("s]")
        .and_then(|rest| rest.rsplit_once('['))
        .map(|(_, time)| time)
        .unwrap_or_else(|| panic!("no elapsed time at the end of {line:?}"));
    time.parse()
        .unwrap_or_else(|e| panic!("{time:?} in {line:?}: {e}"))
}

#[test]
fn progress_lines_say_the_message_the_total_and_the_time() {
    let server = HttpServer::start();
    let run = server.run(&["call", "test_tool_with_progress"], "");
    run.expect_code(0);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    assert_eq!(lines.len(), 3, "{}", run.stderr);
    let expected = [
        "progress: 0/100 (0%) Completed step 0 of 100 [",
        "progress: 50/100 (50%) Completed step 50 of 100 [",
        "progress: 100/100 (100%) Completed step 100 of 100 [",
    ];
    let mut last = 0.0;
    for (line, start) in lines.iter().zip(expected) {
        assert!(line.starts_with(start), "{line:?}");
        // The clock runs from the start of the call, and only forward.
        let time = elapsed(line);
        assert!(time >= last, "{line:?} after {last}");
        last = time;
    }
    // The server paused 50 ms twice between the first report and the last.
    assert!(last >= 0.1, "{}", run.stderr);
    assert!(!run.stderr.contains("waiting for"), "{}", run.stderr);
}

#[test]
fn a_task_is_shown_with_its_id_and_status() {
    let server = HttpServer::start();
    let run = server.run(
        &[
            "call",
            "slow_compute",
            "--arg",
            "seconds=2.5",
            "--arg",
            "label=report",
        ],
        "",
    );
    run.expect_code(0);
    assert_eq!(run.stdout, "slow_compute report done after 2.5s\n");
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("task "))
        .collect();
    assert!(!lines.is_empty(), "{}", run.stderr);
    // The first report is the task as the call answered it: its id and status, no message yet.
    let id = lines[0]
        .strip_prefix("task ")
        .and_then(|rest| rest.split_once(' '))
        .map(|(id, _)| id)
        .expect("an id");
    assert!(id.len() >= 20, "{id}");
    assert!(
        lines[0].starts_with(&format!("task {id} working [")),
        "{}",
        run.stderr
    );
    // Later ones carry the task's status message (the tool's progress, as the server keeps it).
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("task {id} working: report: "))
                && l.contains(" of 2.5 s [")),
        "{}",
        run.stderr
    );
    let times: Vec<f64> = lines.iter().map(|l| elapsed(l)).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(times.last().is_some_and(|t| *t >= 0.9), "{times:?}");
}

#[test]
fn a_silent_call_is_said_to_be_waited_for() {
    let server = HttpServer::start();
    // Without a terminal: one line, after two seconds.
    let run = server.run(&["call", "test_slow", "--arg", "ms=3500"], "");
    run.expect_code(0);
    assert_eq!(run.stdout, "Waited 3500 ms\n");
    let notices: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("waiting for test_slow… ["))
        .collect();
    assert_eq!(notices.len(), 1, "{}", run.stderr);
    assert!(elapsed(notices[0]) >= 2.0, "{}", run.stderr);

    // A quick call says nothing of the kind.
    let run = server.run(&["call", "test_slow", "--arg", "ms=10"], "");
    run.expect_code(0);
    assert_eq!(run.stderr, "", "{}", run.stderr);
}

#[cfg(unix)]
#[test]
fn a_terminal_shows_a_spinner_with_the_time() {
    let server = HttpServer::start();
    let run = in_terminal(
        &[
            "call",
            "test_slow",
            "--arg",
            "ms=3000",
            "--url",
            &server.url,
        ],
        100,
        &[],
    );
    run.expect_code(0);
    let out = &run.stdout;
    assert!(out.contains("Waited 3000 ms\n"), "{out:?}");
    // Shown after a second, and redrawn as the time goes by.
    let times: Vec<f64> = out
        .match_indices("waiting for test_slow… ")
        .filter_map(|(at, notice)| {
            let rest = &out[at + notice.len()..];
            let end = rest.find('s')?;
            rest[..end].parse().ok()
        })
        .collect();
    assert!(!times.is_empty(), "{out:?}");
    assert!(times.iter().all(|t| *t >= 1.0), "{times:?}");
    assert!(times.iter().any(|t| *t >= 1.5), "{times:?}");

    // A task's status takes the spinner's place.
    let run = in_terminal(
        &[
            "call",
            "slow_compute",
            "--arg",
            "seconds=2",
            "--url",
            &server.url,
        ],
        100,
        &[],
    );
    run.expect_code(0);
    assert!(run.stdout.contains(" working"), "{:?}", run.stdout);
    assert!(
        run.stdout.contains("slow_compute job done after 2s"),
        "{:?}",
        run.stdout
    );
}
