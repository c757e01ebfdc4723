//! Taking the process's stdin and stdout for the protocol (the stdio guard), and choosing
//! how to drive them.
//!
//! **The guard.** fd 1 is the protocol stream, but `println!` — in a tool, in a library,
//! in a child process that inherits it — writes there too, and one stray line corrupts the
//! stream for the client. So the transport takes a private duplicate of the real stdout
//! and points fd 1 at stderr: stray output lands in the log and the protocol stays clean.
//! Likewise fd 0 is pointed at `/dev/null` after the transport takes its duplicate, so a
//! child process that inherits stdin (`Command::status()` does) cannot eat requests.
//!
//! **The drive.** Pipes and sockets (Node clients give their servers sockets) are read and
//! written non-blocking on tokio's reactor. A FIFO is reopened through `/proc/self/fd` on
//! Linux, as rmcp's `stdio_pipes()` does, so `O_NONBLOCK` is set on a file description of
//! our own rather than on one other processes may share. Files, terminals and other
//! character devices cannot be watched by epoll (or must not have their flags changed, a
//! terminal being shared with the shell): a dedicated thread reads or writes them.

use std::io;

use super::{Input, Output};

/// Takes fd 0 and fd 1 for the transport and guards them (see the module docs).
#[cfg(unix)]
pub(crate) fn take() -> io::Result<(Input, Output)> {
    use std::{
        io::Write as _,
        os::fd::{AsFd as _, OwnedFd},
    };

    // Whatever the program already printed goes out before fd 1 changes hands.
    let _ = io::stdout().flush();
    let stdin: OwnedFd = io::stdin().as_fd().try_clone_to_owned()?;
    let stdout: OwnedFd = io::stdout().as_fd().try_clone_to_owned()?;
    guard_stdout(&stdout);
    guard_stdin();
    Ok((input(stdin)?, output(stdout)?))
}

/// Points fd 1 at stderr, or at `/dev/null` when stderr is the protocol stream itself
/// (a client that merged the two) or is closed.
#[cfg(unix)]
fn guard_stdout(protocol: &std::os::fd::OwnedFd) {
    use std::os::fd::AsFd as _;

    let stderr = io::stderr();
    let stderr_is_protocol = same_file(stderr.as_fd(), protocol.as_fd());
    let redirected = if stderr_is_protocol {
        Err(io::Error::other("stderr is the protocol stream"))
    } else {
        rustix::stdio::dup2_stdout(stderr.as_fd()).map_err(io::Error::from)
    };
    let redirected = redirected.or_else(|_| {
        let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
        rustix::stdio::dup2_stdout(null.as_fd()).map_err(io::Error::from)
    });
    if let Err(error) = redirected {
        tracing::warn!(
            target: "fusion::transport",
            %error,
            "could not point fd 1 away from the protocol stream; output printed by tools will corrupt it"
        );
    }
}

/// Points fd 0 at `/dev/null`.
#[cfg(unix)]
fn guard_stdin() {
    use std::os::fd::AsFd as _;

    let redirected = std::fs::File::open("/dev/null")
        .and_then(|null| rustix::stdio::dup2_stdin(null.as_fd()).map_err(io::Error::from));
    if let Err(error) = redirected {
        tracing::debug!(target: "fusion::transport", %error, "could not point fd 0 at /dev/null");
    }
}

#[cfg(unix)]
fn same_file(a: std::os::fd::BorrowedFd<'_>, b: std::os::fd::BorrowedFd<'_>) -> bool {
    match (rustix::fs::fstat(a), rustix::fs::fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}

/// What kind of file a descriptor is, as far as driving it goes.
#[cfg(unix)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fifo,
    Socket,
    /// A regular file, a terminal, `/dev/null`, ...: a thread drives it.
    Other,
}

#[cfg(unix)]
fn kind(fd: std::os::fd::BorrowedFd<'_>) -> Kind {
    use rustix::fs::FileType;
    match rustix::fs::fstat(fd).map(|stat| FileType::from_raw_mode(stat.st_mode)) {
        Ok(FileType::Fifo) => Kind::Fifo,
        Ok(FileType::Socket) => Kind::Socket,
        _ => Kind::Other,
    }
}

