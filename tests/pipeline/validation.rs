//! Argument validation over the inventory example's tools: a corpus of bad arguments
//! (each must be `isError` with the right path and rule) and of boundary values that
//! must pass, and the proof that the runtime and the published schema agree: every case
//! is also judged by the `jsonschema` crate against the tool's `inputSchema`, and the two
//! verdicts must be the same.

use fusion_runtime::{Server, meta::ISSUES_META_KEY, testing::Tester};
use serde_json::{Value, json};

/// One call and what must come of it.
struct Case {
    tool: &'static str,
    args: Value,
    /// `None`: the call must succeed. `Some((path, code))`: it must fail with an issue at
    /// `path` whose code is `code` (other issues may come too).
    expect: Option<(&'static str, &'static str)>,
}

fn bad(tool: &'static str, args: Value, path: &'static str, code: &'static str) -> Case {
    Case {
        tool,
        args,
        expect: Some((path, code)),
    }
}

fn good(tool: &'static str, args: Value) -> Case {
    Case {
        tool,
        args,
        expect: None,
    }
}

/// `base` with `key` set to `value` (or removed, for `Value::Null` when `remove`).
fn with(base: &Value, key: &str, value: Value) -> Value {
    let mut args = base.clone();
    if let Some(object) = args.as_object_mut() {
        object.insert(key.to_owned(), value);
    }
    args
}

fn without(base: &Value, key: &str) -> Value {
    let mut args = base.clone();
    if let Some(object) = args.as_object_mut() {
        object.remove(key);
    }
    args
}

fn search() -> Value {
    json!({"query": "lamp"})
}

fn create() -> Value {
    json!({"sku": "SKU-1234", "price_cents": 100, "name": "Lamp", "stock": 5})
}

fn contact() -> Value {
    json!({"email": "ada@example.com", "order_id": "67e55044-10b1-426f-9247-bb680e5fe0c8"})
}

fn filter(value: Value) -> Value {
    with(&search(), "filters", json!([value]))
}

