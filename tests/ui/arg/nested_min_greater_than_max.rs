use fusion_runtime::prelude::*;

#[mcp_args]
#[derive(Deserialize, JsonSchema)]
struct Filter {
    #[arg(min = 9, max = 3)]
    limit: u32,
}

fn main() {}
