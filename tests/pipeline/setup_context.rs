//! A context made from what a start-up step opens (`context_from_setup`, issue 36, item 7):
//! opened once, after the environment checks, before the first call; its failure stops
//! the start; `build` refuses such a server rather than serve calls without a context.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use fusion_runtime::{
    BuildError, Server, ServerBuilder, StartupError, prelude::*, testing::Tester,
};
use serde_json::json;

/// What the server opens once: a stand-in for a pool.
struct Pool {
    label: String,
}

/// Each call's context: the opened pool.
struct App {
    pool: Arc<Pool>,
}

/// The label of the opened pool.
#[mcp_tool(read_only)]
async fn pool_label(#[ctx] app: &App) -> String {
    app.pool.label.clone()
}

/// A builder whose context opens a pool labelled `label`, counting the opens in `opens`.
fn notes(
    opens: &Arc<AtomicUsize>,
    label: Result<&'static str, &'static str>,
) -> ServerBuilder<App> {
    let opens = Arc::clone(opens);
    Server::builder("notes", "1")
        .context_from_setup(
            move || async move {
                opens.fetch_add(1, Ordering::SeqCst);
                label.map(|label| {
                    Arc::new(Pool {
                        label: label.to_owned(),
                    })
                })
            },
            |pool, _request| App {
                pool: Arc::clone(pool),
            },
        )
        .tool(pool_label)
}

#[tokio::test]
async fn the_context_is_opened_once_and_reaches_every_call() {
    let opens = Arc::new(AtomicUsize::new(0));
    let server = notes(&opens, Ok("primary"))
        .start()
        .await
        .unwrap_or_else(|error| panic!("the server starts: {error}"));
    let tester = Tester::new(server);
    for _ in 0..3 {
        let result = tester.call("pool_label", json!({})).await;
        assert!(!result.is_error, "{}", result.text());
        assert_eq!(result.text(), "primary");
    }
    assert_eq!(opens.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_failed_open_stops_the_start_with_its_error() {
    let opens = Arc::new(AtomicUsize::new(0));
    let started = notes(&opens, Err("cannot reach the database"))
        .start()
        .await;
    match started {
        Err(StartupError::Setup(message)) => {
            assert!(message.contains("cannot reach the database"), "{message}");
        }
        Err(other) => panic!("expected a setup error, got {other}"),
        Ok(_) => panic!("a failed open must stop the start"),
    }
}

#[tokio::test]
async fn a_missing_variable_stops_the_start_before_anything_is_opened() {
    let opens = Arc::new(AtomicUsize::new(0));
    let started = notes(&opens, Ok("primary"))
        .require_env("FUSION_TEST_SURELY_UNSET_VARIABLE")
        .start()
        .await;
    assert!(matches!(started, Err(StartupError::MissingEnv(_))));
    assert_eq!(opens.load(Ordering::SeqCst), 0);
}

#[test]
fn build_refuses_a_context_that_only_start_can_open() {
    let opens = Arc::new(AtomicUsize::new(0));
    let Err(errors) = notes(&opens, Ok("primary")).try_build() else {
        panic!("try_build must refuse a context made in setup");
    };
    assert_eq!(errors, [BuildError::ContextNeedsStart]);
    assert!(errors[0].to_string().contains(".start().await"));
    assert_eq!(opens.load(Ordering::SeqCst), 0);
}
