//! The byte streams under the transport: the input (async, or a blocking source on its own
//! thread) and the output, read a chunk at a time.

use std::{
    io::{self},
    pin::Pin,
};

use tokio::{
    io::{AsyncRead, AsyncReadExt as _, AsyncWrite},
    sync::mpsc,
};

/// Where the transport reads from.
pub(crate) enum Input {
    /// A non-blocking source driven by tokio's reactor (a pipe or a socket).
    Async(Pin<Box<dyn AsyncRead + Send>>),
    /// Chunks read by a dedicated thread, for sources epoll cannot watch (regular files)
    /// or whose flags must not change (a terminal shared with the shell).
    Chunks(mpsc::Receiver<io::Result<Vec<u8>>>),
}

impl Input {
    /// Reads a blocking source on its own thread. A plain thread rather than tokio's
    /// blocking pool: a read that never returns (a terminal) must not hold up the
    /// runtime's shutdown, and a detached thread does not.
    pub(crate) fn from_blocking(mut source: impl io::Read + Send + 'static) -> io::Result<Self> {
        let (sender, receiver) = mpsc::channel(16);
        std::thread::Builder::new()
            .name("fusion-stdin".into())
            .spawn(move || {
                loop {
                    let mut chunk = vec![0; READ_CHUNK];
                    match source.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(read) => {
                            chunk.truncate(read);
                            if sender.blocking_send(Ok(chunk)).is_err() {
                                break;
                            }
                        }
                        Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                        Err(error) => {
                            let _ = sender.blocking_send(Err(error));
                            break;
                        }
                    }
                }
            })?;
        Ok(Self::Chunks(receiver))
    }

    /// Appends what is available to `buffer`; `Ok(0)` at the end of the input.
    ///
    /// Cancel-safe: `read_buf` and `recv` consume nothing when dropped, and the copy into
    /// `buffer` happens after them, with no `.await` in between.
    pub(super) async fn fill(&mut self, buffer: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            Self::Async(reader) => {
                buffer.reserve(READ_CHUNK);
                reader.read_buf(buffer).await
            }
            Self::Chunks(chunks) => match chunks.recv().await {
                Some(Ok(chunk)) => {
                    buffer.extend_from_slice(&chunk);
                    Ok(chunk.len())
                }
                Some(Err(error)) => Err(error),
                None => Ok(0),
            },
        }
    }
}

/// Where the transport writes.
pub(crate) enum Output {
    /// A non-blocking sink driven by tokio's reactor (a pipe or a socket).
    Async(Pin<Box<dyn AsyncWrite + Send>>),
    /// A sink written by a dedicated thread (a regular file, a terminal).
    Blocking(Box<dyn io::Write + Send>),
}

/// How much the reader asks for at a time.
pub(super) const READ_CHUNK: usize = 64 * 1024;
