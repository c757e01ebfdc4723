//! Who a request comes from, and what one client may hold at once (issue 57).
//!
//! The client is the connection's peer, unless that peer is a proxy this server trusts
//! ([`HttpOptions::trusted_proxies`]): then it is the address the proxy names in
//! `Forwarded` (RFC 7239) or, without it, `X-Forwarded-For`, read from the right and
//! skipping every trusted proxy on the way (the rightmost untrusted address: the one
//! the first trusted proxy saw connect). A header from any other peer is ignored, so a
//! client cannot forge its way into another's budget or out of its own.
//!
//! Behind a trusted proxy the connection-level bound on a peer (`conn.rs`) does not
//! apply, since one proxy carries many clients over its connections; the same budget
//! then holds per client, request by request: a client holds at most
//! `max_connections_per_peer` requests (event streams included) open at once, and a
//! request over it gets `503` with `Retry-After`.

use std::{
    collections::HashMap,
    hash::Hash,
    net::IpAddr,
    sync::{Arc, Mutex, PoisonError},
};

use axum::{
    body::Body,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse as _, Response},
};
use futures_util::StreamExt as _;
use http_ip::http::HeaderMapClientIp as _;
use ipnet::IpNet;

use super::options::{HttpConfigError, HttpOptions};

impl HttpOptions {
    /// The proxies whose `Forwarded` and `X-Forwarded-For` headers name the client: single
    /// addresses (`10.0.0.5`, `::1`) or ranges (`10.0.0.0/8`, `fd00::/8`). None by default,
    /// so by default every client is the address that connects.
    ///
    /// From a trusted proxy the client is the rightmost address in those headers that is
    /// not itself a trusted proxy; the per-peer budget
    /// ([`max_connections_per_peer`](Self::max_connections_per_peer)) then bounds each
    /// client's open requests instead of the proxy's connections, and the per-client stream
    /// budget ([`max_streams_per_client`](Self::max_streams_per_client)) the client's
    /// streams. From any other peer the headers are ignored: a client that forges them
    /// changes nothing. Handlers read the client's address with
    /// [`RequestInfo::client_addr`](crate::identity::RequestInfo::client_addr).
    ///
    /// An entry that is neither an address nor a range makes
    /// [`Server::serve_http_with`](crate::Server::serve_http_with) exit with
    /// [`EXIT_CONFIG`](crate::exit::EXIT_CONFIG), naming it.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// // nginx on the same host, and the load balancers' subnet.
    /// let options = HttpOptions::default().trusted_proxies(["127.0.0.1", "10.1.0.0/16"]);
    /// # drop(options);
    /// ```
    pub fn trusted_proxies<I, S>(mut self, proxies: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.trusted_proxies = proxies.into_iter().map(Into::into).collect();
        self
    }
}

/// The proxies trusted to name the client (`HttpOptions::trusted_proxies`), parsed.
#[derive(Clone, Debug, Default)]
pub(super) struct TrustedProxies(Arc<[IpNet]>);

impl TrustedProxies {
    /// The ranges of `entries`; the first that is neither an address nor a range is the
    /// error.
    pub(super) fn parse(entries: &[String]) -> Result<Self, HttpConfigError> {
        entries
            .iter()
            .map(|entry| {
                let entry = entry.trim();
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        HttpConfigError(format!(
                            "trusted_proxies: {entry:?} is neither an IP address (10.0.0.5) nor a range (10.0.0.0/8)"
                        ))
                    })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|ranges| Self(ranges.into()))
    }

    /// Whether `peer` is a trusted proxy.
    pub(super) fn trusts(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.0.iter().any(|range| range.contains(&peer))
    }

    /// The client of a request that `peer` sent with `headers`, and whether a trusted
    /// proxy named it.
    pub(super) fn client(&self, peer: IpAddr, headers: &HeaderMap) -> (IpAddr, bool) {
        let peer = peer.to_canonical();
        if !self.trusts(peer) {
            return (peer, false);
        }
        // Nothing forwarded, or only trusted proxies: the proxy's own request (its
        // health check), counted as the proxy's.
        let named = headers
            .extract_filtered_forwarded_ip(&Trusted(self))
            .map(|client| client.to_canonical());
        (named.unwrap_or(peer), true)
    }
}

/// The filter `http_ip` skips addresses with: the trusted proxies.
struct Trusted<'a>(&'a TrustedProxies);

impl http_ip::filter::Filter for Trusted<'_> {
    fn is_match(&self, ip: IpAddr) -> bool {
        self.0.trusts(ip)
    }
}

/// How many of something each holder has open now (a peer's connections, a client's
/// requests), bounded per holder.
pub(super) struct Holdings<K: Eq + Hash + Clone> {
    max: usize,
    held: Mutex<HashMap<K, usize>>,
}

/// One of a holder's places in [`Holdings`], given back on drop.
pub(super) struct Held<K: Eq + Hash + Clone> {
    holdings: Arc<Holdings<K>>,
    holder: K,
}

