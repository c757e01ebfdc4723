//! Presentation layers around a tool's data (MVA: model, view, agent): UI blocks for the
//! client and system rules for the model. A failed call carries neither.

use serde::{Deserialize, Serialize};

/// A block of user-facing presentation attached to a successful result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum UiBlock {
    /// Markdown text.
    Markdown {
        /// The markdown source.
        text: String,
    },
    /// A JSON document.
    Json {
        /// The value.
        value: serde_json::Value,
    },
}
