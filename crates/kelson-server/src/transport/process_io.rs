//! The process's own stdin and stdout, as [`serve_stdio`](super::stdio::serve_stdio) reads and
//! writes them.
//!
//! Why not `tokio::io::stdin()`/`stdout()` alone: they read and write on tokio's blocking thread
//! pool, so every request read and every answer written crossed threads twice (a blocking thread
//! does the system call, then wakes the runtime), which a one-request-at-a-time client pays on
//! every call. Hosts spawn a server with a pipe (Rust, Python, Go) or a Unix socket pair (Node's
//! libuv) on each stream; those are registered with the runtime's reactor like any socket, and
//! read and written where the request is served. Anything else (a terminal, a regular file, a
//! TCP socket handed over by inetd) keeps tokio's blocking streams.
//!
//! Registering a stream makes its open file description non-blocking, and that description may
//! be shared with the process that started us (a shell script that runs the server and then
//! reads the same pipe itself). So each stream is made blocking again when it is dropped, at the
//! end of serving; the streams served are duplicates of fd 0 and 1, which stay open.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// stdin: a registered pipe or Unix socket, or tokio's blocking stdin.
pub(crate) struct Input(Kind<tokio::io::Stdin>);

/// stdout: a registered pipe or Unix socket, or tokio's blocking stdout.
pub(crate) struct Output(Kind<tokio::io::Stdout>);

enum Kind<S> {
    #[cfg(unix)]
    Reactor(unix::Registered),
    Blocking(S),
}

impl Input {
    /// The process's stdin, registered with the runtime where it can be.
    pub(crate) fn stdin() -> Input {
        #[cfg(unix)]
        if let Some(registered) = unix::register(std::os::fd::AsFd::as_fd(&io::stdin()), true) {
            return Input(Kind::Reactor(registered));
        }
        Input(Kind::Blocking(tokio::io::stdin()))
    }

    /// Whether reads go through the reactor rather than the blocking pool.
    #[cfg(test)]
    pub(crate) fn registered(&self) -> bool {
        !matches!(self.0, Kind::Blocking(_))
    }
}

impl Output {
    /// The process's stdout, registered with the runtime where it can be.
    pub(crate) fn stdout() -> Output {
        #[cfg(unix)]
        if let Some(registered) = unix::register(std::os::fd::AsFd::as_fd(&io::stdout()), false) {
            return Output(Kind::Reactor(registered));
        }
        Output(Kind::Blocking(tokio::io::stdout()))
    }
}

