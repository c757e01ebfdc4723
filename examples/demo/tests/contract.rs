//! The demo's tool surface is the one in `fusion.lock`, as a user's crate holds its own:
//! a changed schema, hint, description or policy fails this test until it is accepted
//! with `FUSION_LOCK=update cargo test -p fusion-demo --test contract` and the lockfile
//! is committed, so the change is seen in review. Its size in tokens is in the lockfile
//! too, and held under the demo's budget (`TOKEN_BUDGET`).

use fusion_demo::Role;
use fusion_runtime::{testing::Tester, tool::Exposure};

#[test]
fn the_tool_surface_is_the_locked_one() {
    let server = fusion_demo::builder(Role::Admin, Exposure::Grouped).build();
    Tester::new(server).assert_contract("fusion.lock");
}

#[test]
fn a_description_grown_past_the_budget_fails_the_contract_test() {
    // Someone documents `db_user` at length: 120 words more for the model to read on every
    // conversation.
    let long = "Users of the directory: list them, fetch one by id, or create one. ".repeat(10);
    let server = fusion_demo::builder(Role::Admin, Exposure::Grouped)
        .group("db_user", long)
        .build();
    let tester = Tester::new(server);
    // A copy of the lockfile: under `FUSION_LOCK=update` the check rewrites the file it is
    // given, and the committed one must keep the demo's own surface.
    let lock = std::env::temp_dir().join(format!("fusion-demo-{}.lock", std::process::id()));
    std::fs::copy("fusion.lock", &lock).expect("the lockfile copied");
    let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tester.assert_contract(&lock)
    }))
    .expect_err("a surface over its budget fails the test");
    let _ = std::fs::remove_file(&lock);
    let message = failure.downcast_ref::<String>().map_or("", String::as_str);
    // Updating the lockfile accepts the changes, never the budget.
    if std::env::var("FUSION_LOCK").as_deref() != Ok("update") {
        assert!(
            message.contains("RISKY db_user: the description changed"),
            "{message}"
        );
        assert!(
            message.contains("RISKY db_user: its tools/list entry grew from"),
            "{message}"
        );
    }
    assert!(
        message.contains("`db_user` costs") && message.contains("over the budget of 600 a tool"),
        "{message}"
    );
}

#[test]
fn every_way_the_demo_is_listed_is_within_its_budget() {
    for exposure in [Exposure::Grouped, Exposure::Flat] {
        for role in [Role::Admin, Role::Guest] {
            let contract = fusion_demo::builder(role, exposure).build().contract();
            if let Err(over) = fusion_demo::TOKEN_BUDGET.check(&contract) {
                panic!("{exposure:?}, {role:?}: {over}");
            }
        }
    }
}
