//! Who may send a request: the Host it names (DNS rebinding), the Origin a browser sends,
//! and a static bearer token. Checked by the guard on every protected route.

use axum::{
    http::{HeaderMap, StatusCode, header, uri::Authority},
    response::{IntoResponse as _, Response},
};

pub(super) fn forbidden(message: &'static str) -> Box<Response> {
    Box::new((StatusCode::FORBIDDEN, message).into_response())
}

pub(super) fn bad_request(message: &'static str) -> Box<Response> {
    Box::new((StatusCode::BAD_REQUEST, message).into_response())
}

/// A host and an optional port, lower-cased, IPv6 brackets removed.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct HostPort {
    host: String,
    port: Option<u16>,
}

pub(super) fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

pub(super) fn parse_host_entry(entry: &str) -> Option<HostPort> {
    let entry = entry.trim();
    if entry.is_empty() {
        return None;
    }
    Some(match Authority::try_from(entry) {
        Ok(authority) => HostPort {
            host: normalize_host(authority.host()),
            port: authority.port_u16(),
        },
        // A bare IPv6 address (`::1`) is not an authority.
        Err(_) => HostPort {
            host: normalize_host(entry),
            port: None,
        },
    })
}

/// The hosts a request may name, parsed once (`HttpOptions::allow_hosts`); none: any.
pub(super) struct AllowedHosts(Vec<HostPort>);

impl AllowedHosts {
    /// From the configured entries (`host` or `host:port`; a bare IPv6 address too).
    pub(super) fn new(entries: &[String]) -> Self {
        Self(
            entries
                .iter()
                .filter_map(|entry| parse_host_entry(entry))
                .collect(),
        )
    }

    /// Whether `host` (as in an authority: brackets around IPv6) on `port` is allowed.
    fn allow(&self, host: &str, port: Option<u16>) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.0.iter().any(|entry| {
            entry.host.eq_ignore_ascii_case(host)
                && entry.port.is_none_or(|allowed| Some(allowed) == port)
        })
    }
}

/// Checks the request's `Host` (an HTTP/1.0 request may name its host in an
/// absolute-form target instead; HTTP/1.1 requires the header, RFC 9112 §3.2).
pub(super) fn check_host(
    allowed: &AllowedHosts,
    version: axum::http::Version,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Result<(), Box<Response>> {
    if allowed.0.is_empty() {
        return Ok(());
    }
    let authority = match headers.get(header::HOST) {
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| bad_request("Bad Request: invalid Host header\n"))?;
            Authority::try_from(text)
                .ok()
                .filter(|authority| is_plain_authority(authority.as_str()))
                .ok_or_else(|| bad_request("Bad Request: invalid Host header\n"))?
        }
        None if version == axum::http::Version::HTTP_10 => uri
            .authority()
            .cloned()
            .ok_or_else(|| bad_request("Bad Request: missing Host header\n"))?,
        None => return Err(bad_request("Bad Request: missing Host header\n")),
    };
    if allowed.allow(authority.host(), authority.port_u16()) {
        Ok(())
    } else {
        tracing::warn!(target: "fusion::server", host = %authority, "rejected a request with a Host that is not allowed (possible DNS rebinding)");
        Err(forbidden("Forbidden: Host header is not allowed\n"))
    }
}

/// An origin: `null`, or scheme, host and port.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

pub(super) fn parse_origin(text: &str) -> Option<Origin> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("null") {
        return Some(Origin::Null);
    }
    let uri = axum::http::Uri::try_from(text).ok()?;
    let authority = uri
        .authority()
        .filter(|authority| is_plain_authority(authority.as_str()))?;
    Some(Origin::Tuple {
        scheme: uri.scheme_str()?.to_ascii_lowercase(),
        host: normalize_host(authority.host()),
        port: authority.port_u16(),
    })
}

