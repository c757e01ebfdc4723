//! Framing: input bytes to lines, a line over the limit reported once and skipped.

use rmcp::model::{ErrorCode, ErrorData};

use super::stream::READ_CHUNK;
use crate::transport::decode::{self, ErrorReply};

/// The lines of the input, split out of one growing buffer.
pub(crate) struct Lines {
    pub(crate) buffer: Vec<u8>,
    /// Where the current, unfinished line starts.
    pub(super) start: usize,
    /// How far past `start` is known to hold no newline, so no byte is scanned twice.
    pub(super) scanned: usize,
    /// Skipping the rest of a line already answered as too long.
    pub(super) discarding: bool,
    pub(super) max: usize,
}

/// The next thing in the buffer.
pub(crate) enum Next<'a> {
    Line(&'a [u8]),
    /// A line over the limit: its start (up to the limit), to read its id from.
    TooLong(&'a [u8]),
    /// No complete line buffered.
    NeedMore,
}

impl Lines {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            buffer: Vec::new(),
            start: 0,
            scanned: 0,
            discarding: false,
            max,
        }
    }

    pub(crate) fn next(&mut self) -> Next<'_> {
        loop {
            let Some(offset) = memchr::memchr(b'\n', &self.buffer[self.scanned..]) else {
                self.scanned = self.buffer.len();
                if self.discarding {
                    // Drop what arrived of the skipped line at once: it is never buffered.
                    self.buffer.truncate(self.start);
                    self.scanned = self.start;
                } else if self.buffer.len() - self.start > self.max {
                    self.discarding = true;
                    let start = self.start;
                    let end = start + self.max;
                    self.start = self.buffer.len();
                    self.scanned = self.start;
                    return Next::TooLong(&self.buffer[start..end]);
                }
                return Next::NeedMore;
            };
            let end = self.scanned + offset;
            let start = std::mem::replace(&mut self.start, end + 1);
            self.scanned = self.start;
            if std::mem::take(&mut self.discarding) {
                continue;
            }
            if end - start > self.max {
                return Next::TooLong(&self.buffer[start..start + self.max]);
            }
            return Next::Line(&self.buffer[start..end]);
        }
    }

    /// Drops the lines already taken, before reading more.
    pub(crate) fn compact(&mut self) {
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        // One huge message must not pin its memory for the life of the connection.
        if self.buffer.capacity() > 4 * READ_CHUNK && self.buffer.len() < READ_CHUNK {
            self.buffer.shrink_to(2 * READ_CHUNK);
        }
    }
}

pub(super) fn too_long(start: &[u8], max: usize) -> ErrorReply {
    let id = decode::find_id(start);
    tracing::warn!(target: "fusion::transport", max_line_bytes = max, ?id, "a message over the size limit was skipped");
    ErrorReply {
        id,
        error: ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "Invalid request: the message is longer than {max} bytes, the server's limit; it was skipped. Send smaller arguments (a reference to the data instead of the data)."
            ),
            None,
        ),
    }
}
