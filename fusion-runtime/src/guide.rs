//! The guide's chapters (`guide/src/`) as doc tests: every Rust block of every chapter, and
//! of the README, is compiled and run with the crate's doc tests, so the guide cannot drift
//! from the code. Compiled only under `cfg(doctest)`; `tests/source/guide.rs` checks that
//! every chapter is included here.

#![allow(dead_code)]

/// README.md's example.
#[doc = include_str!("../../README.md")]
pub struct Readme;

/// `guide/src/introduction.md`
#[doc = include_str!("../../guide/src/introduction.md")]
pub struct Introduction;

/// `guide/src/first-tool.md`
#[doc = include_str!("../../guide/src/first-tool.md")]
pub struct FirstTool;

/// `guide/src/connect-a-client.md`
#[doc = include_str!("../../guide/src/connect-a-client.md")]
pub struct ConnectAClient;

/// `guide/src/validation.md`
#[doc = include_str!("../../guide/src/validation.md")]
pub struct Validation;

/// `guide/src/errors.md`
#[doc = include_str!("../../guide/src/errors.md")]
pub struct Errors;

/// `guide/src/recovery.md`
#[doc = include_str!("../../guide/src/recovery.md")]
pub struct Recovery;

/// `guide/src/startup.md`
#[doc = include_str!("../../guide/src/startup.md")]
pub struct Startup;

/// `guide/src/groups-and-middleware.md`
#[doc = include_str!("../../guide/src/groups-and-middleware.md")]
pub struct GroupsAndMiddleware;

/// `guide/src/presenters-and-apps.md`
#[doc = include_str!("../../guide/src/presenters-and-apps.md")]
pub struct PresentersAndApps;

/// `guide/src/guards.md`
#[doc = include_str!("../../guide/src/guards.md")]
pub struct Guards;

/// `guide/src/testing.md`
#[doc = include_str!("../../guide/src/testing.md")]
pub struct Testing;

/// `guide/src/contract.md`
#[doc = include_str!("../../guide/src/contract.md")]
pub struct Contract;

/// `guide/src/transports.md`
#[doc = include_str!("../../guide/src/transports.md")]
pub struct Transports;

/// `guide/src/http-and-oauth.md`
#[doc = include_str!("../../guide/src/http-and-oauth.md")]
pub struct HttpAndOauth;

/// `guide/src/protocol.md`
#[doc = include_str!("../../guide/src/protocol.md")]
pub struct Protocol;

/// `guide/src/gateway.md`
#[doc = include_str!("../../guide/src/gateway.md")]
pub struct Gateway;

/// `guide/src/fleets.md`
#[doc = include_str!("../../guide/src/fleets.md")]
pub struct Fleets;

/// `guide/src/telemetry.md`
#[doc = include_str!("../../guide/src/telemetry.md")]
pub struct Telemetry;

/// `guide/src/performance.md`
#[doc = include_str!("../../guide/src/performance.md")]
pub struct Performance;

/// `guide/src/deployment.md`
#[doc = include_str!("../../guide/src/deployment.md")]
pub struct Deployment;

/// `guide/src/limits.md`
#[doc = include_str!("../../guide/src/limits.md")]
pub struct Limits;

/// `guide/src/exit-codes.md`
#[doc = include_str!("../../guide/src/exit-codes.md")]
pub struct ExitCodes;

/// `guide/src/cargo-fusion.md`
#[doc = include_str!("../../guide/src/cargo-fusion.md")]
pub struct CargoFusion;

/// `guide/src/layout.md`
#[doc = include_str!("../../guide/src/layout.md")]
pub struct Layout;
