use fusion_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum Error {
    #[error("no such user")]
    #[internal(code = not_found)]
    NoUser,
    #[error("slow down")]
    #[invalid_input(code = rate_limited)]
    SlowDown,
}

fn main() {}
