//! A listed schema whose repeated type is hoisted into `$defs` accepts exactly what the
//! same schema with every reference inlined accepts, and what the runtime accepts: the
//! inventory's `transfer_stock` (two `Address`es), under draft 2020-12 and draft-07 (which
//! ignores what stands beside a `$ref`: only descriptions stand there). The `jsonschema`
//! crate is the oracle.

use fusion_runtime::testing::Tester;
use serde_json::{Value, json};

/// `transfer_stock`'s listed input schema, with or without hoisting.
async fn listed(hoist: bool) -> Value {
    let server = fusion_tests::inventory::builder()
        .hoist_shared_schemas(hoist)
        .build();
    let tools = Tester::new(server).list_tools().await;
    let tool = tools
        .iter()
        .find(|tool| tool.name == "transfer_stock")
        .expect("transfer_stock is listed");
    Value::Object((*tool.input_schema).clone())
}

fn validator(schema: &Value, draft: jsonschema::Draft) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(draft)
        .build(schema)
        .unwrap_or_else(|error| panic!("the schema does not compile: {error}\n{schema:#}"))
}

/// Arguments around the edges of both addresses' constraints.
fn payloads() -> Vec<Value> {
    let address = |street: Value, country: Value| json!({"street": street, "country": country});
    let good = address(json!("1 Quay Road"), json!("FR"));
    let variants = [
        good.clone(),
        address(json!("ab"), json!("FR")),
        address(json!("x".repeat(120)), json!("DE")),
        address(json!("x".repeat(121)), json!("DE")),
        address(json!("1 Quay Road"), json!("fr")),
        address(json!("1 Quay Road"), json!(7)),
        json!({"street": "1 Quay Road"}),
        json!({"street": "1 Quay Road", "country": "FR", "floor": 2}),
        json!("1 Quay Road, FR"),
        json!(null),
    ];
    let mut payloads = Vec::new();
    for from in &variants {
        for to in &variants {
            payloads.push(json!({"sku": "SKU-1234", "units": 3, "from": from, "to": to}));
        }
    }
    payloads.push(json!({"sku": "SKU-1234", "units": 3, "from": good}));
    payloads
}

#[tokio::test]
async fn a_hoisted_schema_accepts_what_the_inlined_one_and_the_runtime_accept() {
    let (hoisted, inlined) = (listed(true).await, listed(false).await);
    assert_eq!(hoisted["properties"]["from"]["$ref"], "#/$defs/Address");
    assert!(inlined.get("$defs").is_none(), "{inlined:#}");
    assert!(hoisted.to_string().len() < inlined.to_string().len());
    let tester = Tester::new(fusion_tests::inventory::server());
    let mut disagreements = Vec::new();
    for draft in [jsonschema::Draft::Draft202012, jsonschema::Draft::Draft7] {
        let (hoisted, inlined) = (validator(&hoisted, draft), validator(&inlined, draft));
        for payload in payloads() {
            let expected = inlined.is_valid(&payload);
            if hoisted.is_valid(&payload) != expected {
                disagreements.push(format!("{draft:?}: {payload}"));
            }
            let result = tester.call("transfer_stock", payload.clone()).await;
            if result.is_error == expected {
                disagreements.push(format!("the runtime: {payload} -> {}", result.text()));
            }
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}