fn bad_cases() -> Vec<Case> {
    let (s, c, k) = (search(), create(), contact());
    let long = |n: usize| Value::String("a".repeat(n));
    vec![
        // search_products: query
        bad("search_products", json!({}), "query", "missing"),
        bad("search_products", json!({"query": 5}), "query", "type"),
        bad(
            "search_products",
            json!({"query": ""}),
            "query",
            "min_length",
        ),
        bad(
            "search_products",
            json!({"query": long(81)}),
            "query",
            "max_length",
        ),
        bad("search_products", json!({"query": null}), "query", "null"),
        bad(
            "search_products",
            json!({"query": ["lamp"]}),
            "query",
            "type",
        ),
        bad(
            "search_products",
            json!({"query": {"text": "lamp"}}),
            "query",
            "type",
        ),
        bad("search_products", json!({"query": true}), "query", "type"),
        // take: u8 in 1..=50
        bad(
            "search_products",
            with(&s, "take", json!(0)),
            "take",
            "minimum",
        ),
        bad(
            "search_products",
            with(&s, "take", json!(51)),
            "take",
            "maximum",
        ),
        bad(
            "search_products",
            with(&s, "take", json!("10")),
            "take",
            "type",
        ),
        bad(
            "search_products",
            with(&s, "take", json!(1.5)),
            "take",
            "type",
        ),
        bad(
            "search_products",
            with(&s, "take", json!(-1)),
            "take",
            "minimum",
        ),
        bad(
            "search_products",
            with(&s, "take", json!(300)),
            "take",
            "maximum",
        ),
        bad(
            "search_products",
            with(&s, "take", json!(1e30)),
            "take",
            "maximum",
        ),
        bad(
            "search_products",
            with(&s, "take", json!(null)),
            "take",
            "null",
        ),
        bad(
            "search_products",
            with(&s, "take", json!([])),
            "take",
            "type",
        ),
        // min_price, tags, sort, in_stock_only
        bad(
            "search_products",
            with(&s, "min_price", json!(-0.01)),
            "min_price",
            "minimum",
        ),
        bad(
            "search_products",
            with(&s, "min_price", json!("5")),
            "min_price",
            "type",
        ),
        bad(
            "search_products",
            with(&s, "tags", json!(["a", "a"])),
            "tags[1]",
            "unique",
        ),
        bad(
            "search_products",
            with(&s, "tags", json!(["a", "b", "c", "d", "e", "f"])),
            "tags",
            "max_length",
        ),
        bad(
            "search_products",
            with(&s, "tags", json!("a")),
            "tags",
            "type",
        ),
        bad(
            "search_products",
            with(&s, "tags", json!([1])),
            "tags[0]",
            "type",
        ),
        // items(length(min = 1, max = 16), pattern = ..): each tag on its own
        bad(
            "search_products",
            with(&s, "tags", json!(["ok", ""])),
            "tags[1]",
            "min_length",
        ),
        bad(
            "search_products",
            with(&s, "tags", json!([long(17)])),
            "tags[0]",
            "max_length",
        ),
        bad(
            "search_products",
            with(&s, "tags", json!(["lamp", "Desk"])),
            "tags[1]",
            "pattern",
        ),
        bad(
            "search_products",
            with(&s, "sort", json!("random")),
            "sort",
            "enum",
        ),
        bad(
            "search_products",
            with(&s, "sort", json!(1)),
            "sort",
            "enum",
        ),
        bad(
            "search_products",
            with(&s, "in_stock_only", json!("true")),
            "in_stock_only",
            "type",
        ),
        // filters: nested `#[mcp_type]` constraints
        bad(
            "search_products",
            filter(json!({"field": "Color", "value": "red"})),
            "filters[0].field",
            "pattern",
        ),
        bad(
            "search_products",
            filter(json!({"field": "color", "value": ""})),
            "filters[0].value",
            "min_length",
        ),
        bad(
            "search_products",
            filter(json!({"field": "color", "value": "red", "limit": 0})),
            "filters[0].limit",
            "minimum",
        ),
        bad(
            "search_products",
            filter(json!({"field": "color", "value": "red", "limit": 101})),
            "filters[0].limit",
            "maximum",
        ),
        bad(
            "search_products",
            filter(json!({"field": "color", "valu": "red"})),
            "filters[0].valu",
            "unknown_field",
        ),
        bad(
            "search_products",
            filter(json!({"field": "color"})),
            "filters[0].value",
            "missing",
        ),
        bad(
            "search_products",
            with(&s, "filters", json!({})),
            "filters",
            "type",
        ),
        bad(
            "search_products",
            filter(json!({"field": "a".repeat(33), "value": "x"})),
            "filters[0].field",
            "max_length",
        ),
        bad(
            "search_products",
            filter(json!("color=red")),
            "filters[0]",
            "type",
        ),
        // the arguments object itself
        bad(
            "search_products",
            json!({"qurey": "lamp"}),
            "qurey",
            "unknown_field",
        ),
        bad("search_products", json!([]), "", "not_an_object"),
        bad("search_products", json!("lamp"), "", "not_an_object"),
        // create_product
        bad(
            "create_product",
            with(&c, "sku", json!("sku-1234")),
            "sku",
            "pattern",
        ),
        bad(
            "create_product",
            with(&c, "sku", json!("SKU-123")),
            "sku",
            "pattern",
        ),
        bad(
            "create_product",
            with(&c, "price_cents", json!(0)),
            "price_cents",
            "minimum",
        ),
        bad(
            "create_product",
            with(&c, "price_cents", json!(7)),
            "price_cents",
            "multiple_of",
        ),
        bad(
            "create_product",
            with(&c, "price_cents", json!(1_000_005)),
            "price_cents",
            "maximum",
        ),
        bad(
            "create_product",
            with(&c, "price_cents", json!(-5)),
            "price_cents",
            "minimum",
        ),
        bad(
            "create_product",
            with(&c, "name", json!("")),
            "name",
            "min_length",
        ),
        bad(
            "create_product",
            with(&c, "name", long(61)),
            "name",
            "max_length",
        ),
        bad(
            "create_product",
            with(&c, "stock", json!(-11)),
            "stock",
            "minimum",
        ),
        bad(
            "create_product",
            with(&c, "stock", json!(10_001)),
            "stock",
            "maximum",
        ),
        bad(
            "create_product",
            with(&c, "stock", json!(3e9)),
            "stock",
            "maximum",
        ),
        bad(
            "create_product",
            with(&c, "available_from", json!("2026-13-01")),
            "available_from",
            "format",
        ),
        bad(
            "create_product",
            with(&c, "available_from", json!("tomorrow")),
            "available_from",
            "format",
        ),
        bad(
            "create_product",
            with(&c, "warehouse", json!({"street": "ab", "country": "PT"})),
            "warehouse.street",
            "min_length",
        ),
        bad(
            "create_product",
            with(&c, "warehouse", json!({"street": "Rua 1", "country": "pt"})),
            "warehouse.country",
            "pattern",
        ),
        bad(
            "create_product",
            with(&c, "warehouse", json!({"street": "Rua 1"})),
            "warehouse.country",
            "missing",
        ),
        bad(
            "create_product",
            with(&c, "warehouse", json!("Lisbon")),
            "warehouse",
            "type",
        ),
        bad(
            "create_product",
            with(&c, "currency", json!("JPY")),
            "currency",
            "enum",
        ),
        bad(
            "create_product",
            with(&c, "currency", json!(1)),
            "currency",
            "type",
        ),
        bad(
            "create_product",
            with(&c, "discount", json!(0)),
            "discount",
            "minimum",
        ),
        bad(
            "create_product",
            with(&c, "discount", json!(1)),
            "discount",
            "maximum",
        ),
        bad(
            "create_product",
            with(&c, "discount", json!(1.5)),
            "discount",
            "maximum",
        ),
        bad("create_product", without(&c, "stock"), "stock", "missing"),
        bad(
            "create_product",
            with(&c, "color", json!("red")),
            "color",
            "unknown_field",
        ),
        // contact_supplier: formats
        bad(
            "contact_supplier",
            with(&k, "email", json!("not-an-email")),
            "email",
            "format",
        ),
        bad(
            "contact_supplier",
            with(&k, "website", json!("no scheme here")),
            "website",
            "format",
        ),
        bad(
            "contact_supplier",
            with(&k, "order_id", json!("1234")),
            "order_id",
            "format",
        ),
        bad(
            "contact_supplier",
            with(&k, "callback_at", json!("2026-11-29 10:00")),
            "callback_at",
            "format",
        ),
        bad(
            "contact_supplier",
            with(&k, "host_v4", json!("256.1.1.1")),
            "host_v4",
            "format",
        ),
        bad(
            "contact_supplier",
            with(&k, "host_v6", json!("::g")),
            "host_v6",
            "format",
        ),
        bad(
            "contact_supplier",
            with(&k, "email", json!(5)),
            "email",
            "type",
        ),
        bad(
            "contact_supplier",
            without(&k, "order_id"),
            "order_id",
            "missing",
        ),
    ]
}

