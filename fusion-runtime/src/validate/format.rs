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
        "email" => is_email(text),
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

/// An RFC 5321 mailbox: `email_address` reads the local part and the `@`, and the domain
/// must be a host name (letters, digits and inner hyphens, labels of 1 to 63) or an address
/// literal in brackets. `email_address` alone let `a@ex!mple.com` through (the fuzz target
/// `arguments`, against the `jsonschema` crate, found it).
fn is_email(text: &str) -> bool {
    let Ok(address) = email_address::EmailAddress::from_str(text) else {
        return false;
    };
    let domain = address.domain();
    if domain.starts_with('[') {
        return true;
    }
    domain.len() <= 253
        && domain.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
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
        for bad in [
            "a@ex!mple.com",
            "a@-example.com",
            "a@example..com",
            "a@exa_mple.com",
        ] {
            assert_eq!(conforms("email", bad), Some(false), "{bad}");
        }
        for good in ["a@localhost", "a.b+c@mail.example.co.uk", "a@[192.0.2.1]"] {
            assert_eq!(conforms("email", good), Some(true), "{good}");
        }
    }
}
