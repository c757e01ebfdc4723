use fusion_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum Error {
    #[error("bug")]
    #[internal(hint = "try again")]
    Bug,
}

fn main() {}
