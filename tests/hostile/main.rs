//! The hostile-peer suite: the example servers against peers that are slow, malicious or
//! gone, over both transports, every wait bounded and every child process killed on every
//! exit path. One module a concern:
//!
//! - `stdio`: a client that stops reading (backpressure, bounded memory), duplicate ids in
//!   flight, bad params for known methods, SIGTERM while a call runs, a stdout that fails,
//!   and the classics (garbage, deep nesting, batches, id types, surrogates, NaN, giant
//!   lines, notifications before `initialize`).
//! - `http`: duplicate `Host`, slowloris, connection and session caps, body limits (413),
//!   unknown sessions (404), duplicate ids, calls that outlive their clients, file
//!   descriptors running out.
//! - `log_flood`: megabytes of client input reach stderr as kilobytes, over both
//!   transports, with rmcp logging every message.
//! - `stores`: stores a client can grow (idempotency keys, tasks), sprayed until they
//!   would outgrow the process, each held to its memory bound.
//! - `budgets`: one client's streams and connections shut out neither the probes nor
//!   another client, from the same address or behind a trusted proxy; a connection over a
//!   budget is answered (`503` with `Retry-After`), never reset; a forged
//!   `X-Forwarded-For` changes nothing.
//! - `changes`: a subscriber that never reads its change notifications, beside one that
//!   does, while 60,000 changes are made: capped, counted, and nobody held up.
//! - `streams`: idle event streams from one peer starve neither the probes nor other
//!   clients; a session holds two, the server a bounded number.
//! - `inputs`: giant names and keys answered at once with a cut echo, suggestions on
//!   bounded inputs only, secrets of every length that never leak into messages, `_meta` or
//!   logs; hostile tool searches (a regex bomb, a megabyte's query, a huge limit).
//! - `upstream`: mounted upstreams that hang, flood, send 50 MB, answer another id, send
//!   garbage, ask for sampling, die mid-call, or answer `503`/`429`/`404` over HTTP: each
//!   caller gets a clear `isError` in bounded time, the rest goes on.
//! - `fuzz_corpus`: the fuzz targets' committed corpus and their findings, replayed on
//!   stable.

#[path = "../support/mod.rs"]
mod support;

mod budgets;
mod changes;
mod fuzz_corpus;
mod http;
mod inputs;
mod install;
mod log_flood;
mod stdio;
mod stores;
mod streams;
mod upstream;
