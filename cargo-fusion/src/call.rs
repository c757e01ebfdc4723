//! `cargo fusion call`: one `tools/call` on the server (started over stdio, or at a
//! Streamable HTTP endpoint), its arguments from `key=value` pairs or a JSON object, its
//! result printed for a person to read.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::error::{CliError, CliResult, Verdict};
use crate::http_transport::HttpTransport;
use crate::server::ServerSelection;
use crate::session::{Reply, Session, Transport};
use crate::stdio_transport::StdioTransport;

/// The `_meta` key of fusion's failure for programs (`fusion_runtime::meta` has it too,
/// but a result read off the wire is plain JSON here).
const FAILURE_META_KEY: &str = "fusion/failure";

/// The arguments of the call: `base` (`--json`), then each `key=value` pair over it. A
/// value that parses as JSON is that JSON (`take=2`, `active=true`, `filter={"a":1}`);
/// any other is a string (`name=Ada`).
///
/// # Errors
/// When `base` is not a JSON object, or a pair has no `=`.
pub(crate) fn arguments(base: Option<&str>, pairs: &[String]) -> CliResult<Map<String, Value>> {
    let mut arguments = match base {
        None => Map::new(),
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(object)) => object,
            Ok(_) => {
                return Err(CliError::new(
                    "--json takes a JSON object: '{\"key\": value}'",
                ));
            }
            Err(error) => return Err(CliError::new(format!("--json is not valid JSON: {error}"))),
        },
    };
    for pair in pairs {
        let Some((key, text)) = pair.split_once('=') else {
            return Err(CliError::new(format!(
                "`{pair}` is not an argument: write key=value"
            )));
        };
        let value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
        arguments.insert(key.to_owned(), value);
    }
    Ok(arguments)
}

/// `cargo fusion call`: calls `tool` with `arguments` on the server at `url` (Streamable
/// HTTP), or else on the built server over stdio, and prints the result; the verdict is
/// `Failed` when the tool failed. Everything happens within `timeout`.
///
/// # Errors
/// When the server cannot be built, started or reached, or does not answer in time.
pub(crate) fn run(
    server: &ServerSelection,
    url: Option<&str>,
    tool: &str,
    arguments: Map<String, Value>,
    timeout: Duration,
    raw: bool,
) -> CliResult<Verdict> {
    let params = json!({ "name": tool, "arguments": arguments });
    let reply = match url {
        Some(url) => call(
            HttpTransport::connect(url, Instant::now() + timeout)?,
            params,
        )?,
        None => {
            let built = server.build()?;
            // The build is not timed: it takes as long as it takes, and shows its progress.
            let deadline = Instant::now() + timeout;
            call(
                StdioTransport::start(&built.executable, &built.name, deadline)?,
                params,
            )?
        }
    };
    let (text, failed) = match reply {
        Reply::Error(error) => (
            format!(
                "the server refused the call: {} (JSON-RPC error {})\n",
                error["message"].as_str().unwrap_or("no message"),
                error["code"]
            ),
            true,
        ),
        Reply::Result(result) if raw => {
            (format!("{}\n", pretty(&result)), result["isError"] == true)
        }
        Reply::Result(result) => (readable(&result), result["isError"] == true),
    };
    print!("{text}");
    Ok(if failed {
        Verdict::Failed
    } else {
        Verdict::Passed
    })
}

/// One `tools/call` in a new session over `transport`.
fn call(transport: impl Transport, params: Value) -> CliResult<Reply> {
    Session::initialize(transport)?.request("tools/call", params)
}

/// A `tools/call` result as a person reads it: the text content, the structured content
/// pretty-printed (a text that only repeats it as JSON is not printed twice), other
/// content by its kind, and a failure's class, code and hint.
fn readable(result: &Value) -> String {
    let structured = result.get("structuredContent");
    let mut text = String::new();
    if result["isError"] == true {
        text.push_str("the tool failed:\n");
    }
    for item in result["content"].as_array().map_or(&[][..], Vec::as_slice) {
        match item["type"].as_str() {
            Some("text") => {
                let body = item["text"].as_str().unwrap_or_default();
                if !repeats(body, structured) {
                    text.push_str(body);
                    text.push('\n');
                }
            }
            Some("resource") => {
                let resource = &item["resource"];
                match resource["text"].as_str() {
                    Some(body) => {
                        text.push_str(&format!("[resource {}]\n{body}\n", resource["uri"]));
                    }
                    None => text.push_str(&format!("[resource {}]\n", resource["uri"])),
                }
            }
            Some(kind) => text.push_str(&format!(
                "[{kind} content{}]\n",
                item["mimeType"]
                    .as_str()
                    .map_or_else(String::new, |mime| format!(", {mime}"))
            )),
            None => {}
        }
    }
    if let Some(structured) = structured {
        text.push_str(&pretty(structured));
        text.push('\n');
    }
    if let Some(failure) = result["_meta"].get(FAILURE_META_KEY) {
        for field in ["class", "code", "hint"] {
            if let Some(value) = failure[field].as_str() {
                text.push_str(&format!("{field}: {value}\n"));
            }
        }
    }
    text
}

/// Whether a text content only repeats the structured content as JSON (what a server
/// sends for clients that read no structured content): the object itself, or a value
/// that is not an object, which the structured content wraps as `{"result": ..}`.
fn repeats(text: &str, structured: Option<&Value>) -> bool {
    let Some(structured) = structured else {
        return false;
    };
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    let wrapped = structured
        .as_object()
        .filter(|object| object.len() == 1)
        .and_then(|object| object.get("result"));
    value == *structured || Some(&value) == wrapped
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_json_when_it_parses_and_a_string_otherwise() -> Result<(), CliError> {
        let pairs = [
            "take=2",
            "active=true",
            "name=Ada",
            "filter={\"a\":1}",
            "empty=",
        ]
        .map(str::to_owned);
        let parsed = arguments(Some(r#"{"take": 9, "kept": 1}"#), &pairs)?;
        assert_eq!(
            Value::Object(parsed),
            json!({"take": 2, "kept": 1, "active": true, "name": "Ada", "filter": {"a": 1}, "empty": ""})
        );
        Ok(())
    }

    #[test]
    fn a_pair_without_equals_is_refused() {
        assert!(arguments(None, &["take".to_owned()]).is_err());
        assert!(arguments(Some("[1]"), &[]).is_err());
    }

    #[test]
    fn a_failure_shows_its_class_code_and_hint() {
        let result = json!({
            "isError": true,
            "content": [{"type": "text", "text": "no user 9"}],
            "_meta": {"fusion/failure": {"class": "invalid_input", "code": "not_found", "hint": "list users first"}},
        });
        assert_eq!(
            readable(&result),
            "the tool failed:\nno user 9\nclass: invalid_input\ncode: not_found\nhint: list users first\n"
        );
    }
}
