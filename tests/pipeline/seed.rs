//! The error-handling page of MCP Fusion's testing guide (the project's first seed),
//! ported test by test to Rust against the demo server, in both exposure modes: grouped
//! (one tool per group with an `action` property) and flat (one tool per action).

use fusion_demo::{Ctx, Role};
use fusion_runtime::{testing::Tester, tool::Exposure};
use serde_json::{Value, json};

fn testers() -> [(Exposure, Tester<Ctx>); 2] {
    [Exposure::Grouped, Exposure::Flat].map(|exposure| {
        (
            exposure,
            Tester::new(fusion_demo::builder(Role::Admin, exposure).build()),
        )
    })
}

fn data_text(data: &Value) -> &str {
    data.as_str().unwrap_or_default()
}

// describe('Error: Unknown Tool') — it('sets isError for nonexistent tools')
#[tokio::test]
async fn unknown_tool_sets_is_error() {
    for (exposure, tester) in testers() {
        let result = tester
            .call_action("nonexistent_tool", "list", json!({}))
            .await;
        assert!(result.is_error, "{exposure:?}");
        assert!(
            data_text(&result.data).contains("Unknown tool `nonexistent_tool`"),
            "{exposure:?}: {}",
            result.text()
        );
    }
}

// describe('Error: Unknown Action') — it('sets isError for nonexistent actions')
#[tokio::test]
async fn unknown_action_sets_is_error_and_lists_the_valid_ones() {
    for (exposure, tester) in testers() {
        let result = tester
            .call_action("db_user", "nonexistent_action", json!({}))
            .await;
        assert!(result.is_error, "{exposure:?}");
        let text = data_text(&result.data);
        for action in ["find_many", "find_by_id", "create"] {
            assert!(text.contains(action), "{exposure:?}: {text}");
        }
    }
}

// describe('Error: Handler Error') — it('sets isError when handler returns error()')
#[tokio::test]
async fn handler_error_sets_is_error_with_its_message() {
    for (exposure, tester) in testers() {
        let result = tester
            .call_action("system", "disabled_action", json!({}))
            .await;
        assert!(result.is_error, "{exposure:?}");
        assert!(
            data_text(&result.data).contains("temporarily disabled"),
            "{exposure:?}: {}",
            result.text()
        );
    }
}

// describe('Error: Empty MVA Layers') — systemRules and uiBlocks are empty on error
#[tokio::test]
async fn layers_are_empty_on_error() {
    for (exposure, tester) in testers() {
        let result = tester
            .call_action("db_user", "find_many", json!({"take": 99999}))
            .await;
        assert!(result.is_error, "{exposure:?}");
        assert_eq!(result.system_rules, Vec::<String>::new(), "{exposure:?}");
        assert!(result.ui_blocks.is_empty(), "{exposure:?}");
        // Nor anything presenter-made on the wire: one text block, the error.
        assert_eq!(result.raw.content.len(), 1, "{exposure:?}");
    }
}

// describe('Error Messages') — it('middleware error contains "Unauthorized"')
#[tokio::test]
async fn middleware_refusal_contains_unauthorized() {
    for (exposure, tester) in testers() {
        let result = tester
            .call_action_with(
                "db_user",
                "find_many",
                json!({"take": 5}),
                |ctx: &mut Ctx| {
                    ctx.role = Role::Guest;
                },
            )
            .await;
        assert!(result.is_error, "{exposure:?}");
        assert!(
            data_text(&result.data).contains("Unauthorized"),
            "{exposure:?}: {}",
            result.text()
        );
        assert!(result.system_rules.is_empty() && result.ui_blocks.is_empty());
    }
}

// it('handler error contains the specific message')
#[tokio::test]
async fn handler_error_contains_the_specific_message() {
    for (_, tester) in testers() {
        let result = tester
            .call_action("system", "disabled_action", json!({}))
            .await;
        assert!(result.is_error);
        assert!(data_text(&result.data).contains("This operation is temporarily disabled."));
    }
}

// describe('Error vs Exception') — it('validation errors are handled, not thrown')
#[tokio::test]
async fn validation_errors_are_handled_not_thrown() {
    for (exposure, tester) in testers() {
        let result = tester
            .call_action("db_user", "find_many", json!({"take": "invalid"}))
            .await;
        assert!(result.is_error, "{exposure:?}");
        assert!(result.data.is_string(), "the error message is in data");
        let text = data_text(&result.data);
        assert!(text.contains("`take`"), "{exposure:?}: {text}");
        assert!(
            text.contains("action `find_many`"),
            "the headline names the action: {text}"
        );
    }
}