impl<K: Eq + Hash + Clone> Holdings<K> {
    pub(super) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            held: Mutex::default(),
        })
    }

    /// The most one holder may have open.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// A place for one more of `holder`'s, unless it holds as many as it may.
    pub(super) fn take(self: &Arc<Self>, holder: K) -> Option<Held<K>> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(holder.clone()).or_default();
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(Held {
            holdings: Arc::clone(self),
            holder,
        })
    }

    /// How many `holder` has open.
    #[cfg(test)]
    fn of(&self, holder: &K) -> usize {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.get(holder).copied().unwrap_or(0)
    }
}

impl<K: Eq + Hash + Clone> Drop for Held<K> {
    fn drop(&mut self) {
        let mut held = self
            .holdings
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.holder) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.holder);
            }
        }
    }
}

impl Held<IpAddr> {
    /// `response` with its body holding this place: it is given back when the body ends
    /// or the client goes.
    pub(super) fn hold(self, response: Response) -> Response {
        let (parts, body) = response.into_parts();
        let stream = body.into_data_stream().map(move |chunk| {
            let _held = &self;
            chunk
        });
        Response::from_parts(parts, Body::from_stream(stream))
    }
}

/// How long a client over its budget is asked to wait, in seconds.
const RETRY_AFTER_SECONDS: &str = "1";

/// The `503` of a client that holds as many requests open as it may.
pub(super) fn client_over_budget(client: IpAddr, max: usize) -> Response {
    tracing::debug!(target: "fusion::server", %client, max, "a request was refused: its client holds as many open as it may");
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(
            header::RETRY_AFTER,
            HeaderValue::from_static(RETRY_AFTER_SECONDS),
        )],
        format!(
            "Service Unavailable: this client holds {max} requests open, as many as one may; try again later\n"
        ),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted(entries: &[&str]) -> TrustedProxies {
        let entries: Vec<String> = entries.iter().map(|entry| (*entry).to_owned()).collect();
        TrustedProxies::parse(&entries).expect("valid entries")
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).expect("a header value"));
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let proxies = trusted(&["10.0.0.0/8"]);
        let forged = headers(&[("x-forwarded-for", "1.2.3.4"), ("forwarded", "for=5.6.7.8")]);
        assert_eq!(
            proxies.client(ip("192.0.2.7"), &forged),
            (ip("192.0.2.7"), false)
        );
        assert_eq!(
            TrustedProxies::default().client(ip("10.0.0.1"), &forged),
            (ip("10.0.0.1"), false),
            "nothing is trusted by default"
        );
    }

    #[test]
    fn a_trusted_proxy_names_the_rightmost_untrusted_address() {
        let proxies = trusted(&["127.0.0.1", "10.0.0.0/8"]);
        // A client-supplied (forged) leftmost entry is passed over: the first trusted
        // proxy appended the address it saw.
        let chain = headers(&[("x-forwarded-for", "6.6.6.6, 198.51.100.4, 10.2.3.4")]);
        assert_eq!(
            proxies.client(ip("127.0.0.1"), &chain),
            (ip("198.51.100.4"), true)
        );
        let forwarded = headers(&[("forwarded", "for=203.0.113.9;proto=https, for=10.0.0.3")]);
        assert_eq!(
            proxies.client(ip("10.9.9.9"), &forwarded),
            (ip("203.0.113.9"), true)
        );
        let v6 = headers(&[("forwarded", r#"for="[2001:db8::1]:4711""#)]);
        assert_eq!(
            proxies.client(ip("127.0.0.1"), &v6),
            (ip("2001:db8::1"), true)
        );
    }

    #[test]
    fn a_trusted_proxys_own_request_is_the_proxys() {
        let proxies = trusted(&["127.0.0.1"]);
        assert_eq!(
            proxies.client(ip("127.0.0.1"), &HeaderMap::new()),
            (ip("127.0.0.1"), true)
        );
        let garbage = headers(&[("x-forwarded-for", "not an address")]);
        assert_eq!(proxies.client(ip("127.0.0.1"), &garbage).0, ip("127.0.0.1"));
    }

    #[test]
    fn a_mapped_v4_peer_is_its_v4_address() {
        let proxies = trusted(&["127.0.0.1"]);
        assert!(proxies.trusts(ip("::ffff:127.0.0.1")));
    }

    #[test]
    fn an_entry_that_is_no_address_is_named() {
        let error = TrustedProxies::parse(&["10.0.0.0/8".to_owned(), "nginx".to_owned()])
            .expect_err("not an address");
        assert!(error.to_string().contains("\"nginx\""), "{error}");
        assert!(TrustedProxies::parse(&["10.0.0.0/33".to_owned()]).is_err());
    }

    #[test]
    fn a_holder_holds_at_most_its_share_and_gets_it_back() {
        let holdings = Holdings::new(2);
        let client = ip("192.0.2.1");
        let first = holdings.take(client).expect("room");
        let _second = holdings.take(client).expect("room");
        assert!(holdings.take(client).is_none(), "at its share");
        assert!(holdings.take(ip("192.0.2.2")).is_some(), "others are not");
        drop(first);
        assert_eq!(holdings.of(&client), 1);
        assert!(holdings.take(client).is_some(), "a place came back");
    }
}
