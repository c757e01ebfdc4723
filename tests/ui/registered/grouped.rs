use fusion_runtime::prelude::*;

/// Add a note.
#[mcp_tool(group = "notes", action = "add", retry(backoff = "1s"))]
async fn add_note(text: String) -> String {
    text
}

fn main() {
    let _ = Server::builder("registered", "0")
        .group("notes", "Notes.")
        .tool(add_note)
        .build();
}
