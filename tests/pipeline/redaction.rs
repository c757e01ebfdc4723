//! Redacted output fields (issue 40, item 2): a `#[redact]` field of an `#[mcp_type]` is
//! masked in `structuredContent`, in its text copy and in the log, at any depth, while the
//! tool's presenter sees the real value; the masked result still validates against the
//! tool's `outputSchema`.

use fusion_runtime::{
    prelude::*,
    testing::{TestResult, Tester},
    tool::{Presentation, UiBlock},
};
use serde_json::{Value, json};

const EMAIL: &str = "ada.lovelace@example.com";
const PHONE: &str = "+44 20 7946 0958";
const IBAN: &str = "GB33BUKB20201555555555";

/// A customer, with personal data.
#[mcp_type]
#[derive(Clone, Serialize, JsonSchema)]
struct Customer {
    name: String,
    /// Shown to the presenter, never to the model.
    #[redact]
    #[schemars(email)]
    email: String,
    #[redact]
    phone: Option<String>,
    /// Absent: its mask is absent too.
    #[redact]
    #[serde(skip_serializing_if = "Option::is_none")]
    fax: Option<String>,
    orders: u32,
}

/// How a customer pays: the account number is personal data in one variant only.
#[mcp_type]
#[derive(Clone, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Payment {
    Card {
        last_four: String,
    },
    Transfer {
        #[redact]
        iban: String,
        bank: String,
    },
}

/// A page of customers with their payments: the redacted fields sit two levels deep.
#[mcp_type]
#[derive(Serialize, JsonSchema)]
struct Book {
    customers: Vec<Customer>,
    payments: Vec<Payment>,
}

fn ada() -> Customer {
    Customer {
        name: "Ada".into(),
        email: EMAIL.into(),
        phone: Some(PHONE.into()),
        fax: None,
        orders: 3,
    }
}

/// The presenter reads the real address: its domain reaches the UI block.
fn by_domain(book: &Book) -> Presentation {
    Presentation::new().ui(UiBlock::table(
        ["name", "domain"],
        book.customers.iter().map(|customer| {
            let domain = customer.email.split('@').nth(1).unwrap_or("none");
            vec![customer.name.clone(), domain.to_owned()]
        }),
    ))
}

/// The customer book.
#[mcp_tool(read_only, presenter = by_domain)]
async fn crm_book() -> Book {
    Book {
        customers: vec![ada()],
        payments: vec![
            Payment::Card {
                last_four: "4242".into(),
            },
            Payment::Transfer {
                iban: IBAN.into(),
                bank: "Barclays".into(),
            },
        ],
    }
}

/// One customer.
#[mcp_tool(read_only)]
async fn crm_customer() -> Customer {
    ada()
}

fn server() -> Server {
    Server::builder("crm", "1")
        .tool(crm_book)
        .tool(crm_customer)
        .log_successes_at(tracing::Level::INFO)
        .build()
}

/// Every text of a result, as sent.
fn wire(result: &TestResult) -> String {
    result.wire_json().to_string()
}

/// The result's text blocks, in order.
fn texts(result: &TestResult) -> Vec<String> {
    result
        .raw
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect()
}

#[tokio::test]
async fn redacted_fields_are_masked_in_structured_content_and_its_text_at_any_depth() {
    let tester = Tester::new(server());
    let result = tester.call("crm_book", json!({})).await;
    assert!(!result.is_error, "{}", result.text());
    let expected = json!({
        "customers": [{
            "name": "Ada", "email": "[redacted]", "phone": null, "orders": 3
        }],
        "payments": [
            {"kind": "card", "last_four": "4242"},
            {"kind": "transfer", "iban": "[redacted]", "bank": "Barclays"}
        ]
    });
    assert_eq!(result.raw.structured_content.as_ref(), Some(&expected));
    assert_eq!(result.data, expected);
    let text_copy: Value = serde_json::from_str(&texts(&result)[0]).expect("JSON text");
    assert_eq!(text_copy, expected);
    let sent = wire(&result);
    for secret in [EMAIL, PHONE, IBAN] {
        assert!(!sent.contains(secret), "{secret} was sent: {sent}");
    }
}

#[tokio::test]
async fn the_presenter_sees_the_real_value() {
    let tester = Tester::new(server());
    let result = tester.call("crm_book", json!({})).await;
    let blocks = texts(&result);
    let table = blocks
        .iter()
        .find(|block| block.contains("| name | domain |"))
        .unwrap_or_else(|| panic!("no table in {blocks:?}"));
    assert!(table.contains("| Ada | example.com |"), "{table}");
}

#[tokio::test]
async fn the_masked_result_validates_against_the_output_schema() {
    let server = server();
    let tester = Tester::new(server.clone());
    for name in ["crm_book", "crm_customer"] {
        let tool = server
            .tools()
            .iter()
            .find(|tool| tool.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"));
        let schema = Value::Object(
            tool.output_schema
                .as_deref()
                .cloned()
                .unwrap_or_else(|| panic!("{name} has an output schema")),
        );
        let validator = jsonschema::validator_for(&schema).expect("a valid schema");
        let result = tester.call(name, json!({})).await;
        let structured = result.raw.structured_content.clone().expect("structured");
        let errors: Vec<String> = validator
            .iter_errors(&structured)
            .map(|error| error.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?} in {structured}");
    }
    // The email's `format` went from the redacted field's schema; the unredacted fields
    // keep theirs.
    let customer = server
        .tools()
        .iter()
        .find(|tool| tool.name == "crm_customer")
        .and_then(|tool| tool.output_schema.clone())
        .expect("an output schema");
    let email = &customer["properties"]["email"];
    assert_eq!(email["type"], "string", "{email}");
    assert!(email.get("format").is_none(), "{email}");
}

#[tokio::test]
async fn the_log_holds_no_redacted_value() {
    let (captured, _guard) = crate::observability::capture();
    let tester = Tester::new(server());
    for name in ["crm_book", "crm_customer"] {
        let result = tester.call(name, json!({})).await;
        assert!(!result.is_error, "{}", result.text());
    }
    let log = captured.raw();
    assert_eq!(
        log.matches("tool call succeeded").count(),
        2,
        "both calls are logged: {log}"
    );
    for secret in [EMAIL, PHONE, IBAN] {
        assert!(!log.contains(secret), "{secret} was logged: {log}");
    }
}

#[test]
fn the_value_serializes_as_itself_outside_a_result() {
    let value = serde_json::to_value(ada()).expect("serializes");
    assert_eq!(value["email"], EMAIL);
    assert_eq!(value["phone"], PHONE);
}
