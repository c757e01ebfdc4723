use fusion_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
#[fatal]
enum ConfigError {
    #[error("missing key")]
    Missing,
    #[error("slow disk")]
    #[transient]
    Slow,
}

fn main() {}