fn good_cases() -> Vec<Case> {
    let (s, c, k) = (search(), create(), contact());
    vec![
        // Each tag at the bounds of items(length(min = 1, max = 16), pattern = ..).
        good(
            "search_products",
            json!({"query": "lamp", "tags": ["a", "0123456789-abcde"]}),
        ),
        good("search_products", s.clone()),
        good("search_products", json!({"query": "a"})),
        good("search_products", json!({"query": "a".repeat(80)})),
        good("search_products", with(&s, "take", json!(1))),
        good("search_products", with(&s, "take", json!(50))),
        // JSON Schema counts 5.0 as an integer; so does the runtime.
        good("search_products", with(&s, "take", json!(5.0))),
        good("search_products", with(&s, "min_price", json!(0))),
        good("search_products", with(&s, "min_price", json!(null))),
        good(
            "search_products",
            with(&s, "tags", json!(["a", "b", "c", "d", "e"])),
        ),
        good("search_products", with(&s, "tags", json!([]))),
        good("search_products", with(&s, "sort", json!("price_desc"))),
        good("search_products", with(&s, "in_stock_only", json!(false))),
        good(
            "search_products",
            filter(json!({"field": "color", "value": "red"})),
        ),
        good(
            "search_products",
            filter(json!({"field": "c", "value": "r", "limit": 1})),
        ),
        good(
            "search_products",
            filter(json!({"field": "a".repeat(32), "value": "r", "limit": 100})),
        ),
        good("create_product", c.clone()),
        good("create_product", with(&c, "price_cents", json!(5))),
        good("create_product", with(&c, "price_cents", json!(1_000_000))),
        good("create_product", with(&c, "stock", json!(-10))),
        good("create_product", with(&c, "stock", json!(10_000))),
        good("create_product", with(&c, "name", json!("a".repeat(60)))),
        good("create_product", with(&c, "sku", json!("SKU-12345678"))),
        good("create_product", with(&c, "discount", json!(0.0001))),
        good("create_product", with(&c, "discount", json!(0.9999))),
        good(
            "create_product",
            with(&c, "available_from", json!("2026-02-28")),
        ),
        good("create_product", with(&c, "currency", json!("GBP"))),
        good(
            "create_product",
            with(&c, "warehouse", json!({"street": "Rua", "country": "PT"})),
        ),
        good("contact_supplier", k.clone()),
        good(
            "contact_supplier",
            with(&k, "website", json!("https://example.com/catalog?id=1")),
        ),
        good(
            "contact_supplier",
            with(&k, "callback_at", json!("2026-11-29T10:00:00+01:00")),
        ),
        good("contact_supplier", with(&k, "host_v4", json!("192.0.2.1"))),
        good(
            "contact_supplier",
            with(&k, "host_v6", json!("2001:db8::1")),
        ),
        good(
            "contact_supplier",
            with(&k, "mail", json!("old@example.com")),
        ),
    ]
}