/// Whether an authority is fit for a `Host` or an `Origin`: exactly `host [":" port]` of
/// RFC 9110 §7.2, where the host is a bracketed IPv6 address or a name or IPv4 address of
/// letters, digits, `-`, `.`, `_` and `~`, and the port digits within `u16`. The `http`
/// crate's `Authority` accepts more, and reads a host out of it that the client did not
/// name: the fuzz target `http_guard` found `@localhost`, `localhost:P.evil.com`,
/// `127.0.0.1:80x` and `127.0.0.1::.[::1]:80` each taken for loopback, so the grammar is
/// checked whole instead of one hole at a time.
fn is_plain_authority(authority: &str) -> bool {
    let (host_is_valid, port) = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((address, after)) => (
                address.parse::<std::net::Ipv6Addr>().is_ok(),
                match after {
                    "" => None,
                    after => match after.strip_prefix(':') {
                        Some(port) => Some(port),
                        None => return false,
                    },
                },
            ),
            None => return false,
        },
        None => {
            let (host, port) = match authority.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            };
            (!host.is_empty() && host.bytes().all(is_name_byte), port)
        }
    };
    host_is_valid
        && port.is_none_or(|port| {
            port.bytes().all(|byte| byte.is_ascii_digit()) && port.parse::<u16>().is_ok()
        })
}

/// A byte of a registered name or IPv4 address as a `Host` carries it (RFC 3986 §3.2.2,
/// unreserved characters; no percent-encoding or sub-delimiters, which no DNS name has).
fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

pub(super) fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// Whether the allowed origin `entry` (`scheme://host[:port]`, `:*` for any port, `null`)
/// admits `origin`. An entry without a port admits any port, as rmcp does.
pub(super) fn origin_allows(entry: &str, origin: &Origin) -> bool {
    let (base, any_port) = match entry.trim().strip_suffix(":*") {
        Some(base) => (base, true),
        None => (entry.trim(), false),
    };
    match (parse_origin(base), origin) {
        (Some(Origin::Null), Origin::Null) => !any_port,
        (
            Some(Origin::Tuple {
                scheme: allowed_scheme,
                host: allowed_host,
                port: allowed_port,
            }),
            Origin::Tuple { scheme, host, port },
        ) => {
            allowed_scheme == *scheme
                && allowed_host == *host
                && (any_port
                    || allowed_port.is_none()
                    || allowed_port == port.or_else(|| default_port(scheme)))
        }
        _ => false,
    }
}

pub(super) fn check_origin(allowed: &[String], headers: &HeaderMap) -> Result<(), Box<Response>> {
    let Some(value) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = value
        .to_str()
        .ok()
        .and_then(parse_origin)
        .ok_or_else(|| forbidden("Forbidden: invalid Origin header\n"))?;
    if allowed.iter().any(|entry| origin_allows(entry, &origin)) {
        Ok(())
    } else {
        tracing::warn!(target: "fusion::server", ?origin, "rejected a request from an Origin that is not allowed");
        Err(forbidden("Forbidden: Origin header is not allowed\n"))
    }
}

