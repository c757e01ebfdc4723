//! `notifications/tools/list_changed` for a session whose caller is shown other tools than
//! before: a new token with other scopes, or a visibility rule that answers otherwise now
//! (`setup/visibility.rs`). Each `tools/list` and `tools/call` of a session compares what its
//! caller is shown with what the session was last shown.

use rmcp::{RoleServer, service::RequestContext};

use crate::{identity::RequestInfo, setup::server::Server};

impl<C: Send + Sync + 'static> Server<C> {
    /// Remembers what the caller of `request` is shown, for its session; when that changed,
    /// tells the session's client its tool list changed.
    pub(crate) fn note_shown(&self, request: &RequestInfo, context: &RequestContext<RoleServer>) {
        let Some(peers) = &self.session_peers else {
            // No session to remember for (stdio has one client and no tokens).
            return;
        };
        let Some(shown) = self.shown(request) else {
            return;
        };
        let now = shown.fingerprint();
        if peers
            .swap_shown(&context.extensions, now)
            .is_some_and(|before| before != now)
        {
            // Sent on the session's own stream, whatever becomes of this request.
            let peer = context.peer.clone();
            tokio::spawn(async move {
                if let Err(error) = peer.notify_tool_list_changed().await {
                    tracing::debug!(target: "fusion::server", %error, "tools/list_changed not sent");
                }
            });
        }
    }
}
