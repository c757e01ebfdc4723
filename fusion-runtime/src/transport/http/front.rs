//! The front door: what each HTTP request meets first when the server serves HTTP itself
//! (`Server::serve_http`). A POST to the MCP path is checked here (framing, the session
//! prefix, the guard's checks) and, when it is a call this transport serves itself
//! (`direct.rs`), answered here, without axum's router and its middleware (issue 32:
//! their boxed services and futures cost a seventh of a call's CPU). Everything else, and
//! a POST not served here (marked [`Admitted`], so that the router's layers pass it on
//! unchecked), goes to the router. Every answer closes its connection while draining.
//!
//! An application that mounts the router (`Server::http_router`) has the same checks
//! and the same direct calls through the router's own layers.

use std::{convert::Infallible, net::IpAddr, sync::Arc};

use axum::{
    Router,
    body::Body,
    extract::Request,
    http::{Method, Version},
    response::Response,
};
use tower_service::Service as _;

use super::{
    clients::client_over_budget,
    guard::{
        Checked, HttpState, check, close_if_draining, misframed, serve_direct, strip_session_prefix,
    },
    refusal::Refusal,
};
use crate::identity::ClientAddr;

/// The service each connection serves (`conn.rs`): the front door, then the router.
#[derive(Clone)]
pub(super) struct FrontDoor {
    state: Arc<HttpState>,
    router: Router,
    /// The MCP path.
    path: Arc<str>,
    /// The connection's peer (`conn.rs` sets it for each connection).
    peer: Option<IpAddr>,
}

impl FrontDoor {
    pub(super) fn new(state: Arc<HttpState>, router: Router, path: &str) -> Self {
        Self {
            state,
            router,
            path: Arc::from(path),
            peer: None,
        }
    }

    /// The front door of one connection, from `peer`.
    pub(super) fn for_peer(&self, peer: IpAddr) -> Self {
        Self {
            peer: Some(peer),
            ..self.clone()
        }
    }

    /// Whether `peer` is a proxy trusted to name its clients.
    pub(super) fn trusts(&self, peer: IpAddr) -> bool {
        self.state.trusted_proxies.trusts(peer)
    }

    /// The answer to `request`.
    pub(super) async fn serve(
        mut self,
        request: hyper::Request<hyper::body::Incoming>,
    ) -> Result<Response, Infallible> {
        let mut request = request.map(Body::new);
        let http1 = request.version() <= Version::HTTP_11;
        // Who the client is; behind a trusted proxy, a place in that client's budget,
        // which the answer's body holds.
        let mut place = None;
        if let Some(peer) = self.peer {
            let (client, forwarded) = self.state.trusted_proxies.client(peer, request.headers());
            if forwarded {
                let clients = &self.state.forwarded_clients;
                match clients.take(client) {
                    Some(held) => place = Some(held),
                    None => return Ok(client_over_budget(client, clients.max())),
                }
            }
            request.extensions_mut().insert(ClientAddr(client));
        }
        let mut response =
            if request.method() == Method::POST && request.uri().path() == &*self.path {
                self.post(request).await
            } else {
                self.route(request).await
            };
        close_if_draining(&self.state, http1, &mut response);
        Ok(match place {
            Some(place) => place.hold(response),
            None => response,
        })
    }

    /// The answer to a request on a connection over its budget (`conn.rs`): the probes
    /// are answered as always, anything else gets `503` with `Retry-After`, and the
    /// connection closes after it.
    pub(super) async fn refuse(
        self,
        request: hyper::Request<hyper::body::Incoming>,
        why: Refusal,
    ) -> Result<Response, Infallible> {
        if request.method() == Method::GET && matches!(request.uri().path(), "/healthz" | "/readyz")
        {
            return self.serve(request).await;
        }
        super::refusal::drain(request.into_body()).await;
        Ok(why.into_response())
    }

    /// A POST to the MCP path: served here when it is a call that goes direct.
    async fn post(&mut self, mut request: Request) -> Response {
        if let Some(refusal) = misframed(&request) {
            return refusal;
        }
        if let Some(refusal) = strip_session_prefix(&self.state, &mut request) {
            return refusal;
        }
        let post = match check(&self.state, request).await {
            Ok(Checked::Post(post)) => post,
            // Only a POST comes here; anything else is the router's.
            Ok(Checked::Other(request)) => return self.route(request).await,
            Err(refusal) => return refusal,
        };
        match serve_direct(&self.state, post).await {
            // A call's answer names no session: nothing for the prefix to do.
            Ok(answer) => answer,
            Err(post) => self.route(post.into_admitted_request()).await,
        }
    }

    /// The router's answer.
    async fn route(&mut self, request: Request) -> Response {
        match self.router.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}
