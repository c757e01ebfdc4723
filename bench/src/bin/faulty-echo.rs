//! `faulty-echo`: a deliberately misbehaving echo server, to prove that the load driver
//! reports what a broken server does instead of hanging or panicking. It handshakes
//! correctly, then, counting `tools/call` requests from 1:
//!
//! - `--duplicate-every N`: answers every Nth call twice;
//! - `--drop-every N`: never answers every Nth call;
//! - `--error-every N`: answers every Nth call with a JSON-RPC error;
//! - `--is-error-every N`: answers every Nth call with `isError: true`;
//! - `--garbage-every N`: writes a line that is not JSON before every Nth answer;
//! - `--wrong-id-every N`: answers every Nth call with an id never sent;
//! - `--exit-after N`: exits (code 3) after N calls, without answering the Nth;
//! - `--hang-after N`: stops reading and writing after N calls.
//!
//! Used by `tests/driver.rs`; not a benchmark subject.

use std::{
    io::{self, BufRead as _, Write as _},
    process::ExitCode,
    time::Duration,
};

use fusion_bench::cli::Args;
use serde_json::{Value, json};

fn main() -> ExitCode {
    let keys = [
        "duplicate-every",
        "drop-every",
        "error-every",
        "is-error-every",
        "garbage-every",
        "wrong-id-every",
        "exit-after",
        "hang-after",
    ];
    let args = match Args::parse(std::env::args().skip(1), &keys, &[]) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("faulty-echo: {message}");
            return ExitCode::from(2);
        }
    };
    let every = |key: &str| args.parse_or(key, 0u64).unwrap_or(0);
    let hits = |key: &str, n: u64| {
        let every = every(key);
        every > 0 && n.is_multiple_of(every)
    };
    let stdin = io::stdin();
    let mut out = io::stdout().lock();
    let mut calls = 0u64;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = request.get("id").cloned() else {
            continue;
        };
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let mut lines: Vec<Value> = Vec::new();
        match method {
            "initialize" => lines.push(json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "faulty-echo", "version": "0"}}})),
            "tools/list" => lines.push(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}}]}})),
            "tools/call" => {
                calls += 1;
                let n = calls;
                if every("exit-after") == n {
                    let _ = out.flush();
                    return ExitCode::from(3);
                }
                if every("hang-after") == n {
                    let _ = out.flush();
                    loop {
                        std::thread::sleep(Duration::from_secs(3600));
                    }
                }
                if hits("drop-every", n) {
                    continue;
                }
                if hits("garbage-every", n) {
                    let _ = writeln!(out, "this is not JSON");
                }
                let id = if hits("wrong-id-every", n) {
                    json!(u64::MAX)
                } else {
                    id
                };
                let text = request.pointer("/params/arguments/text").cloned();
                let answer = if hits("error-every", n) {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "boom"}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id, "result": {
                        "content": [{"type": "text", "text": text}],
                        "isError": hits("is-error-every", n)}})
                };
                if hits("duplicate-every", n) {
                    lines.push(answer.clone());
                }
                lines.push(answer);
            }
            _ => lines.push(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
            ),
        }
        for line in lines {
            if writeln!(out, "{line}").is_err() {
                return ExitCode::SUCCESS;
            }
        }
        let _ = out.flush();
    }
    ExitCode::SUCCESS
}
