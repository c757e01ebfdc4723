//! Presenters (MVA: model, view, agent): what a successful result carries besides its data.
//! System rules tell the model how to read or use the data; UI blocks show it to a person;
//! an agent limit cuts long collections so they do not flood the model's context. A failed
//! call carries none of them: no partial data leaks.
//!
//! ```
//! use fusion_runtime::{tool::Presentation, tool::UiBlock, prelude::*};
//!
//! #[mcp_type]
//! #[derive(Serialize, JsonSchema)]
//! struct User {
//!     name: String,
//! }
//!
//! fn users(list: &[User]) -> Presentation {
//!     Presentation::new()
//!         .rule("Refer to users by name; never show their ids.")
//!         .ui(UiBlock::table(["name"], list.iter().map(|u| vec![u.name.clone()])))
//!         .limit(50)
//! }
//!
//! /// List users.
//! #[mcp_tool(presenter = users)]
//! async fn list_users() -> Vec<User> {
//!     vec![User { name: "Ada".into() }]
//! }
//! # let _ = Server::builder("users", "0").tool(list_users).build();
//! ```

use rmcp::model::ContentBlock;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A block of user-facing presentation attached to a successful result. On the wire each
/// becomes one text block after the data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum UiBlock {
    /// Markdown text.
    Markdown {
        /// The markdown source.
        text: String,
    },
    /// A table.
    Table {
        /// Column headers.
        columns: Vec<String>,
        /// Rows of cells.
        rows: Vec<Vec<String>>,
    },
    /// A Mermaid diagram.
    Mermaid {
        /// The diagram source.
        source: String,
    },
    /// A JSON document.
    Json {
        /// The value.
        value: Value,
    },
    /// A chart specification (for example Vega-Lite).
    Chart {
        /// The specification.
        spec: Value,
    },
}

impl UiBlock {
    /// A markdown block.
    pub fn markdown(text: impl Into<String>) -> Self {
        Self::Markdown { text: text.into() }
    }

    /// A table from headers and rows.
    pub fn table<H, R>(
        columns: impl IntoIterator<Item = H>,
        rows: impl IntoIterator<Item = R>,
    ) -> Self
    where
        H: Into<String>,
        R: IntoIterator,
        R::Item: Into<String>,
    {
        Self::Table {
            columns: columns.into_iter().map(Into::into).collect(),
            rows: rows
                .into_iter()
                .map(|row| row.into_iter().map(Into::into).collect())
                .collect(),
        }
    }

    /// A Mermaid diagram.
    pub fn mermaid(source: impl Into<String>) -> Self {
        Self::Mermaid {
            source: source.into(),
        }
    }

    /// A JSON block.
    pub fn json(value: Value) -> Self {
        Self::Json { value }
    }

    /// A chart specification.
    pub fn chart(spec: Value) -> Self {
        Self::Chart { spec }
    }

    /// The block as the text a client shows.
    pub fn render(&self) -> String {
        match self {
            Self::Markdown { text } => text.clone(),
            Self::Table { columns, rows } => {
                let escape = |cell: &str| cell.replace('|', "\\|").replace('\n', " ");
                let mut text = format!(
                    "| {} |\n",
                    columns
                        .iter()
                        .map(|c| escape(c))
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
                text.push_str(&format!("|{}\n", " --- |".repeat(columns.len().max(1))));
                for row in rows {
                    text.push_str(&format!(
                        "| {} |\n",
                        row.iter()
                            .map(|c| escape(c))
                            .collect::<Vec<_>>()
                            .join(" | ")
                    ));
                }
                text.trim_end().to_owned()
            }
            Self::Mermaid { source } => format!("```mermaid\n{source}\n```"),
            Self::Json { value } => format!(
                "```json\n{}\n```",
                serde_json::to_string_pretty(value).unwrap_or_default()
            ),
            Self::Chart { spec } => format!(
                "```vega-lite\n{}\n```",
                serde_json::to_string_pretty(spec).unwrap_or_default()
            ),
        }
    }
}

/// What a presenter adds to a successful result.
#[derive(Clone, Debug, Default, PartialEq)]
#[must_use]
pub struct Presentation {
    pub(crate) rules: Vec<String>,
    pub(crate) ui: Vec<UiBlock>,
    pub(crate) limit: Option<usize>,
}

impl Presentation {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a system rule: an instruction for the model about this data.
    pub fn rule(mut self, rule: impl Into<String>) -> Self {
        self.rules.push(rule.into());
        self
    }

