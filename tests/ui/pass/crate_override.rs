//! `crate = path` reaches the runtime through a re-export, with local items shadowing the
//! names generated code could otherwise trip on.
#![allow(dead_code, non_camel_case_types)]

mod reexport {
    pub use ::fusion_runtime as fusion;
}

// Shadows: none of these may be picked up by the generated code.
mod fusion_runtime {}
mod core {}
mod serde {}
mod schemars {}
struct Result;
struct Option;
struct Box;
struct Vec;
struct String;

use reexport::fusion::prelude::{Deserialize, JsonSchema, Serialize};

#[reexport::fusion::mcp_type(crate = "crate::reexport::fusion")]
#[derive(Deserialize, Serialize, JsonSchema)]
struct Filter {
    #[arg(min = 1, max = 5)]
    limit: u32,
}

/// Add.
#[reexport::fusion::mcp_tool(crate = "crate::reexport::fusion", retry(attempts = 2), timeout = "1s")]
async fn add(#[arg(min = 0)] a: i64, b: i64, filter: ::std::option::Option<Filter>) -> ::std::result::Result<i64, ::std::io::Error> {
    let _ = filter;
    ::std::result::Result::Ok(a + b)
}

#[derive(Debug, reexport::fusion::Classify)]
#[classify(crate = "crate::reexport::fusion")]
#[transient]
struct Flaky;

impl ::std::fmt::Display for Flaky {
    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
        f.write_str("flaky")
    }
}

impl ::std::error::Error for Flaky {}

fn main() {
    let _ = reexport::fusion::Server::builder("override", "0").tool(add).build();
}
