//! # fusion-bench: measuring fusion against rmcp and the floor
//!
//! Issue 9's tooling, in one unpublished package:
//!
//! | target | what |
//! |---|---|
//! | `loadgen` (bin) | drives any stdio MCP server: handshake, then C `tools/call` requests in flight over one connection; prints calls/s, p50/p99 latency, server CPU µs per call and peak RSS |
//! | `compare` (bin) | runs fusion's echo, `rmcp-echo` and `floor-echo` alternately (A B C A B C) at C=1 and C=32 and prints the medians, the ratios and the goals |
//! | `rmcp-echo` (bin) | the same `echo` tool written as rmcp 3.11's docs show, served with `rmcp::transport::stdio()` |
//! | `floor-echo` (bin) | the floor: a synchronous serde_json line responder, one thread |
//! | `faulty-echo` (bin) | a deliberately broken server, for the driver's own tests |
//! | `compare --http` | fusion's quickstart over Streamable HTTP (sessions and none) against `rmcp-http-echo` in both modes and `floor-http-echo` ([`http_compare`], driven by [`http_load`]) |
//! | `compare --http --gateway` | the quickstart's `echo` directly against the same call through `gateway-http-echo` (`Upstream::http`), with and without policies (issue 59) |
//! | `compare --otel` | fusion's quickstart with the call log and OTLP export on (every call a span, and sampled out) against the log alone and both off, exporting to [`otlp_sink`] |
//! | `rmcp-http-echo` (bin) | `echo` over rmcp's `StreamableHttpService` as its docs mount it, plus TCP_NODELAY |
//! | `floor-http-echo` (bin) | the HTTP floor: hyper and serde_json, no MCP |
//! | `benches/dispatch.rs` | criterion: in-process dispatch through the tester against a hand-written serde handler, schema generation, the tester's `echo` |
//! | `benches/tasks.rs` | criterion: a task created and polled over HTTP, in memory against on Redis; Redis round trips per task |
//! | `benches/decode.rs` | criterion: decode and validation of a 10-field argument object (plain and constrained) against plain serde decoding of the same struct |
//!
//! ```sh
//! cargo run --release -p fusion-bench --bin compare   # the side-by-side table
//! cargo run --release -p fusion-bench --bin loadgen -- \
//!     --server "target/user-quickstart/quickstart/target/release/quickstart" --concurrency 32 --calls 200000
//! cargo bench -p fusion-bench --bench dispatch
//! cargo bench -p fusion-bench --bench decode
//! ```
//!
//! See `bench/README.md` for the options and what each number means. The library holds
//! what the binaries share: the driver ([`load`]), the `/proc` readings
//! ([`process_stats`]), the statistics ([`stats`]), a small argument parser ([`cli`]), the
//! benches' own Redis ([`redis_server`]), and the crates built as a user's
//! ([`user_crate`]: the quickstart the comparisons measure, the compile-time crates).

pub mod cli;
pub mod http_compare;
pub mod http_load;
pub mod load;
pub mod otlp_sink;
pub mod process_stats;
pub mod redis_server;
pub mod rmcp_echo;
pub mod stats;
pub mod user_crate;