/// Every JSON type given where another is expected: one case per pair.
fn type_pair_cases() -> Vec<Case> {
    let samples = [
        ("null", json!(null)),
        ("boolean", json!(true)),
        ("integer", json!(7)),
        ("number", json!(7.5)),
        ("string", json!("seven")),
        ("array", json!([7])),
        ("object", json!({"seven": 7})),
    ];
    // (tool, base args, field, the JSON types the field accepts)
    let targets: [(&str, Value, &str, &[&str]); 6] = [
        ("search_products", search(), "query", &["string"]),
        ("create_product", create(), "stock", &["integer"]),
        (
            "search_products",
            search(),
            "min_price",
            &["integer", "number", "null"],
        ),
        (
            "search_products",
            search(),
            "in_stock_only",
            &["boolean", "null"],
        ),
        ("search_products", search(), "tags", &["array", "null"]),
        ("create_product", create(), "warehouse", &["object", "null"]),
    ];
    let mut cases = Vec::new();
    for (tool, base, field, accepted) in targets {
        for (kind, sample) in &samples {
            if accepted.contains(kind) {
                continue;
            }
            let code = if *kind == "null" { "null" } else { "type" };
            cases.push(bad(tool, with(&base, field, sample.clone()), field, code));
        }
    }
    cases
}

