use fusion_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum Error {
    #[error("gone")]
    #[invalid_input(code = gone)]
    Gone,
}

fn main() {}
