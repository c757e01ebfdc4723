use fusion_runtime::prelude::*;

struct App {
    greeting: String,
}

/// Greet someone.
#[mcp_tool(timeout = "soon")]
async fn greet(#[ctx] app: &App, name: String) -> String {
    format!("{} {name}", app.greeting)
}

fn main() {
    let _ = Server::builder("registered", "0")
        .context(|| App { greeting: "hello".into() })
        .tool(greet)
        .build();
}
