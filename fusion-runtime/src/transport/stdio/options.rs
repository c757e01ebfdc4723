//! `StdioOptions`: the longest line, the grace after input ends, the unwritten-bytes bound.

use std::time::Duration;

/// The default [`StdioOptions::max_line_bytes`]: 16 MiB, as rmcp's own stdio transport and
/// its Streamable HTTP client.
pub(super) const DEFAULT_MAX_LINE_BYTES: usize = 16 << 20;

/// The default [`StdioOptions::shutdown_grace`].
pub(super) const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The default [`StdioOptions::max_unwritten_bytes`]: 8 MiB, room for thousands of
/// ordinary answers queued behind a slow reader, and small beside any server's memory.
pub(super) const DEFAULT_MAX_UNWRITTEN_BYTES: usize = 8 << 20;

/// How the stdio transport treats its input and its shutdown.
///
/// ```
/// use std::time::Duration;
/// use fusion_runtime::StdioOptions;
///
/// let options = StdioOptions::default()
///     .max_line_bytes(1 << 20)
///     .shutdown_grace(Duration::from_secs(10));
/// assert_eq!(options.max_line_bytes, 1 << 20);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdioOptions {
    /// The longest message (one line) the server reads, in bytes. A longer line is
    /// answered with a JSON-RPC error (`-32600`, with the request's id when it can be read
    /// from the line's start) and skipped up to its newline without being buffered; the
    /// connection goes on. Default 16 MiB (as rmcp's own transports).
    pub max_line_bytes: usize,
    /// How long calls still running when stdin closes (or SIGTERM arrives) may take to
    /// finish and be answered. After it, the server stops without their answers and
    /// `serve_stdio` returns `0`. Default 5 seconds.
    pub shutdown_grace: Duration,
    /// How many bytes of answers may wait to be written (the client is not reading
    /// stdout) before the server stops reading stdin. Reading resumes as soon as the
    /// client reads; no answer is dropped. The server's memory for queued output stays
    /// within this bound plus the answers of the calls already running (one answer larger
    /// than the bound is still written whole). Default 8 MiB.
    pub max_unwritten_bytes: usize,
}

impl Default for StdioOptions {
    fn default() -> Self {
        Self {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            max_unwritten_bytes: DEFAULT_MAX_UNWRITTEN_BYTES,
        }
    }
}

impl StdioOptions {
    /// Sets [`max_line_bytes`](Self::max_line_bytes).
    #[must_use]
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// Sets [`shutdown_grace`](Self::shutdown_grace).
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Sets [`max_unwritten_bytes`](Self::max_unwritten_bytes).
    #[must_use]
    pub fn max_unwritten_bytes(mut self, bytes: usize) -> Self {
        self.max_unwritten_bytes = bytes;
        self
    }
}
