//! Every form of `#[derive(Classify)]` compiles.
use fusion_runtime::{Classify, prelude::*};

#[derive(Debug, thiserror::Error, Classify)]
enum DbError {
    #[error("lost")]
    #[transient]
    Lost,
    #[error("slow down")]
    #[transient(code = rate_limited, retry_after = "2s", hint = "wait")]
    SlowDown,
    #[error("no user {0}")]
    #[invalid_input(code = not_found, hint = "list users first")]
    NoUser(u64),
    #[error("denied")]
    #[invalid_input(code = forbidden)]
    Denied,
    #[error("bug")]
    #[internal]
    Bug,
    #[error("stale")]
    #[warning]
    Stale,
    #[error("config")]
    #[fatal]
    Config,
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("wrapped")]
    Wrapped {
        #[source]
        source: std::io::Error,
    },
}

#[derive(Debug, thiserror::Error, Classify)]
#[fatal]
#[error("the configuration is corrupt")]
struct Corrupt;

#[derive(Debug, thiserror::Error, Classify)]
#[classify(crate = "::fusion_runtime")]
#[error("busy")]
#[transient(retry_after = "100ms")]
struct Busy;

struct App {
    db: Db,
}

struct Db;

impl fusion_runtime::policy::Reconnect for Db {
    type Error = std::io::Error;
    async fn reconnect(&self) -> Result<(), std::io::Error> {
        Ok(())
    }
}

/// Uses every policy key.
#[mcp_tool(timeout = "5s", retry(attempts = 3, backoff = "10ms", max_backoff = "1s"), circuit(failures = 5, window = "30s", cooldown = "10s"), reconnect = db)]
async fn query(#[ctx] app: &App, id: u64) -> Result<String, DbError> {
    let _ = &app.db;
    if id == 0 { Err(DbError::NoUser(id)) } else { Ok(String::new()) }
}

fn main() {
    let _ = Server::builder("classify", "0").context(|| App { db: Db }).classify::<DbError>().tool(query).build();
    let _ = (Corrupt.classification(), Busy.classification(), DbError::Lost.classification());
}
