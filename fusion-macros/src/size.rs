//! The size grammar of `#[mcp_tool(max_output = "64KiB")]`: a whole number and a unit,
//! `"500B"`, `"64KiB"`, `"8MiB"` (or the decimal `"64KB"`, `"8MB"`). Checked at compile time;
//! generated code carries the number of bytes.

/// The hint every "not a size" message ends with.
pub(crate) const EXPECTED: &str = "write a whole number and a unit: `\"500B\"`, `\"64KiB\"` or `\"8MiB\"` (`KB` and `MB` are thousands)";

/// `text` in bytes, or `None` when it is not a size (or overflows, or is zero).
pub(crate) fn parse_bytes(text: &str) -> Option<u64> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let scale: u64 = match unit {
        "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return None,
    };
    number.checked_mul(scale).filter(|bytes| *bytes > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_binary_and_decimal_units() {
        assert_eq!(parse_bytes("500B"), Some(500));
        assert_eq!(parse_bytes("64KiB"), Some(65_536));
        assert_eq!(parse_bytes("8MiB"), Some(8 << 20));
        assert_eq!(parse_bytes("64KB"), Some(64_000));
        assert_eq!(parse_bytes("2MB"), Some(2_000_000));
    }

    #[test]
    fn refuses_the_rest() {
        for text in [
            "64",
            "KiB",
            "64kib",
            "1.5MiB",
            "0B",
            "99999999999999999999GiB",
            "64 KiB",
        ] {
            assert_eq!(parse_bytes(text), None, "{text}");
        }
    }
}
