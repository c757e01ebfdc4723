//! Snapshots of the schemas `#[mcp_tool]` generates, for a set of signatures: primitives,
//! `Option`, `Vec`, a nested struct, enums, doc comments, and output types. A change to
//! any schema shows up in review as a snapshot diff.

use fusion_runtime::{Server, prelude::*, tool::ToolDefinition};
use serde_json::Value;

/// A point on a map.
#[mcp_type]
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Point {
    /// Latitude in degrees.
    pub lat: f64,
    /// Longitude in degrees.
    pub lon: f64,
}

#[allow(
    dead_code,
    reason = "decoded for its schema; the test reads the schema, not the fields"
)]
/// A filter with a nested struct and a list.
#[mcp_type]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// Only rows near this point.
    pub near: Option<Point>,
    /// Tags that must all be present.
    pub tags: Vec<String>,
}

/// How to sort.
#[mcp_type]
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Oldest first.
    Ascending,
    /// Newest first.
    Descending,
}

#[allow(
    dead_code,
    reason = "decoded for its schema; the test reads the schema, not the fields"
)]
/// A shape, with data.
#[mcp_type]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    /// A circle.
    Circle {
        /// Its radius.
        radius: f64,
    },
    /// A square.
    Square {
        /// Its side.
        side: f64,
    },
}

/// Primitives of every JSON type.
#[mcp_tool]
async fn primitives(
    /// A signed integer.
    count: i64,
    /// A small unsigned integer.
    level: u8,
    /// A float.
    ratio: f64,
    /// A flag.
    enabled: bool,
    /// Text.
    label: String,
) -> String {
    format!("{count} {level} {ratio} {enabled} {label}")
}

/// Optional and list parameters.
#[mcp_tool]
async fn optional_and_lists(
    /// Optional text.
    note: Option<String>,
    /// A list of numbers.
    values: Vec<i32>,
    /// An optional list.
    labels: Option<Vec<String>>,
) -> usize {
    values.len() + note.map_or(0, |n| n.len()) + labels.map_or(0, |l| l.len())
}

/// Nested structures and enums.
#[mcp_tool]
async fn nested(
    /// Which rows.
    filter: Filter,
    /// The sort order.
    order: Option<Order>,
    /// A shape.
    shape: Shape,
) -> Vec<Point> {
    let _ = (filter, order, shape);
    Vec::new()
}

/// No parameters at all.
#[mcp_tool]
async fn no_params() -> &'static str {
    "pong"
}

/// Returns a struct: the output schema is the struct's.
#[mcp_tool(
    description = "Where is it?",
    title = "Locate",
    read_only,
    idempotent = false
)]
async fn locate(name: String) -> Point {
    let _ = name;
    Point { lat: 0.0, lon: 0.0 }
}

/// Returns unit: no output schema.
#[mcp_tool(destructive, open_world)]
async fn unit_result() {}

fn definition<T: fusion_runtime::Tool<()>>(tool: T) -> ToolDefinition<()> {
    tool.definition()
}

fn wire(tool: impl fusion_runtime::Tool<()>) -> Value {
    let server = Server::builder("schemas", "0").tool(tool).build();
    serde_json::to_value(&server.tools()[0]).expect("a tool serializes")
}

#[test]
fn primitives_schema() {
    insta::assert_json_snapshot!(wire(primitives));
}

#[test]
fn optional_and_list_schema() {
    insta::assert_json_snapshot!(wire(optional_and_lists));
}

#[test]
fn nested_struct_and_enum_schema() {
    insta::assert_json_snapshot!(wire(nested));
}

#[test]
fn no_parameter_schema() {
    insta::assert_json_snapshot!(wire(no_params));
}

#[test]
fn structured_output_title_and_annotations() {
    insta::assert_json_snapshot!(wire(locate));
}

#[test]
fn unit_output_has_no_output_schema() {
    insta::assert_json_snapshot!(wire(unit_result));
}

#[test]
fn required_lists_exactly_the_non_option_parameters() {
    let schema = definition(optional_and_lists).input_schema().clone();
    assert_eq!(schema["required"], serde_json::json!(["values"]));
    assert_eq!(schema["additionalProperties"], Value::Bool(false));
    assert_eq!(schema["type"], "object");
}

#[test]
fn every_parameter_has_its_doc_comment() {
    let schema = definition(primitives).input_schema().clone();
    let properties = schema["properties"].as_object().expect("properties");
    assert_eq!(properties.len(), 5);
    for (name, property) in properties {
        assert!(
            property["description"].is_string(),
            "`{name}` has no description"
        );
    }
}

#[test]
fn text_and_unit_outputs_have_no_output_schema() {
    assert!(definition(primitives).output_schema().is_none());
    assert!(definition(unit_result).output_schema().is_none());
    assert!(definition(locate).output_schema().is_some());
}
