use fusion_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum Error {
    #[error("lost")]
    #[transient]
    #[fatal]
    Lost,
}

fn main() {}
