use fusion_runtime::prelude::*;

#[mcp_type]
#[derive(Deserialize, JsonSchema)]
struct Filter {
    #[arg(min = 9, max = 3)]
    limit: u32,
}

fn main() {}
