//! What the kernel says about a process: CPU time (`/proc/<pid>/stat`) and peak resident
//! memory (`/proc/<pid>/status`). Linux only; elsewhere the readings fail with an error
//! the report shows.

use std::{fs, io, time::Duration};

/// CPU time a process (all its threads) has used, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// `utime`: time in user mode.
    pub user: u64,
    /// `stime`: time in kernel mode.
    pub system: u64,
}

impl CpuTicks {
    /// User plus system ticks.
    pub fn total(self) -> u64 {
        self.user.saturating_add(self.system)
    }

    /// The CPU time used between `earlier` and `self`.
    pub fn since(self, earlier: CpuTicks) -> Duration {
        ticks_to_duration(self.total().saturating_sub(earlier.total()))
    }
}

/// Converts clock ticks to time, using the kernel's `USER_HZ` (`sysconf(_SC_CLK_TCK)`,
/// read from the auxiliary vector; 100 on every mainstream Linux).
pub fn ticks_to_duration(ticks: u64) -> Duration {
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / hz)
}

/// Reads the CPU time of `pid` (`None`: this process).
pub fn cpu_ticks(pid: Option<u32>) -> io::Result<CpuTicks> {
    parse_stat(&fs::read_to_string(proc_path(pid, "stat"))?)
}

/// Reads the peak resident set size of `pid` (`VmHWM`), in KiB.
pub fn peak_rss_kib(pid: Option<u32>) -> io::Result<u64> {
    status_field_kib(&fs::read_to_string(proc_path(pid, "status"))?, "VmHWM:")
}

/// Reads the current resident set size of `pid` (`VmRSS`), in KiB.
pub fn rss_kib(pid: Option<u32>) -> io::Result<u64> {
    status_field_kib(&fs::read_to_string(proc_path(pid, "status"))?, "VmRSS:")
}

fn proc_path(pid: Option<u32>, file: &str) -> String {
    match pid {
        Some(pid) => format!("/proc/{pid}/{file}"),
        None => format!("/proc/self/{file}"),
    }
}

/// Parses `utime` and `stime` (fields 14 and 15 of proc(5)) from a `stat` line. The
/// second field, the command name, is in parentheses and may itself contain spaces and
/// parentheses, so the fields are counted from the last `)`.
fn parse_stat(stat: &str) -> io::Result<CpuTicks> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
    let after_name = stat
        .rfind(')')
        .map(|end| &stat[end + 1..])
        .ok_or_else(|| invalid("no `)` after the command name in /proc/<pid>/stat"))?;
    // After the name: field 3 (state) is index 0, so field N is index N - 3.
    let mut fields = after_name.split_ascii_whitespace().skip(14 - 3);
    let mut next = |name: &str| -> io::Result<u64> {
        fields
            .next()
            .and_then(|field| field.parse().ok())
            .ok_or_else(|| invalid(&format!("no numeric `{name}` in /proc/<pid>/stat")))
    };
    let user = next("utime")?;
    let system = next("stime")?;
    Ok(CpuTicks { user, system })
}

fn status_field_kib(status: &str, key: &str) -> io::Result<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("no `{key}` line in /proc/<pid>/status"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() -> io::Result<()> {
        let line = "4242 (we (ird) name) S 1 4242 4242 0 -1 4194560 120 0 0 0 \
                    731 52 0 0 20 0 3 0 99 1000 200 18446744073709551615";
        assert_eq!(
            parse_stat(line)?,
            CpuTicks {
                user: 731,
                system: 52
            }
        );
        assert!(parse_stat("4242 no parenthesis").is_err());
        assert!(parse_stat("4242 (short) S 1 2").is_err());
        Ok(())
    }

    #[test]
    fn status_fields_are_read_in_kib() -> io::Result<()> {
        let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    4321 kB\nVmRSS:\t    4000 kB\n";
        assert_eq!(status_field_kib(status, "VmHWM:")?, 4321);
        assert_eq!(status_field_kib(status, "VmRSS:")?, 4000);
        assert!(status_field_kib(status, "VmSwap:").is_err());
        Ok(())
    }

    #[test]
    fn this_process_can_be_read() -> io::Result<()> {
        let before = cpu_ticks(None)?;
        assert!(peak_rss_kib(None)? > 0);
        assert!(cpu_ticks(None)?.total() >= before.total());
        Ok(())
    }
}
