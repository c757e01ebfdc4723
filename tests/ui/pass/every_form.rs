//! Every attribute form the guide documents, in one crate that must compile.
use fusion_runtime::prelude::*;

struct App;

/// A nested argument type with constraints.
#[mcp_type]
#[derive(Deserialize, JsonSchema)]
struct Filter {
    /// How many.
    #[arg(min = 1, max = 50, default = 10)]
    limit: u32,
    /// Which column.
    #[arg(pattern = "^[a-z_]+$", length(min = 1, max = 32))]
    column: String,
}

/// Plain.
#[mcp_tool]
async fn plain(a: i64) -> i64 {
    a
}

/// Renamed, titled, annotated.
#[mcp_tool(name = "get_weather", title = "Weather", read_only, idempotent, open_world = false)]
async fn weather(#[ctx] app: &App, city: String) -> String {
    let _ = app;
    city
}

#[mcp_tool(description = "Described by the attribute.", destructive)]
async fn described() {}

/// Every constraint.
#[mcp_tool(crate = "::fusion_runtime")]
async fn constrained(
    #[arg(min = 1, max = 10, multiple_of = 1)] a: u8,
    #[arg(exclusive_min = 0.0, exclusive_max = 1.0)] ratio: f64,
    #[arg(length(max = 8), non_empty, pattern = "^[a-z]+$", deprecated)] word: String,
    #[arg(format = "email")] email: Option<String>,
    #[arg(one_of = ["a", "b"], default = "a".to_owned())] choice: String,
    #[arg(unique, length(max = 3))] tags: Vec<String>,
    #[arg(validate = check_word)] other: String,
    filters: Vec<Filter>,
) -> String {
    let _ = (a, ratio, email, choice, tags, other, filters);
    word
}

fn check_word(word: &str) -> Result<(), String> {
    if word.is_empty() { Err("empty".into()) } else { Ok(()) }
}

fn main() {
    let _ = Server::builder("every-form", "0")
        .context(|| App)
        .tool(plain)
        .tool(weather)
        .tool(described)
        .tool(constrained)
        .build();
}

/// A parameter named like the tool.
#[mcp_tool]
async fn name(name: String) -> String {
    name
}

const _: () = {
    let _ = name;
};
