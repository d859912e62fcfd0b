//! Running `kelson` with a real terminal on stdout and stderr: a pseudo-terminal of a set width, whose
//! other end the test reads, so that what depends on a terminal (tables cut to its width, the
//! progress bar and the waiting spinner) is tested as a user sees it.

use std::fs::File;
use std::io::Read as _;
use std::process::Stdio;

use rustix::fs::{Mode, OFlags};
use rustix::pty::OpenptFlags;
use rustix::termios::Winsize;

use crate::harness::{RUN_TIMEOUT, Run, command, watchdog};

/// Runs `kelson ARGS` with stdout and stderr on a terminal `columns` wide (stdin empty, no colour);
/// everything it wrote, both streams as the terminal got them, is in `stdout`, with the
/// terminal's `\r\n` line ends turned back into `\n`.
pub fn in_terminal(args: &[&str], columns: u16, env: &[(&str, &str)]) -> Run {
    let master =
        rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)
            .expect("a pseudo-terminal");
    rustix::pty::grantpt(&master).expect("grantpt");
    rustix::pty::unlockpt(&master).expect("unlockpt");
    let size = Winsize {
        ws_row: 40,
        ws_col: columns,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(&master, size).expect("the terminal's size");
    let name = rustix::pty::ptsname(&master, Vec::new()).expect("the terminal's name");
    // Not made the test's controlling terminal.
    let terminal = File::from(
        rustix::fs::open(
            name.as_c_str(),
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("the terminal opens"),
    );
    let mut command = command(args);
    for (name, value) in env {
        command.env(name, value);
    }
    command
        .stdin(Stdio::null())
        .stdout(terminal.try_clone().expect("a second handle"))
        .stderr(terminal);
    let mut child = command.spawn().expect("kelson starts");
    // The command holds our copies of the terminal's end: closed, so that reading ends when kelson
    // does.
    drop(command);
    let done = watchdog(child.id(), RUN_TIMEOUT);
    let reader = std::thread::spawn(move || {
        let mut master = File::from(master);
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 4096];
        // Linux answers EIO once the last process holding the other end has closed it.
        while let Ok(n) = master.read(&mut chunk) {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&chunk[..n]);
        }
        bytes
    });
    let status = child.wait().expect("kelson runs");
    let _ = done.send(());
    let bytes = reader.join().expect("the reader");
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&bytes).replace("\r\n", "\n"),
        stderr: String::new(),
    }
}
