//! Change notifications across a fleet (`fusion_runtime::changes`, `.change_bus(redis)`):
//! three replicas of `examples/fleet.rs` on one Redis, nginx in front of them. The official
//! Python client subscribes on replica A twice (a 2025-11-25 session's `resources/subscribe`,
//! and a 2026-07-28 `subscriptions/listen` stream), and `restock` is called on replica C,
//! then through nginx: each subscriber hears of each change once, and of nothing it did not
//! subscribe to. The script prints the latency from a change on C to its notification on A
//! (median and p99 over 1,000 changes). The checks live in `tests/python/change_fleet.py`.
//!
//! Needs redis-server, nginx and the Python venv; without them the test skips loudly,
//! except under `CI=true`, where it fails.

use crate::support;

use std::{path::Path, process::Command, time::Duration};

use support::{fleet::Fleet, nginx_proxy::Nginx};

/// The limit of the Python client's run (it bounds itself at 240 s).
const PYTHON: Duration = Duration::from_secs(300);

#[test]
fn a_change_made_through_one_replica_reaches_the_subscribers_of_another_once() {
    let Some(fleet) = Fleet::start("changes") else {
        return;
    };
    let (Some(nginx_binary), Some(python)) = (support::nginx(), support::python()) else {
        return;
    };
    let subscribed = fleet.replica_with_sessions(&[]);
    let (b, changed) = (fleet.replica(&[]), fleet.replica(&[]));
    let nginx = Nginx::start(
        &nginx_binary,
        &[subscribed.addr(), b.addr(), changed.addr()],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/change_fleet.py");
    let mut command = Command::new(python);
    command
        .arg(&script)
        .args([subscribed.url(), changed.url(), &nginx.url()])
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = support::run_with_timeout(command, PYTHON);
    assert!(
        out.success() && out.stdout.contains("ok: all checks passed"),
        "change_fleet.py failed\n{}\nreplica A's stderr:\n{}\nreplica C's stderr:\n{}\nnginx:\n{}",
        out.report(),
        subscribed.stderr(),
        changed.stderr(),
        nginx.report(),
    );
    println!("{}", out.stdout.trim_end());
}
