//! `floor-echo`: the floor for the comparison. A bare synchronous MCP responder over
//! stdio: one thread, lines in through a `BufReader`, answers out through a `BufWriter`
//! flushed when no more input is buffered. It answers `initialize`, `ping`, `tools/list`
//! and `tools/call` of its one tool, `echo(text)`, correctly, and nothing more: no
//! validation beyond serde's, no logging, no concurrency. Whatever a framework adds to
//! this is its cost.

use std::{
    io::{self, BufRead as _, BufReader, BufWriter, Write as _},
    process::ExitCode,
};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A request or notification, as far as the floor reads it.
#[derive(Deserialize)]
struct Request {
    #[serde(default)]
    id: Option<Value>,
    method: String,
    #[serde(default)]
    params: Option<Value>,
}

/// The parameters of `tools/call` for `echo`.
#[derive(Deserialize)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<EchoArgs>,
}

#[derive(Deserialize)]
struct EchoArgs {
    text: String,
}

#[derive(Serialize)]
struct Response<'a, R: Serialize> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: R,
}

#[derive(Serialize)]
struct ErrorResponse<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: ErrorBody<'a>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: i32,
    message: &'a str,
}

#[derive(Serialize)]
struct CallResult<'a> {
    content: [TextContent<'a>; 1],
    #[serde(rename = "isError")]
    is_error: bool,
}

#[derive(Serialize)]
struct TextContent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

const SUPPORTED: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

fn main() -> ExitCode {
    match serve() {
        Ok(()) => ExitCode::SUCCESS,
        // A closed stdout means the client is gone: nothing to report it to.
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("floor-echo: {error}");
            ExitCode::FAILURE
        }
    }
}

fn serve() -> io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, io::stdin());
    let mut output = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        answer(&line, &mut output)?;
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
    output.flush()
}

fn answer(line: &[u8], out: &mut impl io::Write) -> io::Result<()> {
    let request: Request = match serde_json::from_slice(line) {
        Ok(request) => request,
        Err(_) if line.iter().all(u8::is_ascii_whitespace) => return Ok(()),
        Err(_) => return error(out, &Value::Null, -32700, "parse error"),
    };
    // Notifications (no id) get no answer.
    let Some(id) = request.id.as_ref() else {
        return Ok(());
    };
    match request.method.as_str() {
        "tools/call" => {
            let params = request.params.map(CallParams::deserialize);
            match params {
                Some(Ok(CallParams {
                    name,
                    arguments: Some(EchoArgs { text }),
                })) if name == "echo" => {
                    let result = CallResult {
                        content: [TextContent {
                            kind: "text",
                            text: &text,
                        }],
                        is_error: false,
                    };
                    respond(out, id, result)
                }
                Some(Ok(CallParams { name, .. })) if name != "echo" => {
                    error(out, id, -32602, "unknown tool")
                }
                _ => {
                    let result = CallResult {
                        content: [TextContent {
                            kind: "text",
                            text: "echo needs {\"text\": string}",
                        }],
                        is_error: true,
                    };
                    respond(out, id, result)
                }
            }
        }
        "initialize" => {
            let asked = request
                .params
                .as_ref()
                .and_then(|params| params.get("protocolVersion"))
                .and_then(Value::as_str)
                .filter(|version| SUPPORTED.contains(version))
                .unwrap_or(SUPPORTED[0]);
            let result = json!({
                "protocolVersion": asked,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "floor-echo", "version": env!("CARGO_PKG_VERSION")}
            });
            respond(out, id, result)
        }
        "tools/list" => {
            let result = json!({"tools": [{
                "name": "echo",
                "description": "Echo the text back, unchanged.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "The text to send back."}},
                    "required": ["text"]
                }
            }]});
            respond(out, id, result)
        }
        "ping" => respond(out, id, json!({})),
        _ => error(out, id, -32601, "method not found"),
    }
}

fn respond(out: &mut impl io::Write, id: &Value, result: impl Serialize) -> io::Result<()> {
    let response = Response {
        jsonrpc: "2.0",
        id,
        result,
    };
    serde_json::to_writer(&mut *out, &response)?;
    out.write_all(b"\n")
}

fn error(out: &mut impl io::Write, id: &Value, code: i32, message: &str) -> io::Result<()> {
    let response = ErrorResponse {
        jsonrpc: "2.0",
        id,
        error: ErrorBody { code, message },
    };
    serde_json::to_writer(&mut *out, &response)?;
    out.write_all(b"\n")
}
