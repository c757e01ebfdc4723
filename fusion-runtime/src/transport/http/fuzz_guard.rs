//! The HTTP request guard under a fuzzer (feature `fuzzing`): the framing check, the
//! `Host` and `Origin` checks and the recording of number literals, on a request built from
//! arbitrary bytes, held to what each promises.

use axum::http::{HeaderName, HeaderValue, Request, Version, header};

use super::{
    guard::misframed,
    hosts::{AllowedHosts, check_host, check_origin},
    literals::number_literals_of,
    options::{LOOPBACK_HOSTS, LOOPBACK_ORIGINS},
};

/// `data` as a request: its first line the target, then `name: value` header lines up to
/// an empty line, then the body. Panics when a check lets through what it must refuse.
pub(crate) fn check_guard(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let Some(target) = lines.next() else {
        return;
    };
    let Ok(mut request) = Request::builder()
        .uri(target)
        .version(Version::HTTP_11)
        .body(())
    else {
        return;
    };
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value.trim()),
        ) {
            request.headers_mut().append(name, value);
        }
    }
    let _ = misframed(&request.clone().map(|()| axum::body::Body::empty()));
    let loopback: Vec<String> = LOOPBACK_HOSTS.map(str::to_owned).to_vec();
    let hosts = AllowedHosts::new(&loopback);
    if check_host(&hosts, Version::HTTP_11, request.uri(), request.headers()).is_ok() {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|value| value.to_str().ok());
        assert!(
            host.is_some_and(is_loopback_authority),
            "check_host let through the Host {host:?}"
        );
    }
    let origins: Vec<String> = LOOPBACK_ORIGINS.map(str::to_owned).to_vec();
    if check_origin(&origins, request.headers()).is_ok()
        && let Some(origin) = request.headers().get(header::ORIGIN)
    {
        let origin = origin.to_str().unwrap_or("");
        // Schemes are case-insensitive (RFC 3986 §3.1).
        let authority = origin.split_once("://").and_then(|(scheme, rest)| {
            ["http", "https"]
                .iter()
                .any(|known| scheme.eq_ignore_ascii_case(known))
                .then(|| rest.split(['/', '?', '#']).next().unwrap_or(rest))
        });
        assert!(
            authority.is_some_and(is_loopback_authority),
            "check_origin let through the Origin {origin:?}"
        );
    }
    // The literals of any body: read without a panic, and only where the text has them.
    if let Some(literals) = number_literals_of(body.as_bytes()) {
        assert!(
            !literals.is_empty(),
            "an empty set of literals was recorded"
        );
    }
}

/// Whether `authority` is a loopback name or address with, at most, a numeric port.
fn is_loopback_authority(authority: &str) -> bool {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => return false,
        },
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let host = host.to_ascii_lowercase();
    LOOPBACK_HOSTS.contains(&host.as_str()) && port.is_none_or(|port| port.parse::<u16>().is_ok())
}