impl AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Kind::Reactor(r) => r.poll_read(cx, buf),
            Kind::Blocking(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Kind::Reactor(r) => r.poll_write(cx, buf),
            Kind::Blocking(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Kind::Reactor(_) => Poll::Ready(Ok(())),
            Kind::Blocking(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            // fd 1 stays open (its duplicate closes on drop); the client sees the end when the
            // process exits, as with the blocking stdout.
            #[cfg(unix)]
            Kind::Reactor(_) => Poll::Ready(Ok(())),
            Kind::Blocking(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

#[cfg(unix)]
mod unix {
    use std::fs::File;
    use std::io;
    use std::os::fd::{BorrowedFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt as _;
    use std::os::unix::net::UnixStream as StdUnixStream;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
    use tokio::net::UnixStream;
    use tokio::net::unix::pipe;

    /// A duplicate of fd 0 or 1 registered with the reactor; made blocking again when dropped.
    pub(crate) struct Registered(Option<Stream>);

    enum Stream {
        PipeIn(pipe::Receiver),
        PipeOut(pipe::Sender),
        Socket(UnixStream),
    }

    /// Registers a duplicate of `fd` when it is a pipe (read or write end as `input` says) or a
    /// Unix stream socket and a runtime is running; `None` otherwise, or when anything fails.
    pub(crate) fn register(fd: BorrowedFd<'_>, input: bool) -> Option<Registered> {
        tokio::runtime::Handle::try_current().ok()?;
        let owned: OwnedFd = fd.try_clone_to_owned().ok()?;
        let file = File::from(owned);
        let kind = file.metadata().ok()?.file_type();
        let stream = if kind.is_fifo() {
            if input {
                Stream::PipeIn(pipe::Receiver::from_file(file).ok()?)
            } else {
                Stream::PipeOut(pipe::Sender::from_file(file).ok()?)
            }
        } else if kind.is_socket() {
            let socket = StdUnixStream::from(OwnedFd::from(file));
            // A socket of another family (TCP from inetd) has no Unix address.
            socket.local_addr().ok()?;
            socket.set_nonblocking(true).ok()?;
            match UnixStream::from_std(socket) {
                Ok(s) => Stream::Socket(s),
                Err(_) => return None,
            }
        } else {
            return None;
        };
        Some(Registered(Some(stream)))
    }

    impl Registered {
        pub(super) fn poll_read(
            &mut self,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            match self.0.as_mut() {
                Some(Stream::PipeIn(p)) => Pin::new(p).poll_read(cx, buf),
                Some(Stream::Socket(s)) => Pin::new(s).poll_read(cx, buf),
                _ => Poll::Ready(Err(io::Error::other("not an input stream"))),
            }
        }

        pub(super) fn poll_write(
            &mut self,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            match self.0.as_mut() {
                Some(Stream::PipeOut(p)) => Pin::new(p).poll_write(cx, buf),
                Some(Stream::Socket(s)) => Pin::new(s).poll_write(cx, buf),
                _ => Poll::Ready(Err(io::Error::other("not an output stream"))),
            }
        }
    }

    impl Drop for Registered {
        fn drop(&mut self) {
            // The file description is shared with fd 0 or 1 and perhaps with our parent: leave
            // it blocking, as it was found. (A runtime is needed to deregister; without one
            // the duplicate is simply closed.)
            let restored = match self.0.take() {
                Some(Stream::PipeIn(p)) => p.into_blocking_fd().map(drop),
                Some(Stream::PipeOut(p)) => p.into_blocking_fd().map(drop),
                Some(Stream::Socket(s)) => s.into_std().and_then(|s| s.set_nonblocking(false)),
                None => Ok(()),
            };
            if let Err(e) = restored {
                tracing::debug!("could not make a standard stream blocking again: {e}");
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::os::fd::AsFd as _;
    use std::os::unix::net::UnixStream as StdUnixStream;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::unix::register;

    #[tokio::test]
    async fn a_pipe_is_served_by_the_reactor_and_left_blocking() {
        let (reader, mut writer) = std::io::pipe().expect("pipe");
        let registered = register(reader.as_fd(), true).expect("a pipe registers");
        let mut input = super::Input(super::Kind::Reactor(registered));
        writer.write_all(b"{\"jsonrpc\":\"2.0\"}\n").expect("write");
        let mut buf = [0u8; 18];
        input.read_exact(&mut buf).await.expect("read");
        assert_eq!(&buf, b"{\"jsonrpc\":\"2.0\"}\n");
        drop(input);
        // Blocking again: a read of the original end waits for data instead of failing with
        // WouldBlock, so it sees the byte written by another thread after a while.
        let mut reader = reader;
        let late = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            writer.write_all(b"x").expect("write");
        });
        let mut one = [0u8; 1];
        reader.read_exact(&mut one).expect("a blocking read");
        assert_eq!(&one, b"x");
        late.join().expect("writer");
    }

    #[tokio::test]
    async fn a_unix_socket_is_served_by_the_reactor_both_ways() {
        let (ours, mut theirs) = StdUnixStream::pair().expect("socket pair");
        let input = register(ours.as_fd(), true).expect("a socket registers for reading");
        let output = register(ours.as_fd(), false).expect("and for writing");
        let mut input = super::Input(super::Kind::Reactor(input));
        let mut output = super::Output(super::Kind::Reactor(output));
        assert!(input.registered());
        theirs.write_all(b"ping\n").expect("write");
        let mut buf = [0u8; 5];
        input.read_exact(&mut buf).await.expect("read");
        assert_eq!(&buf, b"ping\n");
        output.write_all(b"pong\n").await.expect("write");
        output.flush().await.expect("flush");
        drop((input, output));
        let mut back = [0u8; 5];
        theirs.read_exact(&mut back).expect("read back");
        assert_eq!(&back, b"pong\n");
        // The socket is blocking again for whoever holds it next: a read waits for the byte
        // another thread writes a little later instead of failing with WouldBlock.
        ours.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .expect("timeout");
        let late = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            theirs.write_all(b"z").expect("write");
        });
        let mut ours = ours;
        let mut z = [0u8; 1];
        ours.read_exact(&mut z).expect("a blocking read");
        assert_eq!(&z, b"z");
        late.join().expect("writer");
    }

    #[tokio::test]
    async fn a_regular_file_is_left_to_the_blocking_pool() {
        let file = regular_file();
        assert!(register(file.as_fd(), true).is_none());
    }

    fn regular_file() -> std::fs::File {
        let path = std::env::temp_dir().join(format!("kelson-process-io-{}", std::process::id()));
        let file = std::fs::File::create(&path).expect("create");
        let _ = std::fs::remove_file(&path);
        file
    }
}
