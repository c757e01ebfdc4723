//! Decode + validate of a 10-field argument object, against plain serde decoding of the
//! same struct. Run: `cargo bench -p fusion-bench --bench decode`. The ratios to report are
//! `fusion/*` over `serde/from_value` (what a hand-written handler does) and over
//! `serde/deserialize_ref` (serde's floor, decoding from a borrowed value).
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use criterion::{Criterion, criterion_group, criterion_main};
use fusion_runtime::{prelude::*, tool::schema::input_schema, validate::Validator};
use serde_json::{Value, json};

/// Ten fields of the usual kinds, no declared constraints.
#[mcp_type]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Plain {
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
}

/// The same ten fields, with constraints the validator must check on every call.
#[mcp_type]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Constrained {
    #[arg(length(min = 1, max = 80))]
    query: String,
    #[arg(min = 1, max = 50)]
    take: u32,
    skip: Option<u32>,
    #[arg(min = 0.0)]
    min_price: f64,
    in_stock: bool,
    #[arg(unique, length(max = 5))]
    tags: Vec<String>,
    #[arg(one_of = ["price", "name"])]
    sort: Option<String>,
    #[arg(pattern = "^[a-z]{2}-[A-Z]{2}$")]
    locale: String,
    #[arg(max = 100)]
    page: u16,
    strict: Option<bool>,
}

fn args() -> Value {
    json!({
        "query": "desk lamp", "take": 20, "skip": 40, "min_price": 9.5, "in_stock": true,
        "tags": ["office", "led"], "sort": "price", "locale": "en-GB", "page": 3, "strict": false
    })
}

fn bench(c: &mut Criterion) {
    let value = args();
    let plain = Validator::compile(&input_schema::<Plain>());
    let constrained = Validator::compile(&input_schema::<Constrained>());
    assert!(plain.decode::<Plain>(&value).is_ok());
    assert!(constrained.decode::<Constrained>(&value).is_ok());

    let mut group = c.benchmark_group("decode_10_fields");
    group.bench_function("serde/from_value", |b| {
        b.iter(|| serde_json::from_value::<Plain>(std::hint::black_box(value.clone())))
    });
    group.bench_function("serde/deserialize_ref", |b| {
        b.iter(|| Plain::deserialize(std::hint::black_box(&value)))
    });
    group.bench_function("fusion/plain", |b| {
        b.iter(|| plain.decode::<Plain>(std::hint::black_box(&value)))
    });
    group.bench_function("fusion/constrained", |b| {
        b.iter(|| constrained.decode::<Constrained>(std::hint::black_box(&value)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
