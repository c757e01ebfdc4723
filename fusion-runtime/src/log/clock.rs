//! The log's timestamps, as tracing-subscriber writes them, the calendar part formatted
//! once a second (the JSON layer and the writer thread both use it), and the wall-clock
//! time of a call's end, read from the monotonic clock ([`Anchor`]).

use std::{
    fmt::Write as _,
    time::{Instant, SystemTime},
};

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
        self.text.push_str(&self.prefix);
        // A million plus the microseconds has seven digits: the last six are the
        // microseconds, zero-padded, without `fmt`'s padding machinery.
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(1_000_000 + since_epoch.subsec_micros());
        self.text.push_str(digits.get(1..).unwrap_or(digits));
        self.text.push('Z');
        &self.text
    }
}

/// The two clocks read together, to tell the wall-clock time of a monotonic instant.
///
/// Why: a call reads the monotonic clock once when it ends, for its latency; its log line
/// takes its time from that reading and the writer thread's anchor, taken once a batch,
/// instead of a second clock read in the call. The two clocks drift apart by at most
/// NTP's slew (0.05%) over the few milliseconds between the call and its batch.
#[derive(Clone, Copy)]
pub(crate) struct Anchor {
    wall: SystemTime,
    monotonic: Instant,
}

impl Anchor {
    /// Both clocks, now.
    pub(crate) fn now() -> Self {
        Self {
            wall: SystemTime::now(),
            monotonic: Instant::now(),
        }
    }

    /// The wall-clock time of `instant`.
    pub(crate) fn wall_time(&self, instant: Instant) -> SystemTime {
        match self.monotonic.checked_duration_since(instant) {
            Some(before) => self.wall.checked_sub(before),
            None => self
                .wall
                .checked_add(instant.duration_since(self.monotonic)),
        }
        // Out of `SystemTime`'s range only for an instant decades away: the anchor's time.
        .unwrap_or(self.wall)
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

    #[test]
    fn the_microseconds_are_zero_padded() {
        let mut clock = Clock::default();
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::new(1_767_225_600, 42_000);
        assert_eq!(clock.now(at), "2026-01-01T00:00:00.000042Z");
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::new(1_767_225_601, 999_999_000);
        assert_eq!(clock.now(at), "2026-01-01T00:00:01.999999Z");
    }

    #[test]
    fn an_instant_is_dated_by_the_anchor() {
        let anchor = Anchor::now();
        let earlier = anchor.monotonic - std::time::Duration::from_millis(3);
        assert_eq!(
            anchor.wall_time(earlier),
            anchor.wall - std::time::Duration::from_millis(3)
        );
        let later = anchor.monotonic + std::time::Duration::from_millis(2);
        assert_eq!(
            anchor.wall_time(later),
            anchor.wall + std::time::Duration::from_millis(2)
        );
    }
}
