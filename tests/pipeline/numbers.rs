//! Numbers exactly as sent (issue 14, item 6): an argument arrives exactly as the client
//! wrote it, or the call is refused with a message naming the field, the type's range and
//! the literal as sent. Never rounded, clamped or truncated.
//!
//! - In memory (`Tester::call_json`, which parses arguments as a transport does): every
//!   integer width at, inside and beyond both bounds, in plain, float and exponent
//!   notation; fractions hidden by `f64`; `f32` overflow; the `json!` path without literals.
//! - Over stdio and Streamable HTTP against the quickstart's `add(a: i64, b: i64)`
//!   (`cargo build --examples` first). Every wait is bounded.

use crate::support;

use std::{
    path::PathBuf,
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use fusion_runtime::{
    prelude::*,
    testing::{TestResult, Tester},
};
use serde_json::{Value, json};

macro_rules! echo_tools {
    ($($name:ident: $ty:ty),* $(,)?) => {$(
        /// Echo the number received, as Rust prints it.
        #[mcp_tool]
        async fn $name(
            /// The number.
            v: $ty,
        ) -> String {
            v.to_string()
        }
    )*};
}

echo_tools!(
    echo_i8: i8, echo_i16: i16, echo_i32: i32, echo_i64: i64, echo_i128: i128,
    echo_u8: u8, echo_u16: u16, echo_u32: u32, echo_u64: u64, echo_u128: u128,
    echo_usize: usize, echo_f32: f32, echo_f64: f64,
);

/// Echo a list of integers and an optional one, to check paths inside values.
#[mcp_tool]
async fn echo_nested(
    /// Some integers.
    list: Vec<i16>,
    /// An optional wide integer.
    wide: Option<u128>,
) -> String {
    format!("{list:?} {wide:?}")
}

fn tester() -> Tester {
    Tester::new(
        Server::builder("numbers", "1.0.0")
            .tool(echo_i8)
            .tool(echo_i16)
            .tool(echo_i32)
            .tool(echo_i64)
            .tool(echo_i128)
            .tool(echo_u8)
            .tool(echo_u16)
            .tool(echo_u32)
            .tool(echo_u64)
            .tool(echo_u128)
            .tool(echo_usize)
            .tool(echo_f32)
            .tool(echo_f64)
            .tool(echo_nested)
            .build(),
    )
}

/// An integer of any width as sign and digits (`u128::MAX + 1` and `i128::MIN - 1`
/// included).
#[derive(Clone, Copy, Debug)]
struct Int {
    negative: bool,
    magnitude: u128,
}

impl Int {
    fn of_i128(value: i128) -> Self {
        Self {
            negative: value < 0,
            magnitude: value.unsigned_abs(),
        }
    }

    fn of_u128(value: u128) -> Self {
        Self {
            negative: false,
            magnitude: value,
        }
    }

    /// `self + delta` (delta ±1), as text: wide enough to step past `u128::MAX` and
    /// `i128::MIN`.
    fn step(self, delta: i8) -> String {
        const PAST_U128: &str = "340282366920938463463374607431768211456";
        let away_from_zero = (delta > 0) != self.negative;
        let magnitude = if away_from_zero {
            self.magnitude
                .checked_add(1)
                .map_or_else(|| PAST_U128.to_owned(), |m| m.to_string())
        } else if self.magnitude == 0 {
            return "-1".to_owned();
        } else {
            (self.magnitude - 1).to_string()
        };
        if self.negative && magnitude != "0" {
            format!("-{magnitude}")
        } else {
            magnitude
        }
    }
}

/// `digits` (an optional `-` then decimal digits) in the three notations: `127`, `127.0`,
/// `1.27e2`.
fn notations(text: &str) -> [String; 3] {
    let (sign, digits) = match text.strip_prefix('-') {
        Some(digits) => ("-", digits),
        None => ("", text),
    };
    let exponent = match digits.len() {
        1 => format!("{sign}{digits}e0"),
        len => format!("{sign}{}.{}e{}", &digits[..1], &digits[1..], len - 1),
    };
    [text.to_owned(), format!("{text}.0"), exponent]
}

/// Whether `text` (an integer) lies in `min..=max`, all as exact integers.
fn in_range(text: &str, min: i128, max: u128) -> bool {
    match text.strip_prefix('-') {
        Some(digits) => digits
            .parse::<u128>()
            .is_ok_and(|m| m == 0 || (min < 0 && m <= min.unsigned_abs())),
        None => text.parse::<u128>().is_ok_and(|m| m <= max),
    }
}

fn assert_refused(result: &TestResult, tool: &str, literal: &str, range: &str) {
    let text = result.text();
    assert!(result.is_error, "{tool}({literal}) must be refused: {text}");
    assert!(
        text.contains("`v` ("),
        "{tool}({literal}): names the field: {text}"
    );
    assert!(
        text.contains(range),
        "{tool}({literal}): names {range:?}: {text}"
    );
    assert!(
        text.contains(&format!("received {literal} (")),
        "{tool}({literal}): shows the literal as sent: {text}"
    );
}

#[tokio::test]
async fn every_integer_width_at_inside_and_beyond_both_bounds() {
    let tester = tester();
    let widths: [(&str, &str, i128, u128); 11] = [
        ("echo_i8", "i8", i8::MIN.into(), i8::MAX as u128),
        ("echo_i16", "i16", i16::MIN.into(), i16::MAX as u128),
        ("echo_i32", "i32", i32::MIN.into(), i32::MAX as u128),
        ("echo_i64", "i64", i64::MIN.into(), i64::MAX as u128),
        ("echo_i128", "i128", i128::MIN, i128::MAX as u128),
        ("echo_u8", "u8", 0, u8::MAX.into()),
        ("echo_u16", "u16", 0, u16::MAX.into()),
        ("echo_u32", "u32", 0, u32::MAX.into()),
        ("echo_u64", "u64", 0, u64::MAX.into()),
        ("echo_u128", "u128", 0, u128::MAX),
        ("echo_usize", "usize", 0, usize::MAX as u128),
    ];
    let mut checked = 0;
    for (tool, name, min, max) in widths {
        let range = format!("an integer from {min} to {max} ({name})");
        let low = Int::of_i128(min);
        let high = Int::of_u128(max);
        let values = [
            low.step(-1),
            min.to_string(),
            low.step(1),
            "0".to_owned(),
            high.step(-1),
            max.to_string(),
            high.step(1),
        ];
        for value in values {
            let accepted = in_range(&value, min, max);
            for literal in notations(&value) {
                let result = tester
                    .call_json(tool, &format!(r#"{{"v": {literal}}}"#))
                    .await;
                if accepted {
                    assert!(
                        !result.is_error,
                        "{tool}({literal}) must be accepted: {}",
                        result.text()
                    );
                    assert_eq!(
                        result.data,
                        json!(value),
                        "{tool}({literal}) arrives exactly"
                    );
                } else {
                    assert_refused(&result, tool, &literal, &range);
                    assert!(
                        result.text().contains("(range)"),
                        "{tool}({literal}): {}",
                        result.text()
                    );
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 11 * 7 * 3);
}

#[tokio::test]
async fn the_issue_cases_are_refused_or_arrive_exactly_in_memory() {
    let tester = tester();
    let i64_range = "an integer from -9223372036854775808 to 9223372036854775807 (i64)";
    for literal in ["-9223372036854775809", "-9223372036854775810"] {
        let result = tester
            .call_json("echo_i64", &format!(r#"{{"v": {literal}}}"#))
            .await;
        assert_refused(&result, "echo_i64", literal, i64_range);
    }
    for literal in [
        "4611686018427387903.5",
        "5.0000000000000001",
        "0.5",
        "1e-400",
    ] {
        let result = tester
            .call_json("echo_i64", &format!(r#"{{"v": {literal}}}"#))
            .await;
        assert_refused(&result, "echo_i64", literal, i64_range);
        assert!(
            result.text().contains("(type)") && result.text().contains("whole number"),
            "{}",
            result.text()
        );
    }
    for (tool, literal, arrives) in [
        ("echo_u64", "9007199254740993.0", "9007199254740993"),
        ("echo_i64", "9007199254740993.0", "9007199254740993"),
        ("echo_i64", "123456789012345678.9e1", "1234567890123456789"),
        ("echo_i64", "-0.0", "0"),
        ("echo_i64", "-0", "0"),
        ("echo_i64", "5e0", "5"),
        ("echo_i64", "1.5e1", "15"),
        ("echo_i64", "0.5e1", "5"),
        ("echo_u8", "25500e-2", "255"),
        (
            "echo_i128",
            "-1.70141183460469231731687303715884105728e38",
            "-170141183460469231731687303715884105728",
        ),
    ] {
        let result = tester
            .call_json(tool, &format!(r#"{{"v": {literal}}}"#))
            .await;
        assert!(!result.is_error, "{tool}({literal}): {}", result.text());
        assert_eq!(result.data, json!(arrives), "{tool}({literal})");
    }
    // A refused literal longer than a preview is cut like any other value.
    let long = format!("1{}.5", "0".repeat(80));
    let result = tester
        .call_json("echo_i64", &format!(r#"{{"v": {long}}}"#))
        .await;
    assert!(result.is_error);
    assert!(
        result
            .text()
            .contains(&format!("received {}…", &long[..60])),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn paths_inside_values_are_judged_by_their_own_literals() {
    let tester = tester();
    let ok = tester
        .call_json(
            "echo_nested",
            r#"{"list": [1.0, -3.2768e4, 32767], "wide": 340282366920938463463374607431768211455}"#,
        )
        .await;
    assert!(!ok.is_error, "{}", ok.text());
    assert_eq!(
        ok.data,
        json!("[1, -32768, 32767] Some(340282366920938463463374607431768211455)")
    );
    let bad = tester
        .call_json(
            "echo_nested",
            r#"{"list": [1, 2.5, 32768.0], "wide": -1e0}"#,
        )
        .await;
    let text = bad.text();
    assert!(bad.is_error, "{text}");
    assert!(
        text.contains("`list[1]` (type)") && text.contains("received 2.5 ("),
        "{text}"
    );
    assert!(
        text.contains(
            "`list[2]` (range): expected an integer from -32768 to 32767 (i16); received 32768.0 ("
        ),
        "{text}"
    );
    assert!(
        text.contains("`wide` (range)") && text.contains("received -1e0 ("),
        "{text}"
    );
}

#[tokio::test]
async fn floats_keep_nearest_rounding_and_f32_refuses_overflow() {
    let tester = tester();
    for literal in ["1e39", "-1e39", "3.5e38"] {
        let result = tester
            .call_json("echo_f32", &format!(r#"{{"v": {literal}}}"#))
            .await;
        let text = result.text();
        assert!(result.is_error, "f32 {literal}: {text}");
        assert!(
            text.contains(
                "`v` (range): expected a number from -3.4028235e38 to 3.4028235e38 (f32)"
            ) && text.contains(&format!("received {literal} (")),
            "{text}"
        );
    }
    for (tool, literal, arrives) in [
        (
            "echo_f32",
            "3.4e38",
            "340000000000000000000000000000000000000",
        ),
        ("echo_f32", "0.1", "0.1"),
        ("echo_f32", "1e-50", "0"),
        ("echo_f64", "0.1", "0.1"),
        (
            "echo_f64",
            "1e39",
            "1000000000000000000000000000000000000000",
        ),
        ("echo_f64", "9007199254740993", "9007199254740992"),
    ] {
        let result = tester
            .call_json(tool, &format!(r#"{{"v": {literal}}}"#))
            .await;
        assert!(!result.is_error, "{tool}({literal}): {}", result.text());
        assert_eq!(result.data, json!(arrives), "{tool}({literal})");
    }
}

/// `Tester::call` with `json!`: no literal, so a float is judged by its value, and one
/// that may have been rounded is refused.
#[tokio::test]
async fn without_literals_only_floats_that_cannot_be_rounded_pass() {
    let tester = tester();
    let ok = tester.call("echo_i64", json!({"v": 5.0})).await;
    assert_eq!(ok.data, json!("5"), "{}", ok.text());
    let ok = tester
        .call("echo_i64", json!({"v": -9007199254740991.0}))
        .await;
    assert_eq!(ok.data, json!("-9007199254740991"), "{}", ok.text());
    for value in [9007199254740992.0, 1e19, -9.3e18] {
        let result = tester.call("echo_i64", json!({"v": value})).await;
        assert!(result.is_error, "{value}: {}", result.text());
        let text = result.text();
        assert!(
            text.contains("`v` (inexact)") || text.contains("`v` (range)"),
            "{value}: {text}"
        );
        assert!(text.contains("(i64)"), "{text}");
    }
    let out_of_range = tester.call("echo_u8", json!({"v": 256.0})).await;
    assert!(
        out_of_range.text().contains("`v` (range)"),
        "{}",
        out_of_range.text()
    );
    let huge = tester.call("echo_u128", json!({"v": 1e300})).await;
    assert!(huge.text().contains("`v` (range)"), "{}", huge.text());
}

// --- over the wire, against the quickstart's `add(a: i64, b: i64)` -------------------------

const WAIT: Duration = Duration::from_secs(30);

/// The stdio answers to `lines` (after the handshake), by id: the quickstart reads them
/// from a file and exits at its end; killed if it takes longer than [`WAIT`].
fn stdio_answers(calls: &[(&str, &str)]) -> Vec<(String, Value)> {
    let dir = std::env::temp_dir().join(format!("fusion-numbers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let mut script = String::new();
    script.push_str(r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"numbers","version":"1"}}}"#);
    script.push('\n');
    script.push_str(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    script.push('\n');
    for (id, arguments) in calls {
        script.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/call","params":{{"name":"add","arguments":{arguments}}}}}"#
        ));
        script.push('\n');
    }
    let input: PathBuf = dir.join("in.jsonl");
    let output: PathBuf = dir.join("out.jsonl");
    std::fs::write(&input, script).expect("write the requests");
    let mut child = Command::new(support::example_binary("quickstart"))
        .stdin(std::fs::File::open(&input).expect("open the requests"))
        .stdout(std::fs::File::create(&output).expect("create the answers"))
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn examples/quickstart");
    let started = Instant::now();
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if started.elapsed() > WAIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read_to_string(&output).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        status.is_some_and(|status| status.success()),
        "quickstart over stdio: {status:?}\n{stdout}"
    );
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|answer| Some((answer["id"].as_str()?.to_owned(), answer)))
        .collect()
}

fn answer<'a>(answers: &'a [(String, Value)], id: &str) -> &'a Value {
    answers
        .iter()
        .find(|(seen, _)| seen == id)
        .map(|(_, answer)| answer)
        .unwrap_or_else(|| panic!("no answer for {id}: {answers:?}"))
}

fn result_text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_issue_cases_over_stdio() {
    let i64_range = "expected an integer from -9223372036854775808 to 9223372036854775807 (i64)";
    let answers = stdio_answers(&[
        ("below1", r#"{"a": -9223372036854775809, "b": 0}"#),
        ("below2", r#"{"a": -9223372036854775810, "b": 0}"#),
        ("fraction", r#"{"a": 4611686018427387903.5, "b": 0}"#),
        ("float", r#"{"a": 9007199254740993.0, "b": 0}"#),
        ("exponent", r#"{"a": 123456789012345678.9e1, "b": 0}"#),
        ("min", r#"{"a": -9.223372036854775808e18, "b": 0}"#),
    ]);
    for (id, literal) in [
        ("below1", "-9223372036854775809"),
        ("below2", "-9223372036854775810"),
        ("fraction", "4611686018427387903.5"),
    ] {
        let answer = answer(&answers, id);
        let text = result_text(answer);
        assert_eq!(answer["result"]["isError"], true, "{id}: {answer}");
        assert!(
            text.contains("`a` (")
                && text.contains(i64_range)
                && text.contains(&format!("received {literal} (a number)")),
            "{id}: {text}"
        );
    }
    for (id, sum) in [
        ("float", "9007199254740993"),
        ("exponent", "1234567890123456789"),
        ("min", "-9223372036854775808"),
    ] {
        let answer = answer(&answers, id);
        assert_ne!(answer["result"]["isError"], true, "{id}: {answer}");
        assert_eq!(result_text(answer), sum, "{id}: {answer}");
    }
}

#[test]
fn the_issue_cases_over_http() {
    use support::HttpServer;

    let mut command = Command::new(support::example_binary("quickstart"));
    command.args(["--http", "0"]).env("RUST_LOG", "info");
    let server = HttpServer::start(command, WAIT);
    let post =
        |extra: &[(&str, &str)], body: &str| support::post_mcp(server.addr(), extra, body, WAIT);
    let init = post(
        &[],
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"numbers","version":"0"}}}"#,
    );
    assert_eq!(init.status, 200, "{init:?}");
    let session = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {init:?}"))
        .to_owned();
    let with_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let initialized = post(
        &with_session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    let refused = post(
        &with_session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":-9223372036854775809,"b":0}}}"#,
    );
    assert_eq!(refused.status, 200, "{refused:?}");
    assert!(
        refused.body.contains(r#""isError":true"#)
            && refused.body.contains("`a` (range): expected an integer from -9223372036854775808 to 9223372036854775807 (i64); received -9223372036854775809 (a number)"),
        "{refused:?}"
    );
    // A literal a client put in `_meta` is not believed: only what the transport read is.
    let exact = post(
        &with_session,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","_meta":{"fusion/number_literals":{"/a":"1"}},"arguments":{"a":9007199254740993.0,"b":0}}}"#,
    );
    assert_eq!(exact.status, 200, "{exact:?}");
    assert!(
        exact.body.contains(r#""text":"9007199254740993""#)
            && !exact.body.contains("isError\":true"),
        "{exact:?}"
    );
}
