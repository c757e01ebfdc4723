//! The duration grammar of every attribute that takes one (`timeout`, `retry(backoff, ..)`,
//! `circuit(window, ..)`, `retry_after`, `cache`, ..): a whole number and a unit, `"250ms"`,
//! `"5s"`, `"2m"` or `"1h"`. It is checked here, at compile time, and generated code carries the result as a
//! number of milliseconds, so the runtime never parses these texts.

/// The hint every "not a duration" message ends with.
pub(crate) const EXPECTED: &str =
    "write a whole number and a unit: `\"250ms\"`, `\"5s\"`, `\"2m\"` or `\"1h\"`";

/// `text` in milliseconds, or `None` when it is not a duration (or overflows).
pub(crate) fn parse_millis(text: &str) -> Option<u64> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    match unit {
        "ms" => Some(number),
        "s" => number.checked_mul(1000),
        "m" => number.checked_mul(60_000),
        "h" => number.checked_mul(3_600_000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_four_units() {
        assert_eq!(parse_millis("250ms"), Some(250));
        assert_eq!(parse_millis("5s"), Some(5_000));
        assert_eq!(parse_millis("2m"), Some(120_000));
        assert_eq!(parse_millis("1h"), Some(3_600_000));
    }

    #[test]
    fn refuses_the_rest() {
        for text in [
            "5",
            "s",
            "5d",
            "1.5s",
            " 5s",
            "-1s",
            "99999999999999999999ms",
        ] {
            assert_eq!(parse_millis(text), None, "{text}");
        }
        assert_eq!(parse_millis("18446744073709552s"), None, "overflow");
    }
}
