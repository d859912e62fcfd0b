//! `kelson serve --root DIR` under a rename storm from a hostile writer in the root: the server's
//! memory stays within a fixed budget, its CPU goes quiet when the storm stops, a change after the
//! storm still reaches a listener, and the log stays short.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::support::{Serve, TempDir, cpu_ticks};
use crate::harness::Live;

/// How long a storm lasts.
const STORM: Duration = Duration::from_secs(4);
/// The most the server's resident memory may grow during a storm. Memory used to grow with the
/// backlog of events (about 70 MiB in 4 s on a debug build, 500 MiB on a release build, and on
/// for as long as the storm lasted); now it is bounded by the number of distinct names changed.
const RSS_BUDGET_KIB: u64 = 16 * 1024;

/// A process's resident anonymous memory (its heap and stacks), in KiB: `RssAnon` in
/// /proc/PID/status. Not `VmRSS`, which also counts the executable's pages as code paths run for
/// the first time (a debug build's code is tens of megabytes), which is not what the budget is
/// about.
fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "RssAnon:")
}

/// One `... kB` line of /proc/PID/status.
fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("a {key} line"))
}

/// Renames in a loop until `stop`: swaps `a` and `b` (three renames through a temporary name),
/// counting the renames.
fn swapper(a: PathBuf, b: PathBuf, stop: Arc<AtomicBool>, count: Arc<AtomicU64>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let tmp = a.with_extension("swap");
        while !stop.load(Ordering::Relaxed) {
            let swapped = std::fs::rename(&a, &tmp).is_ok()
                && std::fs::rename(&b, &a).is_ok()
                && std::fs::rename(&tmp, &b).is_ok();
            assert!(swapped, "a rename failed");
            count.fetch_add(3, Ordering::Relaxed);
        }
    })
}

/// Renames a directory back and forth until `stop`, counting the renames.
fn mover(a: PathBuf, b: PathBuf, stop: Arc<AtomicBool>, count: Arc<AtomicU64>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            std::fs::rename(&a, &b).expect("rename there");
            std::fs::rename(&b, &a).expect("rename back");
            count.fetch_add(2, Ordering::Relaxed);
        }
    })
}

/// A root with a file and a symlink to swap, a directory tree to move, and a file to watch.
fn root(scratch: &TempDir) -> PathBuf {
    let root = scratch.join("root");
    std::fs::create_dir_all(root.join("d1/sub")).unwrap();
    std::fs::write(root.join("d1/sub/x.txt"), "x").unwrap();
    std::fs::write(root.join("file"), "f").unwrap();
    std::os::unix::fs::symlink("file", root.join("link")).unwrap();
    std::fs::write(root.join("watched.txt"), "v1\n").unwrap();
    root
}

/// Runs the storm's threads for [`STORM`], sampling the server's memory; the peak RSS and the
/// renames made.
fn storm(root: &Path, pid: u32, swap: bool) -> (u64, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut threads = vec![mover(
        root.join("d1"),
        root.join("d2"),
        stop.clone(),
        count.clone(),
    )];
    if swap {
        threads.push(swapper(
            root.join("file"),
            root.join("link"),
            stop.clone(),
            count.clone(),
        ));
    }
    let started = Instant::now();
    let mut peak = 0;
    while started.elapsed() < STORM {
        std::thread::sleep(Duration::from_millis(100));
        peak = peak.max(rss_kib(pid));
    }
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().expect("the storm thread");
    }
    (peak, count.load(Ordering::Relaxed))
}

#[test]
fn a_rename_storm_keeps_memory_bounded_and_changes_still_arrive() {
    let scratch = TempDir::new();
    let root = root(&scratch);
    let serve = Serve::start(&scratch.join("data"), &["--root", root.to_str().unwrap()]);
    let pid = serve.pid();
    let watched = format!("file://{}", root.join("watched.txt").display());
    let live = Live::start(&[
        "listen",
        "--resource",
        &watched,
        "--resources",
        "--url",
        &serve.url,
    ]);
    Live::wait_for(&live.stderr, "listening for");
    let before = rss_kib(pid);
    let file_before = status_kib(pid, "RssFile:");

    let (peak, renames) = storm(&root, pid, true);
    let growth = peak.saturating_sub(before);
    let file_after = status_kib(pid, "RssFile:");
    eprintln!(
        "{renames} renames in {STORM:?}: RssAnon {before} KiB -> peak {peak} KiB (+{growth} KiB); \
         RssFile {file_before} KiB -> {file_after} KiB"
    );
    assert!(
        renames > 10_000,
        "the storm was too weak to prove anything: {renames}"
    );
    assert!(
        growth < RSS_BUDGET_KIB,
        "RssAnon grew by {growth} KiB during the storm (budget {RSS_BUDGET_KIB} KiB)"
    );

    // The server goes quiet within a few seconds of the storm's end: it used to work through a
    // backlog of events for longer than the storm had lasted. (A busy thread uses a whole core,
    // so under 0.2 s of CPU in 1 s is idle.)
    let ticks_per_s = 100; // USER_HZ on Linux
    let stopped = Instant::now();
    let mut busy = Vec::new();
    loop {
        let ticks = cpu_ticks(pid);
        std::thread::sleep(Duration::from_secs(1));
        let used = cpu_ticks(pid) - ticks;
        if used < ticks_per_s / 5 {
            break;
        }
        busy.push(used);
        assert!(
            stopped.elapsed() < Duration::from_secs(4),
            "still busy after the storm (CPU ticks per second: {busy:?})"
        );
    }

    // And it still notifies.
    std::fs::write(root.join("watched.txt"), "v2\n").unwrap();
    Live::wait_for(&live.stdout, &format!("resource updated: {watched}"));
    let (status, _) = live.interrupt();
    assert!(status.success(), "{status:?}");
}

/// notify logs a warning for nearly every directory rename ("Unable to remove the path from the
/// watches"); the server writes a few lines per call site a minute and says how many it held back.
#[test]
fn a_directory_rename_storm_writes_a_short_log() {
    let scratch = TempDir::new();
    let root = root(&scratch);
    let serve = Serve::start(&scratch.join("data"), &["--root", root.to_str().unwrap()]);
    let at_start = serve.log().lines().count();
    let (_, renames) = storm(&root, serve.pid(), false);
    // Let the server work through what the storm left.
    std::thread::sleep(Duration::from_secs(1));
    let log = serve.log();
    let lines: Vec<&str> = log.lines().skip(at_start).collect();
    eprintln!("{renames} directory renames: {} log lines", lines.len());
    assert!(
        renames > 10_000,
        "the storm was too weak to prove anything: {renames}"
    );
    assert!(
        lines.len() <= 40,
        "{} lines:\n{}",
        lines.len(),
        lines.join("\n")
    );
}