#[tokio::test]
async fn a_guest_may_still_use_system() {
    for (_, tester) in testers() {
        let result = tester
            .call_action_with("system", "health", json!({}), |ctx: &mut Ctx| {
                ctx.role = Role::Guest
            })
            .await;
        assert!(!result.is_error, "{}", result.text());
        assert_eq!(result.data["status"], "ok");
    }
}

#[tokio::test]
async fn success_carries_the_presenter_layers_in_order() {
    for (exposure, tester) in testers() {
        let result = tester
            .call_action("db_user", "find_many", json!({"take": 3}))
            .await;
        assert!(!result.is_error, "{exposure:?}: {}", result.text());
        assert_eq!(result.data.as_array().map(Vec::len), Some(3));
        assert_eq!(result.system_rules.len(), 2);
        assert_eq!(result.ui_blocks.len(), 1);
        // On the wire: the data, then the UI block, then the rules.
        let blocks: Vec<&str> = result
            .raw
            .content
            .iter()
            .filter_map(|b| b.as_text().map(|t| t.text.as_str()))
            .collect();
        assert_eq!(blocks.len(), 3, "{blocks:?}");
        assert!(blocks[0].starts_with('['), "{}", blocks[0]);
        assert!(
            blocks[1].starts_with("| id | name | active |"),
            "{}",
            blocks[1]
        );
        assert!(blocks[2].starts_with("System rules:"), "{}", blocks[2]);
    }
}

#[tokio::test]
async fn the_agent_limit_cuts_long_lists_with_a_note() {
    let (_, tester) = testers().into_iter().next().expect("two testers");
    let result = tester
        .call_action("db_user", "find_many", json!({"take": 50}))
        .await;
    assert_eq!(result.data.as_array().map(Vec::len), Some(20));
    assert!(
        result
            .system_rules
            .iter()
            .any(|rule| rule.contains("first 20 of 50")),
        "{:?}",
        result.system_rules
    );
}

#[tokio::test]
async fn a_missing_action_is_an_error_listing_the_actions() {
    let (_, tester) = testers().into_iter().next().expect("two testers");
    let result = tester.call("db_user", json!({"take": 5})).await;
    assert!(result.is_error);
    assert!(
        result.text().contains("needs an `action`"),
        "{}",
        result.text()
    );
    let with_action = tester
        .call("db_user", json!({"action": "find_many", "take": 1}))
        .await;
    assert!(!with_action.is_error, "{}", with_action.text());
}

#[tokio::test]
async fn each_action_is_validated_strictly() {
    let (_, tester) = testers().into_iter().next().expect("two testers");
    // `email` belongs to `create`, not to `find_by_id`.
    let result = tester
        .call_action("db_user", "find_by_id", json!({"id": 1, "email": "a@b.c"}))
        .await;
    assert!(result.is_error);
    assert!(
        result.text().contains("`email` (unknown_field)"),
        "{}",
        result.text()
    );
}

#[test]
fn grouped_and_flat_exposure_list_the_expected_tools() {
    let grouped = fusion_demo::builder(Role::Admin, Exposure::Grouped).build();
    assert_eq!(grouped.tool_names(), ["db_user", "system"]);
    let db_user = &grouped.tools()[0];
    let schema = Value::Object((*db_user.input_schema).clone());
    assert_eq!(
        schema["properties"]["action"]["enum"],
        json!(["find_many", "find_by_id", "create"])
    );
    assert_eq!(schema["required"], json!(["action"]));
    let take = schema["properties"]["take"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(take.contains("Used by: find_many."), "{take}");
    let id = schema["properties"]["id"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(id.contains("Required for: find_by_id."), "{id}");
    // Destructive because `create` is; not read-only.
    let hints = db_user.annotations.as_ref().expect("annotations");
    assert_eq!(hints.destructive_hint, Some(true));
    assert_eq!(hints.read_only_hint, None);
    let system_read_only = grouped.tools()[1]
        .annotations
        .as_ref()
        .and_then(|a| a.read_only_hint);
    assert_eq!(
        system_read_only, None,
        "not read-only: disabled_action is not"
    );

    let flat = fusion_demo::builder(Role::Admin, Exposure::Flat).build();
    assert_eq!(
        flat.tool_names(),
        [
            "db_user_find_many",
            "db_user_find_by_id",
            "db_user_create",
            "system_disabled_action",
            "system_health"
        ]
    );
}

#[test]
fn duplicate_actions_fail_the_build() {
    let errors = fusion_runtime::Server::builder("dup", "0")
        .context(Ctx::default)
        .tool(fusion_demo::find_many)
        .tool(fusion_demo::find_many)
        .try_build()
        .expect_err("a duplicate action is refused");
    assert!(
        errors
            .iter()
            .any(|e| e.to_string().contains("two actions named `find_many`")),
        "{errors:?}"
    );
}