/// `Authorization: Bearer <token>`, compared in constant time.
pub(super) fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(sent) = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, rest) = value.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        })
    else {
        return false;
    };
    let (sent, expected) = (sent.as_bytes(), token.as_bytes());
    let mut difference = sent.len() ^ expected.len();
    for (index, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ sent.get(index).copied().unwrap_or(0));
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;
    use crate::transport::http::options::{LOOPBACK_HOSTS, LOOPBACK_ORIGINS};

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("as expected"));
        }
        map
    }

    fn loopback() -> Vec<String> {
        LOOPBACK_HOSTS.map(str::to_owned).to_vec()
    }

    const HTTP_11: axum::http::Version = axum::http::Version::HTTP_11;

    #[test]
    fn a_port_that_is_not_a_number_is_no_loopback() {
        let uri = axum::http::Uri::from_static("/mcp");
        for host in [
            "localhost:P.evil.com",
            "127.0.0.1:80x",
            "[::1]:x",
            "localhost:99999",
            "127.0.0.1::.[::1]:80",
            "127.0.0.1:[::1]",
            "localhost:+80",
            "[::1]x:80",
            "[localhost]:80",
        ] {
            let rejected = check_host(
                &AllowedHosts::new(&loopback()),
                HTTP_11,
                &uri,
                &headers(&[("host", host)]),
            )
            .expect_err("refused");
            assert_eq!(rejected.status(), StatusCode::BAD_REQUEST, "{host}");
        }
        let allowed: Vec<String> = LOOPBACK_ORIGINS.map(str::to_owned).to_vec();
        for origin in ["http://localhost:P.evil.com", "http://127.0.0.1:80x"] {
            assert!(
                check_origin(&allowed, &headers(&[("origin", origin)])).is_err(),
                "{origin}"
            );
        }
    }

    #[test]
    fn an_http_1_1_request_without_host_is_refused_whatever_its_target() {
        let absolute = axum::http::Uri::from_static("http://127.0.0.1:8931/mcp");
        let loopback = AllowedHosts::new(&loopback());
        let refused = check_host(&loopback, HTTP_11, &absolute, &headers(&[])).expect_err("400");
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        let http_10 = axum::http::Version::HTTP_10;
        assert!(check_host(&loopback, http_10, &absolute, &headers(&[])).is_ok());
    }

    #[test]
    fn loopback_hosts_pass_and_others_do_not() {
        let uri = axum::http::Uri::from_static("/mcp");
        for host in [
            "localhost",
            "localhost:8931",
            "127.0.0.1:1",
            "[::1]:80",
            "LOCALHOST",
        ] {
            assert!(
                check_host(
                    &AllowedHosts::new(&loopback()),
                    HTTP_11,
                    &uri,
                    &headers(&[("host", host)])
                )
                .is_ok(),
                "{host}"
            );
        }
        for host in [
            "evil.example.com",
            "evil.example.com:8931",
            "127.0.0.2",
            "localhost.evil",
        ] {
            let rejected = check_host(
                &AllowedHosts::new(&loopback()),
                HTTP_11,
                &uri,
                &headers(&[("host", host)]),
            )
            .expect_err("rejected");
            assert_eq!(rejected.status(), StatusCode::FORBIDDEN, "{host}");
        }
        let ported = vec!["example.com:8080".to_owned()];
        assert!(
            check_host(
                &AllowedHosts::new(&ported),
                HTTP_11,
                &uri,
                &headers(&[("host", "example.com:8080")])
            )
            .is_ok()
        );
        assert!(
            check_host(
                &AllowedHosts::new(&ported),
                HTTP_11,
                &uri,
                &headers(&[("host", "example.com:9090")])
            )
            .is_err()
        );
        assert!(
            check_host(
                &AllowedHosts::new(&[]),
                HTTP_11,
                &uri,
                &headers(&[("host", "anything")])
            )
            .is_ok()
        );
    }

    #[test]
    fn origins_match_scheme_host_and_port() {
        let allowed: Vec<String> = LOOPBACK_ORIGINS.map(str::to_owned).to_vec();
        assert!(check_origin(&allowed, &headers(&[])).is_ok());
        assert!(check_origin(&allowed, &headers(&[("origin", "http://localhost:6274")])).is_ok());
        assert!(check_origin(&allowed, &headers(&[("origin", "http://127.0.0.1:8931")])).is_ok());
        assert!(
            check_origin(&allowed, &headers(&[("origin", "http://evil.example.com")])).is_err()
        );
        assert!(check_origin(&allowed, &headers(&[("origin", "null")])).is_err());
        assert!(check_origin(&allowed, &headers(&[("origin", "not a url")])).is_err());
        let exact = vec!["https://app.example.com".to_owned(), "null".to_owned()];
        assert!(check_origin(&exact, &headers(&[("origin", "https://app.example.com")])).is_ok());
        assert!(check_origin(&exact, &headers(&[("origin", "http://app.example.com")])).is_err());
        assert!(check_origin(&exact, &headers(&[("origin", "null")])).is_ok());
        let port = vec!["https://app.example.com:443".to_owned()];
        assert!(check_origin(&port, &headers(&[("origin", "https://app.example.com")])).is_ok());
        assert!(
            check_origin(
                &port,
                &headers(&[("origin", "https://app.example.com:8443")])
            )
            .is_err()
        );
    }

    #[test]
    fn bearer_tokens_must_match_exactly() {
        assert!(bearer_matches(
            &headers(&[("authorization", "Bearer abc")]),
            "abc"
        ));
        assert!(bearer_matches(
            &headers(&[("authorization", "bearer  abc ")]),
            "abc"
        ));
        assert!(!bearer_matches(
            &headers(&[("authorization", "Bearer abcd")]),
            "abc"
        ));
        assert!(!bearer_matches(
            &headers(&[("authorization", "Bearer ab")]),
            "abc"
        ));
        assert!(!bearer_matches(
            &headers(&[("authorization", "Basic abc")]),
            "abc"
        ));
        assert!(!bearer_matches(&headers(&[]), "abc"));
    }
}
