use fusion_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum Error {
    #[error("busy")]
    #[transient(after = "2s")]
    Busy,
}

fn main() {}
