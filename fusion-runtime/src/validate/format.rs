//! The string formats the runtime enforces (`format = "..."`), each checked by the crate
//! that owns the standard: RFC 5321 addresses (`email_address`), RFC 3986 URIs
//! (`fluent-uri`), RFC 4122 UUIDs (`uuid`), RFC 3339 dates and times (`chrono`), and the
//! standard library's IP address parsers. What each format means, in words, is in
//! `failure/wording/args.rs`.

use std::{
    net::{Ipv4Addr, Ipv6Addr},
    str::FromStr,
};

/// Whether `text` is valid for `format`; `None` for a format the runtime does not check.
pub(super) fn conforms(format: &str, text: &str) -> Option<bool> {
    let valid = match format {
        "email" => email_address::EmailAddress::is_valid(text),
        // JSON Schema's `uri` is an absolute URI: it has a scheme.
        "uri" => fluent_uri::Uri::parse(text).is_ok(),
        "uuid" => text.len() == 36 && uuid::Uuid::try_parse(text).is_ok(),
        "date" => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok() && text.len() == 10,
        "date-time" => chrono::DateTime::parse_from_rfc3339(text).is_ok(),
        "ipv4" => Ipv4Addr::from_str(text).is_ok(),
        "ipv6" => Ipv6Addr::from_str(text).is_ok(),
        _ => return None,
    };
    Some(valid)
}

#[cfg(test)]
mod tests {
    use super::conforms;

    #[test]
    fn each_format_accepts_and_rejects() {
        let cases = [
            ("email", "ada@example.com", "ada.example.com"),
            ("uri", "https://example.com/a?b=1", "not a uri"),
            ("uuid", "67e55044-10b1-426f-9247-bb680e5fe0c8", "67e55044"),
            ("date", "2026-11-29", "2026-13-01"),
            ("date-time", "2026-11-29T17:30:00Z", "2026-11-29 17:30"),
            ("ipv4", "192.0.2.1", "256.0.0.1"),
            ("ipv6", "2001:db8::1", "2001:db8:::1"),
        ];
        for (format, good, bad) in cases {
            assert_eq!(conforms(format, good), Some(true), "{format}: {good}");
            assert_eq!(conforms(format, bad), Some(false), "{format}: {bad}");
        }
        assert_eq!(conforms("hostname", "x"), None);
    }
}
