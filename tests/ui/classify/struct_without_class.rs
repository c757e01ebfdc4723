use fusion_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
#[error("it failed")]
struct Failed;

fn main() {}
