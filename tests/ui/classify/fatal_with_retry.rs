use fusion_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum Error {
    #[error("the configuration is corrupt")]
    #[fatal(retry_after = "5s")]
    Corrupt,
}

fn main() {}
