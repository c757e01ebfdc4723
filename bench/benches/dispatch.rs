//! Criterion micro-benchmarks (issue 9, item 3):
//!
//! - `dispatch_10_fields`: one call of a 10-field tool in process — decode, validate,
//!   call, and encode the result to JSON bytes — through fusion's [`Tester`] (the real
//!   pipeline without a transport), against a hand-written serde handler that does the
//!   same work (decode with `deny_unknown_fields`, call, build the same
//!   `CallToolResult`, encode). Goal: fusion ≤ 1.5× the hand-written handler.
//! - `schema/input_schema_10_fields`: generating the input schema of the 10-field
//!   argument type.
//! - `tester/echo`: the tester's call of a one-field `echo`.
//!
//! Run: `cargo bench -p fusion-bench --bench dispatch`. No log subscriber is installed,
//! so the per-call log event costs only its "is anyone listening" check here; over stdio
//! the served binaries also format and write it.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use criterion::{Criterion, criterion_group, criterion_main};
use fusion_runtime::{prelude::*, testing::Tester, tool::schema::input_schema};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

/// What the search returns: a summary of what it was asked.
#[mcp_type]
#[derive(Debug, Serialize, JsonSchema)]
struct Page {
    query: String,
    take: u32,
    skip: u32,
    min_price: f64,
    in_stock: bool,
    tags: usize,
    sort: String,
    locale: String,
    page: u16,
    strict: bool,
}

/// The work both handlers do.
#[allow(clippy::too_many_arguments)]
fn make_page(
    query: String,
    take: u32,
    skip: Option<u32>,
    min_price: f64,
    in_stock: bool,
    tags: Vec<String>,
    sort: Option<String>,
    locale: String,
    page: u16,
    strict: Option<bool>,
) -> Page {
    Page {
        query,
        take,
        skip: skip.unwrap_or(0),
        min_price,
        in_stock,
        tags: tags.len(),
        sort: sort.unwrap_or_else(|| "relevance".to_owned()),
        locale,
        page,
        strict: strict.unwrap_or(false),
    }
}

/// Search products: ten parameters of the usual kinds.
#[mcp_tool(read_only)]
#[allow(clippy::too_many_arguments)]
async fn search(
    /// Free text.
    query: String,
    /// How many results.
    take: u32,
    /// How many to skip.
    skip: Option<u32>,
    /// Lowest price.
    min_price: f64,
    /// Only products in stock.
    in_stock: bool,
    /// Tags that must all match.
    tags: Vec<String>,
    /// The order of results.
    sort: Option<String>,
    /// The locale, e.g. `en-GB`.
    locale: String,
    /// Which page.
    page: u16,
    /// Strict matching.
    strict: Option<bool>,
) -> Page {
    make_page(
        query, take, skip, min_price, in_stock, tags, sort, locale, page, strict,
    )
}

/// Echo the text back, unchanged.
#[mcp_tool(read_only, idempotent)]
async fn echo(
    /// The text to send back.
    text: String,
) -> String {
    text
}

/// The same ten fields for the hand-written handler (and the schema benchmark).
#[mcp_type]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// Free text.
    query: String,
    /// How many results.
    take: u32,
    /// How many to skip.
    skip: Option<u32>,
    /// Lowest price.
    min_price: f64,
    /// Only products in stock.
    in_stock: bool,
    /// Tags that must all match.
    tags: Vec<String>,
    /// The order of results.
    sort: Option<String>,
    /// The locale, e.g. `en-GB`.
    locale: String,
    /// Which page.
    page: u16,
    /// Strict matching.
    strict: Option<bool>,
}

/// What a developer would write by hand with serde and rmcp's types: decode, call,
/// build the result (structured content plus its text copy, as fusion sends it), encode.
async fn handwritten(args: Value) -> Vec<u8> {
    let result = match serde_json::from_value::<SearchArgs>(args) {
        Ok(a) => {
            let page = make_page(
                a.query,
                a.take,
                a.skip,
                a.min_price,
                a.in_stock,
                a.tags,
                a.sort,
                a.locale,
                a.page,
                a.strict,
            );
            match serde_json::to_value(&page) {
                Ok(value) => CallToolResult::structured(value),
                Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
            }
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    };
    serde_json::to_vec(&result).unwrap_or_default()
}

fn args() -> Value {
    json!({
        "query": "desk lamp", "take": 20, "skip": 40, "min_price": 9.5, "in_stock": true,
        "tags": ["office", "led"], "sort": "price", "locale": "en-GB", "page": 3, "strict": false
    })
}

fn bench(c: &mut Criterion) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("cannot build a tokio runtime: {error}"),
    };
    let tester = Tester::new(
        Server::builder("bench", "0.0.0")
            .tool(search)
            .tool(echo)
            .build(),
    );
    let value = args();

    // Both sides must do the same work and succeed before they are timed.
    let fusion_once = runtime.block_on(tester.call("search", value.clone()));
    assert!(!fusion_once.is_error, "{}", fusion_once.text());
    let by_hand: Value = serde_json::from_slice(&runtime.block_on(handwritten(value.clone())))
        .unwrap_or(Value::Null);
    assert_eq!(
        fusion_once.wire_json()["structuredContent"],
        by_hand["structuredContent"],
        "both handlers return the same structured content"
    );
    assert!(
        !runtime
            .block_on(tester.call("echo", json!({"text": "hi"})))
            .is_error
    );

    let mut group = c.benchmark_group("dispatch_10_fields");
    group.bench_function("handwritten_serde", |b| {
        b.iter(|| runtime.block_on(handwritten(std::hint::black_box(value.clone()))))
    });
    group.bench_function("fusion_tester", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let result = tester
                    .call("search", std::hint::black_box(value.clone()))
                    .await;
                serde_json::to_vec(&result.raw).unwrap_or_default()
            })
        })
    });
    group.finish();

    c.bench_function("schema/input_schema_10_fields", |b| {
        b.iter(input_schema::<SearchArgs>)
    });

    let echo_args = json!({"text": "hi"});
    c.bench_function("tester/echo", |b| {
        b.iter(|| runtime.block_on(tester.call("echo", std::hint::black_box(echo_args.clone()))))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
