//! Fencing tokens: a replica that was paused past its lease, and wakes up after another
//! replica took its work over, loses its late write at the handler's own database.
//!
//! A lease alone cannot stop a late write. The runner of a keyed call renews its claim on
//! Redis while it runs; a runner that stops renewing (its process stopped, its VM frozen,
//! its network cut) loses the key after the lease, and a tool that is `idempotent` is run
//! again by another replica. The first runner is not dead, though: it may wake up and go
//! on to its write, after the second one wrote. The runtime refuses the late runner's own
//! write to the key's record on Redis; the handler's database write is the handler's to
//! fence. Each claim of a key carries a fencing token, larger with each new claim
//! (`Call::fencing_token`), and the write is one conditional statement: it changes the row
//! only if no run with a larger token has written it. The late runner's statement changes
//! nothing, and it answers with an error that says it was fenced out.
//!
//! ```text
//! cargo run --example fencing -- --http 8001 --redis redis://127.0.0.1:6379 --db /tmp/payments.db --lease-ms 1000
//! cargo run --example fencing -- --http 8002 --redis redis://127.0.0.1:6379 --db /tmp/payments.db --lease-ms 1000
//! ```
//!
//! One tool, `record_payment` (idempotent, one run per `payment_id`): it sleeps `delay_ms`
//! (the slow part of its work), then writes the payment to the SQLite file `--db` that
//! every replica shares, with its fencing token and the replica's pid. Pause a replica in
//! that sleep (`kill -STOP`), call again with the same `payment_id` on the other after the
//! lease, then resume the first (`kill -CONT`): the row keeps the second run's token, and
//! the first answers that it was fenced out. `tests/fleet/fencing.rs` does exactly that.
//! `--http 0` picks a free port and prints the URL; `--stateless` serves without sessions.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use fusion_runtime::{Call, HttpOptions, prelude::*, redis::RedisStore};
use rusqlite::{Connection, OptionalExtension as _, params};

/// How long a write waits for another replica's write to the same file before SQLite says
/// it is busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The payments table: one row a payment, with the fencing token of the run that wrote it
/// and the pid of the replica that ran it.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS payments (
    id TEXT PRIMARY KEY,
    amount_cents INTEGER NOT NULL,
    fence INTEGER NOT NULL,
    replica INTEGER NOT NULL
)";

/// The one conditional write: a new payment is inserted; an existing row is overwritten
/// only by a run whose fencing token is at least the row's. A larger token is a newer claim
/// of the key; an equal one is the same run writing again (a transient failure retried
/// under the tool's policy). A stale runner's token is smaller: it changes no row. One
/// statement, so there is no moment between a check and a write where a newer run could
/// come between them.
const UPSERT: &str =
    "INSERT INTO payments (id, amount_cents, fence, replica) VALUES (?1, ?2, ?3, ?4)
    ON CONFLICT(id) DO UPDATE SET
        amount_cents = excluded.amount_cents, fence = excluded.fence, replica = excluded.replica
    WHERE excluded.fence >= payments.fence";

/// The database every replica writes to: one connection per process, used from the
/// blocking pool (SQLite calls block; a runtime thread never waits on the file's lock).
#[derive(Clone)]
struct Db {
    connection: Arc<Mutex<Connection>>,
}

impl Db {
    /// Opens (or creates) the SQLite file at `path`: WAL mode, so readers do not block the
    /// writer, and a busy timeout, since several replicas write the same file.
    fn open(path: &Path) -> rusqlite::Result<Self> {
        let connection = Connection::open(path)?;
        connection.busy_timeout(BUSY_TIMEOUT)?;
        // `journal_mode` answers with the mode now in force; WAL stays set in the file.
        let _mode: String =
            connection.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        connection.execute(SCHEMA, [])?;
        Ok(Self {
            connection: Arc::new(Mutex::new(connection)),
        })
    }

    /// Writes `payment` under its fencing token, on the blocking pool; `Ok(None)` when the
    /// row was written, `Ok(Some(newer))` when a run with a larger token (`newer`) already
    /// wrote it.
    async fn record(&self, payment: Payment) -> Result<Option<i64>, PaymentError> {
        // SQLite's integers are signed; Redis's tokens (microseconds) fit for 290 000 years.
        let fence = i64::try_from(payment.fence)
            .map_err(|_| PaymentError::FenceOutOfRange(payment.fence))?;
        let connection = Arc::clone(&self.connection);
        // Await: the write on the blocking pool. A drop here leaves the statement to run
        // to its end there (one statement: it is written whole or not at all).
        tokio::task::spawn_blocking(move || {
            // A panic elsewhere while the lock was held leaves no statement half-done
            // (SQLite rolls it back), so the connection stays usable.
            let connection = connection.lock().unwrap_or_else(PoisonError::into_inner);
            let changed = connection
                .execute(
                    UPSERT,
                    params![payment.id, payment.amount_cents, fence, payment.replica],
                )
                .map_err(PaymentError::from_sqlite)?;
            if changed == 1 {
                return Ok(None);
            }
            // Refused: read the newer token, for the answer and the log only (the write
            // above decided alone).
            let newer: Option<i64> = connection
                .query_row(
                    "SELECT fence FROM payments WHERE id = ?1",
                    [&payment.id],
                    |row| row.get(0),
                )
                .optional()
                .map_err(PaymentError::from_sqlite)?;
            Ok(Some(newer.unwrap_or(0)))
        })
        .await?
    }
}

/// One payment as written, with the fencing token of the run that writes it.
struct Payment {
    id: String,
    amount_cents: i64,
    fence: u64,
    replica: u32,
}

