use fusion_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum Error {
    #[error("busy")]
    #[transient(retry_after = "2 seconds")]
    Busy,
}

fn main() {}
