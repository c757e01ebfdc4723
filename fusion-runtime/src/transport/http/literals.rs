//! The number literals of a `tools/call` body over HTTP, recorded in `params._meta` the way
//! the stdio transport records them, so that the pipeline sees numbers exactly as sent.

use std::{
    borrow::Cow,
    collections::{BTreeMap, HashMap},
};

use axum::body::Bytes;
use serde::de::IgnoredAny;
use serde_json::{
    Map, Value,
    value::{RawValue, to_raw_value},
};

use crate::{meta::NUMBER_LITERALS_META_KEY, validate::literal};

/// A `tools/call` body with the number literals of its arguments recorded in
/// `params._meta` (see [`crate::validate::literal`]), the way the stdio transport records
/// them: only the literals a JSON value cannot hold exactly, and any value a client sent
/// under the key removed. Other bodies, and calls without such numbers, pass unchanged.
/// The arguments' text is kept byte for byte: only `_meta` is rewritten.
pub(super) fn record_number_literals(body: Bytes) -> Bytes {
    /// The members that decide whether there is anything to record.
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a RawValue>,
    }
    // A batch, or a message rmcp will refuse anyway: rmcp answers it as it is.
    let Ok(Message {
        method: Some(method),
        params: Some(params),
    }) = serde_json::from_slice::<Message<'_>>(&body)
    else {
        return body;
    };
    if method != "tools/call" {
        return body;
    }
    let Ok(members) = serde_json::from_str::<Params<'_>>(params.get()) else {
        return body;
    };
    let literals = members
        .arguments
        .map(|raw| literal::scan(raw.get()))
        .unwrap_or_default();
    let forged = members.meta.is_some_and(|raw| {
        serde_json::from_str::<HashMap<String, IgnoredAny>>(raw.get())
            .is_ok_and(|meta| meta.contains_key(NUMBER_LITERALS_META_KEY))
    });
    if literals.is_empty() && !forged {
        return body;
    }
    let rewritten = (|| {
        let mut message = serde_json::from_slice::<BTreeMap<String, Box<RawValue>>>(&body).ok()?;
        let mut params =
            serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(members_text(&message)?)
                .ok()?;
        let mut meta = params
            .get("_meta")
            .and_then(|raw| serde_json::from_str::<Map<String, Value>>(raw.get()).ok())
            .unwrap_or_default();
        literals.store_in(&mut meta);
        if meta.is_empty() {
            params.remove("_meta");
        } else {
            params.insert("_meta".to_owned(), to_raw_value(&meta).ok()?);
        }
        message.insert("params".to_owned(), to_raw_value(&params).ok()?);
        serde_json::to_vec(&message).ok()
    })();
    rewritten.map_or(body, Bytes::from)
}

/// The raw text of a message's `params`.
pub(super) fn members_text(message: &BTreeMap<String, Box<RawValue>>) -> Option<&str> {
    message.get("params").map(|raw| raw.get())
}