/// Errors of `record_payment`.
#[derive(Debug, thiserror::Error, Classify)]
enum PaymentError {
    /// A newer run of the same key (another replica, after this one stopped renewing its
    /// claim) wrote the payment first: this run is a stale writer.
    #[error(
        "payment {payment_id} was not written by replica {replica}: fenced out, a stale writer (fence {fence}); a newer run of this payment_id wrote it under fence {newer}"
    )]
    #[invalid_input(
        code = conflict,
        hint = "the payment is recorded by a newer run of the same payment_id: call again with the same payment_id and arguments to get its result, never with a new payment_id"
    )]
    FencedOut {
        payment_id: String,
        replica: u32,
        fence: u64,
        newer: i64,
    },
    /// The call holds no claim of its key (the store handed it none): writing without a
    /// token could overwrite a newer run's row.
    #[error("payment not written: the call holds no fencing token")]
    #[internal]
    NoFence,
    /// A token past SQLite's integers (never from Redis's clock).
    #[error("payment not written: its fencing token {0} does not fit an SQLite integer")]
    #[internal]
    FenceOutOfRange(u64),
    /// Another replica held the file's write lock longer than the busy timeout.
    #[error("the payments database is busy: {0}")]
    #[transient]
    Busy(rusqlite::Error),
    #[error("cannot write the payment: {0}")]
    #[internal]
    Database(rusqlite::Error),
    #[error("the database worker stopped: {0}")]
    #[internal]
    Worker(#[from] tokio::task::JoinError),
}

impl PaymentError {
    /// A busy or locked file is transient (retried under the tool's policy); anything else
    /// is a bug or a broken file.
    fn from_sqlite(error: rusqlite::Error) -> Self {
        match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                Self::Busy(error)
            }
            _ => Self::Database(error),
        }
    }
}

/// Record a payment once per `payment_id` (safe to repeat: the database keeps one row a
/// payment).
#[mcp_tool(idempotent, idempotency_key = "payment_id")]
async fn record_payment(
    #[ctx] db: &Db,
    #[call] call: &Call,
    /// The client's id of this payment: calls with the same id record it once.
    #[arg(non_empty, length(max = 128))]
    payment_id: String,
    /// The amount, in cents.
    #[arg(min = 1)]
    amount_cents: i64,
    /// How long the work before the write takes, in milliseconds.
    #[arg(max = 60000)]
    delay_ms: Option<u32>,
) -> Result<String, PaymentError> {
    // Taken before the slow part: the token is the claim's, whenever the write comes.
    let fence = call.fencing_token().ok_or(PaymentError::NoFence)?;
    let replica = std::process::id();
    // Await: the slow part of the work; holds nothing of its own (a drop here writes
    // nothing). A process stopped here past its lease wakes up to a key taken over.
    tokio::time::sleep(Duration::from_millis(u64::from(delay_ms.unwrap_or(0)))).await;
    let payment = Payment {
        id: payment_id.clone(),
        amount_cents,
        fence,
        replica,
    };
    match db.record(payment).await? {
        None => Ok(format!(
            "recorded payment {payment_id} of {amount_cents} cents under fence {fence} by replica {replica}"
        )),
        Some(newer) => Err(PaymentError::FencedOut {
            payment_id,
            replica,
            fence,
            newer,
        }),
    }
}

/// The value after `flag`, parsed.
fn flag<T: std::str::FromStr>(args: &[String], flag: &str) -> Result<Option<T>, String> {
    match args.iter().position(|arg| arg == flag) {
        None => Ok(None),
        Some(at) => args
            .get(at + 1)
            .and_then(|value| value.parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{flag} takes a value")),
    }
}

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "fencing",
    about: "a replica that records payments once per payment_id, fenced at its SQLite database by the claim's token",
    flags: &[
        (
            "--http",
            "PORT",
            "serve Streamable HTTP on 127.0.0.1:PORT (required; 0: a free port)",
        ),
        (
            "--redis",
            "URL",
            "the Redis to share idempotency keys on (required)",
        ),
        (
            "--db",
            "PATH",
            "the SQLite file of payments, shared by the replicas (required; created if missing)",
        ),
        (
            "--lease-ms",
            "MS",
            "the lease of an idempotency claim (default 10000)",
        ),
        ("--stateless", "", "serve without sessions"),
    ],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    let args: Vec<String> = std::env::args().collect();
    let parsed = (|| {
        Ok::<_, String>((
            flag::<u16>(&args, "--http")?.ok_or("--http PORT is required")?,
            flag::<String>(&args, "--redis")?.ok_or("--redis URL is required")?,
            flag::<PathBuf>(&args, "--db")?.ok_or("--db PATH is required")?,
            flag::<u64>(&args, "--lease-ms")?,
        ))
    })();
    let (port, url, db_path, lease_ms) = match parsed {
        Ok(parsed) => parsed,
        Err(problem) => {
            eprintln!("fencing: {problem}");
            return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
        }
    };
    let db = match Db::open(&db_path) {
        Ok(db) => db,
        Err(error) => {
            eprintln!("fencing: cannot open {}: {error}", db_path.display());
            return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
        }
    };
    let mut redis = match RedisStore::connect(&url).await {
        Ok(redis) => redis,
        Err(error) => {
            eprintln!("fencing: cannot reach Redis at {url}: {error}");
            return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
        }
    };
    if let Some(lease_ms) = lease_ms {
        redis = redis.lease(Duration::from_millis(lease_ms));
    }
    let options = HttpOptions::default()
        .port(port)
        .stateless(args.iter().any(|arg| arg == "--stateless"));
    Server::builder("fencing", "1.0.0")
        .context(move || db.clone())
        .tool(record_payment)
        .idempotency_store(redis)
        .serve_http_with(options)
        .await
}
