use fusion_runtime::prelude::*;

/// Not an error type: no `std::error::Error`.
#[derive(Debug)]
struct Oops;

/// Fail with something that is not an error.
#[mcp_tool]
async fn fail() -> Result<String, Oops> {
    Err(Oops)
}

fn main() {}
