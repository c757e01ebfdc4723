//! Rendering: the outcome of a call becomes exactly one `CallToolResult` (presentation on
//! success only, internal details masked), with the layers the tester inspects.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use crate::{
    failure::panic as recover,
    failure::{Failure, FailureKind, Target},
    log::Redactor,
    meta::{FAILURE_META_KEY, ISSUES_META_KEY},
    tool::output::Outcome,
    tool::present::UiBlock,
};

/// The full answer to one call: the wire result and, for the tester, the layers around it.
#[derive(Clone, Debug)]
pub(crate) struct CallReport {
    pub(crate) result: CallToolResult,
    pub(crate) data: Value,
    pub(crate) system_rules: Vec<String>,
    pub(crate) ui_blocks: Vec<UiBlock>,
    /// The handler returned a fatal error.
    pub(crate) fatal: bool,
    /// The failure was the server's (a panic, an internal or fatal error), its details
    /// masked: a task reports it as `failed`, not as a tool error.
    pub(crate) internal: bool,
}

pub(super) struct Rendered {
    pub(super) report: CallReport,
    pub(super) failure: Option<Failure>,
}

/// Renders the outcome of a call as exactly one result; `wrap_structured`: the tool's
/// structured output is wrapped in `{"result": ..}` (a value that is not an object).
/// Returns the name the call is logged and counted under.
/// `max_output`: the tool's output limit (`None` when no tool was resolved).
pub(super) fn render(
    target: &Target<'_>,
    wrap_structured: bool,
    max_output: Option<usize>,
    outcome: Outcome,
    correlation_id: &recover::CorrelationId,
    redactor: &Redactor,
) -> (Rendered, &'static str) {
    let mut failure = match outcome {
        Outcome::Success(output) => {
            let data_is_text = output.data_is_text;
            let mut rendered = render_success(wrap_structured, output);
            let result = &mut rendered.report.result;
            match max_output.map(|limit| super::output_limit::hold(result, limit)) {
                Some(Err(too_large)) => too_large,
                _ => {
                    if data_is_text {
                        // The tester's view of a text result: the text as the client got it.
                        let report = &mut rendered.report;
                        report.data = report
                            .result
                            .content
                            .first()
                            .and_then(|block| block.as_text())
                            .map_or(Value::Null, |text| Value::String(text.text.clone()));
                    }
                    return (rendered, crate::failure::outcome::OK);
                }
            }
        }
        Outcome::Failure(failure) => failure,
    };
    // Before the issues become text: a secret that failed a check is not quoted, and
    // text that quotes input is cut (after the redaction, which needs whole values).
    if let FailureKind::InvalidArguments(issues) = &mut failure.kind {
        redactor.issues(issues);
    }
    // What the model reads never repeats a secret argument, even when an error
    // message or an invalid value quotes it.
    let message = redactor.text(&failure.message(target, correlation_id.as_str()));
    // The issues as programs read them, redacted like the text.
    let issues = match &failure.kind {
        FailureKind::InvalidArguments(issues) => Some(
            issues
                .iter()
                .map(|issue| redactor.json(crate::validate::issue_json(issue)))
                .collect::<Vec<Value>>(),
        ),
        _ => None,
    };
    let mut meta = Map::new();
    if let Some(details) = &issues {
        // Kept beside the entry's own copy for clients written before `fusion/failure`.
        meta.insert(ISSUES_META_KEY.to_owned(), Value::Array(details.clone()));
    }
    let entry = failure.entry(correlation_id.as_str(), issues);
    meta.insert(
        FAILURE_META_KEY.to_owned(),
        serde_json::to_value(&entry).unwrap_or(Value::Null),
    );
    let meta = Some(rmcp::model::MetaObject(meta));
    if failure.is_warning() {
        // Advice, not a failure: the model reads it as the tool's answer.
        let report = CallReport {
            result: CallToolResult::success(vec![ContentBlock::text(message.clone())])
                .with_meta(meta),
            data: Value::String(message),
            system_rules: Vec::new(),
            ui_blocks: Vec::new(),
            fatal: false,
            internal: false,
        };
        return (
            Rendered {
                report,
                failure: Some(failure),
            },
            "warning",
        );
    }
    let result = CallToolResult::error(vec![ContentBlock::text(message.clone())]).with_meta(meta);
    let name = failure.outcome_name();
    // No presentation layers on failure: no partial data leaks.
    let report = CallReport {
        result,
        data: Value::String(message),
        system_rules: Vec::new(),
        ui_blocks: Vec::new(),
        fatal: false,
        internal: failure.is_masked(),
    };
    (
        Rendered {
            report,
            failure: Some(failure),
        },
        name,
    )
}

fn render_success(wrap_structured: bool, output: crate::tool::output::ToolOutput) -> Rendered {
    let crate::tool::output::ToolOutput {
        mut content,
        mut structured,
        mut data,
        presentation,
        ..
    } = output;
    if content.is_empty() {
        content.push(ContentBlock::text("done (the tool returned no content)"));
    }
    let (system_rules, ui_blocks) = match &presentation {
        Some(presentation) => {
            let rules =
                crate::tool::present::apply(presentation, &mut data, &mut structured, &mut content);
            (rules, presentation.ui.clone())
        }
        None => (Vec::new(), Vec::new()),
    };
    let wrap = wrap_structured;
    let structured = structured.map(|value| {
        if wrap {
            let mut object = Map::new();
            object.insert("result".into(), value);
            Value::Object(object)
        } else {
            value
        }
    });
    let mut result = CallToolResult::success(content);
    result.structured_content = structured;
    Rendered {
        report: CallReport {
            result,
            data,
            system_rules,
            ui_blocks,
            fatal: false,
            internal: false,
        },
        failure: None,
    }
}
