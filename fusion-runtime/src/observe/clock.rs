//! The log's timestamps, as tracing-subscriber writes them, the calendar part formatted
//! once a second (the JSON layer and the writer thread both use it).

use std::{fmt::Write as _, time::SystemTime};

/// The timestamp as tracing-subscriber writes it (RFC 3339, UTC, microseconds:
/// `2026-05-01T12:00:00.123456Z`), its calendar part formatted once a second.
#[derive(Default)]
pub(crate) struct Clock {
    second: Option<u64>,
    /// `2026-05-01T12:00:00.`
    prefix: String,
    text: String,
}

impl Clock {
    /// `now`, as text.
    pub(crate) fn now(&mut self, now: SystemTime) -> &str {
        self.text.clear();
        let Ok(since_epoch) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            // A clock before 1970: no cache, the formatter's own output.
            let _ = tracing_subscriber::fmt::time::FormatTime::format_time(
                &tracing_subscriber::fmt::time::SystemTime,
                &mut tracing_subscriber::fmt::format::Writer::new(&mut self.text),
            );
            return &self.text;
        };
        let second = since_epoch.as_secs();
        if self.second != Some(second) {
            self.second = Some(second);
            self.prefix.clear();
            let calendar = chrono::DateTime::<chrono::Utc>::from(now);
            let _ = write!(self.prefix, "{}.", calendar.format("%Y-%m-%dT%H:%M:%S"));
        }
        let _ = write!(
            self.text,
            "{}{:06}Z",
            self.prefix,
            since_epoch.subsec_micros()
        );
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timestamp_is_written_as_tracing_subscriber_writes_it() {
        let mut clock = Clock::default();
        let mut theirs = String::new();
        for _ in 0..3 {
            let ours = clock.now(SystemTime::now()).to_owned();
            theirs.clear();
            let _ = tracing_subscriber::fmt::time::FormatTime::format_time(
                &tracing_subscriber::fmt::time::SystemTime,
                &mut tracing_subscriber::fmt::format::Writer::new(&mut theirs),
            );
            // Same shape, same second (unless the second just turned).
            assert_eq!(ours.len(), theirs.len(), "{ours} / {theirs}");
            assert!(ours.ends_with('Z') && ours.as_bytes()[19] == b'.', "{ours}");
            assert_eq!(ours[..10], theirs[..10], "{ours} / {theirs}");
        }
    }
}
