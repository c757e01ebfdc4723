//! An upstream's tools, listed page by page (at most [`MAX_TOOLS`]), and how long one not
//! reached yet is waited for: between the tries of a start (`RETRY_CONNECT`), and between
//! those of the refresh once the server runs without it ([`FIRST_RETRY`] to
//! [`LAST_RETRY`], `refresh.rs`).

use std::time::Duration;

use serde_json::{Value, json};

use super::{link::Link, link_error::LinkError};

/// How long an upstream not reached yet is first waited for before another try while the
/// server runs, and the longest wait the tries back off to.
pub(super) const FIRST_RETRY: Duration = Duration::from_secs(1);
pub(super) const LAST_RETRY: Duration = Duration::from_secs(30);

/// The most tools taken from one upstream, and the most pages of `tools/list` read.
const MAX_TOOLS: usize = 1000;
const MAX_PAGES: usize = 100;

/// The upstream's tools, asked for again while it cannot be reached (an upstream started
/// beside this server may not listen yet), until `within` runs out.
pub(super) async fn until_listed(link: &Link, within: Duration) -> Result<Vec<Value>, String> {
    let deadline = tokio::time::Instant::now() + within;
    let mut last = String::from("no answer");
    loop {
        match tokio::time::timeout_at(deadline, list_tools(link)).await {
            Ok(Ok(listed)) => return Ok(listed),
            // Not reached: worth another try. Anything else is the upstream's answer.
            Ok(Err(LinkError::NotSent(why))) => last = why,
            Ok(Err(error)) => return Err(error.to_string()),
            Err(_) => return Err(format!("no tool list within {within:?} ({last})")),
        }
        if tokio::time::Instant::now() + RETRY_CONNECT >= deadline {
            return Err(format!("not reached within {within:?}: {last}"));
        }
        tokio::time::sleep(RETRY_CONNECT).await;
    }
}

/// How long a start waits between two tries to reach an upstream.
const RETRY_CONNECT: Duration = Duration::from_millis(200);

/// Every tool the upstream lists, page after page, up to [`MAX_TOOLS`].
pub(super) async fn list_tools(link: &Link) -> Result<Vec<Value>, LinkError> {
    link.connect().await?;
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = link.request("tools/list", params).await?;
        if let Some(Value::Array(listed)) = page.get("tools") {
            tools.extend(listed.iter().take(MAX_TOOLS - tools.len()).cloned());
        }
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if cursor.is_none() || tools.len() >= MAX_TOOLS {
            break;
        }
    }
    Ok(tools)
}
