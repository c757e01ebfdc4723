//! The demo's tool surface is the one in `fusion.lock`, as a user's crate holds its own:
//! a changed schema, hint, description or policy fails this test until it is accepted
//! with `FUSION_LOCK=update cargo test -p fusion-demo --test contract` and the lockfile
//! is committed, so the change is seen in review.

use fusion_demo::Role;
use fusion_runtime::{testing::Tester, tool::Exposure};

#[test]
fn the_tool_surface_is_the_locked_one() {
    let server = fusion_demo::builder(Role::Admin, Exposure::Grouped).build();
    Tester::new(server).assert_contract("fusion.lock");
}