/// Opens `/proc/self/fd/N` again, non-blocking: the same pipe, on a file description of
/// our own. `None` where there is no `/proc` (the caller then uses the descriptor itself).
#[cfg(target_os = "linux")]
fn reopen_nonblocking(fd: &std::os::fd::OwnedFd, write: bool) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::AsRawFd as _;

    use rustix::fs::{Mode, OFlags};
    let access = if write {
        OFlags::WRONLY
    } else {
        OFlags::RDONLY
    };
    rustix::fs::open(
        format!("/proc/self/fd/{}", fd.as_raw_fd()),
        access | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

#[cfg(not(target_os = "linux"))]
fn reopen_nonblocking(_fd: &std::os::fd::OwnedFd, _write: bool) -> Option<std::os::fd::OwnedFd> {
    None
}

#[cfg(unix)]
fn input(fd: std::os::fd::OwnedFd) -> io::Result<Input> {
    use std::os::fd::AsFd as _;

    use tokio::net::unix::pipe;
    match kind(fd.as_fd()) {
        Kind::Fifo => {
            let fd = reopen_nonblocking(&fd, false).unwrap_or(fd);
            Ok(Input::Async(Box::pin(pipe::Receiver::from_owned_fd(fd)?)))
        }
        Kind::Socket => Ok(Input::Async(Box::pin(socket(fd)?))),
        Kind::Other => Input::from_blocking(std::fs::File::from(fd)),
    }
}

#[cfg(unix)]
fn output(fd: std::os::fd::OwnedFd) -> io::Result<Output> {
    use std::os::fd::AsFd as _;

    use tokio::net::unix::pipe;
    match kind(fd.as_fd()) {
        Kind::Fifo => {
            let fd = reopen_nonblocking(&fd, true).unwrap_or(fd);
            Ok(Output::Async(Box::pin(pipe::Sender::from_owned_fd(fd)?)))
        }
        Kind::Socket => Ok(Output::Async(Box::pin(socket(fd)?))),
        Kind::Other => Ok(Output::Blocking(Box::new(std::fs::File::from(fd)))),
    }
}

/// A stream socket as a tokio stream. `UnixStream` only issues `read`/`write` on the
/// descriptor, which works for any stream socket (a TCP socket from inetd as well).
/// Non-blocking mode is set on the socket's file description, which after the guard no
/// other descriptor of this process refers to.
#[cfg(unix)]
fn socket(fd: std::os::fd::OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(fd);
    socket.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(socket)
}

/// Without Unix descriptors there is no guard: stdin and stdout are driven by threads.
#[cfg(not(unix))]
pub(crate) fn take() -> io::Result<(Input, Output)> {
    Ok((
        Input::from_blocking(io::stdin())?,
        Output::Blocking(Box::new(io::stdout())),
    ))
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::fd::{AsFd as _, OwnedFd};

    use super::*;

    #[test]
    fn kinds() {
        let (read, _write) = std::io::pipe().expect("a pipe");
        assert_eq!(kind(OwnedFd::from(read).as_fd()), Kind::Fifo);
        let (a, _b) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        assert_eq!(kind(a.as_fd()), Kind::Socket);
        let null = std::fs::File::open("/dev/null").expect("/dev/null");
        assert_eq!(kind(null.as_fd()), Kind::Other);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_reopened_fifo_has_its_own_flags() {
        use rustix::fs::OFlags;
        let (read, _write) = std::io::pipe().expect("a pipe");
        let read = OwnedFd::from(read);
        let reopened = reopen_nonblocking(&read, false).expect("/proc is there");
        let flags = |fd: &OwnedFd| rustix::fs::fcntl_getfl(fd).expect("flags");
        assert!(flags(&reopened).contains(OFlags::NONBLOCK));
        assert!(!flags(&read).contains(OFlags::NONBLOCK));
    }
}