fn issues(result: &fusion_runtime::testing::TestResult) -> Vec<(String, String)> {
    result
        .raw
        .meta
        .as_ref()
        .and_then(|meta| meta.0.get(ISSUES_META_KEY))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|issue| {
                    (
                        issue["path"].as_str().unwrap_or_default().to_owned(),
                        issue["code"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn schema_validators(server: &Server) -> Vec<(String, jsonschema::Validator)> {
    server
        .tools()
        .iter()
        .map(|tool| {
            let schema = Value::Object((*tool.input_schema).clone());
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true)
                .build(&schema)
                .unwrap_or_else(|error| {
                    panic!("`{}`'s schema does not compile: {error}", tool.name)
                });
            (tool.name.to_string(), validator)
        })
        .collect()
}

#[tokio::test]
async fn the_corpus_is_large_enough() {
    let bad = bad_cases().len() + type_pair_cases().len();
    assert!(bad >= 60, "only {bad} bad-argument cases");
}

#[tokio::test]
async fn every_bad_case_is_an_error_with_its_path_and_rule() {
    let tester = Tester::new(fusion_tests::inventory::server());
    let mut failures = Vec::new();
    for case in bad_cases().into_iter().chain(type_pair_cases()) {
        let result = tester.call(case.tool, case.args.clone()).await;
        let Some((path, code)) = case.expect else {
            continue;
        };
        let found = issues(&result);
        if !result.is_error || !found.iter().any(|(p, c)| p == path && c == code) {
            failures.push(format!(
                "{} {} → expected ({path}, {code}), got is_error={} {found:?}\n{}",
                case.tool,
                case.args,
                result.is_error,
                result.text()
            ));
            continue;
        }
        // The text names the path and the received value (or says it was missing).
        let text = result.text();
        let place = if path.is_empty() {
            "arguments".to_owned()
        } else {
            format!("`{path}`")
        };
        if !text.contains(&place) || !(text.contains("received") || text.contains("(missing)")) {
            failures.push(format!(
                "{} {}: the text does not name {place}:\n{text}",
                case.tool, case.args
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[tokio::test]
async fn every_boundary_value_passes() {
    let tester = Tester::new(fusion_tests::inventory::server());
    for case in good_cases() {
        let result = tester.call(case.tool, case.args.clone()).await;
        assert!(
            !result.is_error,
            "{} {} failed:\n{}",
            case.tool,
            case.args,
            result.text()
        );
    }
}

#[tokio::test]
async fn the_schema_and_the_runtime_agree_on_every_case() {
    let server = fusion_tests::inventory::server();
    let validators = schema_validators(&server);
    let tester = Tester::new(server);
    let mut disagreements = Vec::new();
    let cases = bad_cases()
        .into_iter()
        .chain(type_pair_cases())
        .chain(good_cases());
    let mut count = 0;
    for case in cases {
        let Some((_, validator)) = validators.iter().find(|(name, _)| name == case.tool) else {
            panic!("no tool `{}`", case.tool);
        };
        let schema_accepts = validator.is_valid(&case.args);
        let runtime_accepts = !tester.call(case.tool, case.args.clone()).await.is_error;
        count += 1;
        if schema_accepts != runtime_accepts {
            let reasons: Vec<String> = validator
                .iter_errors(&case.args)
                .map(|e| e.to_string())
                .collect();
            disagreements.push(format!(
                "{} {}: schema says {schema_accepts}, runtime says {runtime_accepts} {reasons:?}",
                case.tool, case.args
            ));
        }
    }
    assert!(count > 100, "{count} cases");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

#[tokio::test]
async fn a_custom_check_runs_after_the_schema_and_names_its_field() {
    let tester = Tester::new(fusion_tests::inventory::server());
    let result = tester
        .call("create_product", with(&create(), "sku", json!("SKU-00001")))
        .await;
    assert!(result.is_error);
    assert_eq!(
        issues(&result),
        vec![("sku".to_owned(), "custom".to_owned())]
    );
    assert!(
        result.text().contains("SKU-0000 is reserved"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn defaults_are_applied_and_published() {
    let server = fusion_tests::inventory::server();
    let schema = &server.tools()[0].input_schema;
    assert_eq!(schema["properties"]["take"]["default"], json!(10));
    assert!(
        !schema["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("take")))
    );
    let result = Tester::new(server).call("search_products", search()).await;
    // The stub returns min(take, 3) products: the default of 10 was applied.
    assert_eq!(result.data.as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn the_message_has_a_headline_one_line_per_problem_and_a_closing_line() {
    let tester = Tester::new(fusion_tests::inventory::server());
    let result = tester
        .call(
            "search_products",
            json!({"query": "", "take": "10", "qery": 1, "tags": ["x", "x"]}),
        )
        .await;
    let text = result.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Invalid arguments for tool `search_products`:");
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("Fix the fields above")),
        "{text}"
    );
    assert_eq!(lines.len(), 2 + issues(&result).len(), "{text}");
    assert!(text.contains("send 10 without quotes"), "{text}");
    assert!(text.contains("did you mean `query`?"), "{text}");
}

#[tokio::test]
async fn long_received_values_are_truncated() {
    let tester = Tester::new(fusion_tests::inventory::server());
    let result = tester
        .call("search_products", json!({"query": "q".repeat(5000)}))
        .await;
    let text = result.text();
    assert!(
        text.len() < 600,
        "the message carries the whole value: {} bytes",
        text.len()
    );
    assert!(text.contains('…'), "{text}");
}

#[tokio::test]
async fn limits_protect_the_server() {
    let server = Server::builder("limits", "0")
        .limits(fusion_runtime::validate::Limits {
            max_depth: 4,
            max_string_bytes: 16,
            max_items: 3,
        })
        .tool(fusion_tests::inventory::search_products)
        .build();
    let tester = Tester::new(server);
    let deep = tester
        .call(
            "search_products",
            json!({"query": "q", "filters": [{"field": {"a": {"b": 1}}}]}),
        )
        .await;
    assert_eq!(
        issues(&deep),
        vec![("filters[0].field.a".to_owned(), "too_deep".to_owned())]
    );
    let long = tester
        .call("search_products", json!({"query": "q".repeat(17)}))
        .await;
    assert_eq!(
        issues(&long),
        vec![("query".to_owned(), "too_large".to_owned())]
    );
    let many = tester
        .call(
            "search_products",
            json!({"query": "q", "tags": ["a", "b", "c", "d"]}),
        )
        .await;
    assert_eq!(
        issues(&many),
        vec![("tags".to_owned(), "too_large".to_owned())]
    );

    // Deep nesting is refused before anything recurses over it. (Over the wire serde_json
    // stops at 128 levels; `serde_json::Value`'s own drop recurses, which bounds what a
    // test can build in memory.)
    let mut nested = json!(1);
    for _ in 0..1_000 {
        nested = json!([nested]);
    }
    let result = Tester::new(fusion_tests::inventory::server())
        .call("search_products", json!({"query": "q", "tags": nested}))
        .await;
    assert!(result.is_error);
    assert_eq!(issues(&result)[0].1, "too_deep");
}

/// A default computed by an expression, which breaks the field's own maximum.
#[fusion_runtime::mcp_tool]
async fn bad_default(
    #[arg(max = 10, default = 5 + 6)]
    /// How many.
    count: u32,
) -> u32 {
    count
}

#[test]
fn a_default_that_breaks_its_constraint_fails_the_build() {
    let errors = Server::builder("defaults", "0")
        .tool(bad_default)
        .try_build()
        .expect_err("the default 11 is above the maximum 10");
    let text = errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains("`count` must be at most 10"), "{text}");
}