    /// Adds a UI block.
    pub fn ui(mut self, block: UiBlock) -> Self {
        self.ui.push(block);
        self
    }

    /// Cuts a list result to its first `max` items (the agent limit), with a note saying
    /// how many were left out.
    pub fn limit(mut self, max: usize) -> Self {
        self.limit = Some(max);
        self
    }

    /// The system rules.
    pub fn rules(&self) -> &[String] {
        &self.rules
    }

    /// The UI blocks.
    pub fn ui_blocks(&self) -> &[UiBlock] {
        &self.ui
    }
}

/// A function that presents a value, with or without the call's context:
/// `fn(&T) -> Presentation` or `fn(&T, &Ctx) -> Presentation`.
#[diagnostic::on_unimplemented(
    message = "this presenter cannot present the tool's result",
    label = "expected `fn(&T) -> Presentation` or `fn(&T, &Ctx) -> Presentation` for the tool's success type",
    note = "the presenter takes a reference to the value the tool returns (inside `Ok`), and optionally the tool's `#[ctx]` context"
)]
pub trait PresenterFn<T, C, Marker> {
    /// Presents `value`.
    fn present(&self, value: &T, ctx: &C) -> Presentation;
}

/// Marks a presenter that takes only the value (as `&U`, what the value borrows as).
#[doc(hidden)]
pub struct ValueOnly<U: ?Sized>(std::marker::PhantomData<fn(&U)>);

/// Marks a presenter that takes the value and the context.
#[doc(hidden)]
pub struct WithContext<U: ?Sized>(std::marker::PhantomData<fn(&U)>);

// A presenter may take what the value borrows as: `fn(&[User])` for a `Vec<User>`.
impl<T, U, C, F> PresenterFn<T, C, ValueOnly<U>> for F
where
    T: std::borrow::Borrow<U>,
    U: ?Sized,
    F: Fn(&U) -> Presentation,
{
    fn present(&self, value: &T, _ctx: &C) -> Presentation {
        self(value.borrow())
    }
}

impl<T, U, C, F> PresenterFn<T, C, WithContext<U>> for F
where
    T: std::borrow::Borrow<U>,
    U: ?Sized,
    F: Fn(&U, &C) -> Presentation,
{
    fn present(&self, value: &T, ctx: &C) -> Presentation {
        self(value.borrow(), ctx)
    }
}

/// Runs a presenter (what `#[mcp_tool(presenter = ..)]` generates a call to).
#[doc(hidden)]
pub fn present<T, C, M, F: PresenterFn<T, C, M>>(
    presenter: &F,
    value: &T,
    ctx: &C,
) -> Presentation {
    presenter.present(value, ctx)
}

/// The success with its presentation applied: the data cut to the agent limit, then the
/// blocks in order (data, UI blocks, rules).
pub(crate) fn apply(
    presentation: &Presentation,
    data: &mut Value,
    structured: &mut Option<Value>,
    content: &mut Vec<ContentBlock>,
) -> Vec<String> {
    let mut rules = presentation.rules.clone();
    if let Some(max) = presentation.limit
        && let Value::Array(items) = data
        && items.len() > max
    {
        let total = items.len();
        items.truncate(max);
        rules.push(format!(
            "Only the first {max} of {total} items are shown ({} left out); narrow the request to see the rest.",
            total - max
        ));
        if let Some(structured) = structured.as_mut() {
            *structured = data.clone();
        }
        // The data's text copy is the first block; it follows the cut.
        if let Some(first) = content.first_mut() {
            *first = ContentBlock::text(data.to_string());
        }
    }
    for block in &presentation.ui {
        content.push(ContentBlock::text(block.render()));
    }
    if !rules.is_empty() {
        let lines: Vec<String> = rules.iter().map(|rule| format!("- {rule}")).collect();
        content.push(ContentBlock::text(format!(
            "System rules:\n{}",
            lines.join("\n")
        )));
    }
    rules
}
