//! `compare --http`: fusion's quickstart over Streamable HTTP, with sessions and without,
//! the sessions of a client that declares nothing and of one that declares roots, sampling
//! and elicitation (an "askable" client: Claude Desktop, VS Code and Cursor declare them),
//! against `rmcp-http-echo` (rmcp 3.11 as its docs mount it, plus TCP_NODELAY) in both
//! modes and `floor-http-echo` (hyper and serde_json, no MCP), side by side. Each round
//! starts every server afresh, in turn, and drives it at each concurrency; the table gives
//! the medians over the rounds, the ratios are taken per round (their median and range).
//!
//! ```sh
//! cargo run --release -p fusion-bench --bin compare -- --http
//! cargo run --release -p fusion-bench --bin compare -- --http --runs 5 --concurrency 1,32
//! ```

use std::{path::PathBuf, process::ExitCode, time::Duration};

use crate::{
    cli::{Args, split_command},
    http_load::{self, HttpReport, HttpServer, Mode},
    stats::median,
};

const USAGE: &str = "usage: compare --http [--fusion \"<cmd>\"] [--rmcp \"<cmd>\"] \
[--floor \"<cmd>\"] [--runs 3] [--seconds 2] [--concurrency 1,32,256] [--sessions 1000] \
[--logs DIR] [--no-build]";

/// The goals of issue 32, as ratios: fusion against rmcp in the same mode (at 32 and at
/// 1 in flight), fusion with sessions against the floor at 32.
const GOAL_VS_RMCP_C32: f64 = 1.5;
const GOAL_VS_RMCP_C1: f64 = 1.2;
const GOAL_VS_FLOOR_C32: f64 = 0.5;

/// One server under comparison.
struct Contender {
    label: &'static str,
    command: Vec<String>,
    mode: Mode,
}

struct Options {
    build: bool,
    contenders: Vec<Contender>,
    runs: usize,
    seconds: f64,
    concurrency: Vec<usize>,
    sessions: usize,
    logs: PathBuf,
}

/// What one contender measured in one round.
#[derive(Default, Clone)]
struct Round {
    /// By concurrency, in the order of `Options::concurrency`.
    runs: Vec<HttpReport>,
    /// KiB per 1,000 sessions (sessions mode only).
    rss_per_thousand: Option<f64>,
}

/// Runs the comparison; the exit code (1 when a run failed or a call was answered wrongly).
pub fn main(args: impl IntoIterator<Item = String>) -> ExitCode {
    let options = match configure(args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("compare --http: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if options.build
        && let Err(message) = build()
    {
        eprintln!("compare --http: {message}");
        return ExitCode::FAILURE;
    }
    if let Err(error) = std::fs::create_dir_all(&options.logs) {
        eprintln!("compare --http: {}: {error}", options.logs.display());
        return ExitCode::from(2);
    }
    let mut rounds: Vec<Vec<Round>> = vec![Vec::new(); options.contenders.len()];
    let mut failed = false;
    for round in 0..options.runs {
        for (index, contender) in options.contenders.iter().enumerate() {
            match measure(&options, contender, round) {
                Ok(measured) => {
                    failed |= measured.runs.iter().any(|run| run.failures > 0);
                    rounds[index].push(measured);
                }
                Err(message) => {
                    eprintln!("compare --http: {}: {message}", contender.label);
                    failed = true;
                }
            }
        }
    }
    print_table(&options, &rounds);
    print_ratios(&options, &rounds);
    if failed {
        eprintln!("compare --http: some runs failed or had wrong answers (see above)");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn configure(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let args = Args::parse(
        args,
        &[
            "fusion",
            "rmcp",
            "floor",
            "runs",
            "seconds",
            "concurrency",
            "sessions",
            "logs",
        ],
        &["http", "no-build"],
    )?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let bin_dir = exe.parent().ok_or("this program has no directory")?;
    let sibling = |name: &str| bin_dir.join(name).to_string_lossy().into_owned();
    let command = |key: &str, default: String| -> Result<Vec<String>, String> {
        match args.get(key) {
            Some(command) => split_command(command),
            None => Ok(vec![default]),
        }
    };
    let fusion = command(
        "fusion",
        crate::user_crate::quickstart_binary(&[])
            .to_string_lossy()
            .into_owned(),
    )?;
    let rmcp = command("rmcp", sibling("rmcp-http-echo"))?;
    let floor = command("floor", sibling("floor-http-echo"))?;
    let with = |command: &[String], extra: &[&str]| -> Vec<String> {
        command
            .iter()
            .cloned()
            .chain(extra.iter().map(|arg| (*arg).to_owned()))
            .collect()
    };
    let contenders = vec![
        Contender {
            label: "fusion, sessions",
            command: with(&fusion, &["--http", "0"]),
            mode: Mode::Sessions,
        },
        Contender {
            label: "fusion, sessions, askable client",
            command: with(&fusion, &["--http", "0"]),
            mode: Mode::SessionsAskable,
        },
        Contender {
            label: "fusion, no session",
            command: with(&fusion, &["--http", "0", "--stateless"]),
            mode: Mode::Stateless,
        },
        Contender {
            label: "fusion, no session, 2026-07-28",
            command: with(&fusion, &["--http", "0", "--stateless"]),
            mode: Mode::Stateless2026,
        },
        Contender {
            label: "rmcp, sessions",
            command: rmcp.clone(),
            mode: Mode::Sessions,
        },
        Contender {
            label: "rmcp, sessions, askable client",
            command: rmcp.clone(),
            mode: Mode::SessionsAskable,
        },
        Contender {
            label: "rmcp, no session",
            command: with(&rmcp, &["--stateless"]),
            mode: Mode::Stateless,
        },
        Contender {
            label: "rmcp, no session, 2026-07-28",
            command: with(&rmcp, &["--stateless"]),
            mode: Mode::Stateless2026,
        },
        Contender {
            label: "floor",
            command: floor,
            mode: Mode::Sessions,
        },
    ];
    let concurrency = args
        .get("concurrency")
        .unwrap_or("1,32,256")
        .split(',')
        .map(|n| {
            n.trim()
                .parse::<usize>()
                .map_err(|_| format!("--concurrency: `{n}` is not a number"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Options {
        build: !args.flag("no-build") && std::env::var_os("CARGO").is_some(),
        contenders,
        runs: args.parse_or("runs", 3usize)?.max(1),
        seconds: args.parse_or("seconds", 2.0f64)?.max(0.2),
        concurrency,
        sessions: args.parse_or("sessions", 1000usize)?,
        logs: PathBuf::from(args.get("logs").unwrap_or("target/bench-logs")),
    })
}

/// Builds the baselines, and the quickstart as a user builds it
/// ([`user_crate::quickstart`](crate::user_crate::quickstart)), in release (run through
/// cargo).
fn build() -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").ok_or("not run through cargo")?;
    crate::user_crate::build_baselines(
        &cargo,
        "compare --http",
        &["rmcp-http-echo", "floor-http-echo"],
    )?;
    eprintln!("compare --http: building the quickstart as a user's crate");
    crate::user_crate::quickstart(&[]).map(drop)
}

/// One round of one contender: a fresh server, each concurrency, then its memory per
/// 1,000 sessions.
fn measure(options: &Options, contender: &Contender, round: usize) -> Result<Round, String> {
    let slug: String = contender
        .label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let log = options.logs.join(format!("http-{slug}-{round}.log"));
    let server = HttpServer::start(&contender.command, &log, Duration::from_secs(30))?;
    let warmup = Duration::from_secs_f64(options.seconds / 4.0);
    let window = Duration::from_secs_f64(options.seconds);
    let mut measured = Round::default();
    for &concurrency in &options.concurrency {
        let report = http_load::run(&server, contender.mode, concurrency, warmup, window)?;
        if let Some(example) = &report.example_failure {
            eprintln!(
                "compare --http: {} at {concurrency}: {} wrong answers, e.g. {example}",
                contender.label, report.failures
            );
        }
        measured.runs.push(report);
    }
    // The floor keeps no sessions; rmcp and fusion do, in their sessions mode.
    if contender.mode == Mode::Sessions && contender.label != "floor" && options.sessions > 0 {
        measured.rss_per_thousand = Some(http_load::rss_per_thousand_sessions(
            &server,
            options.sessions,
        )?);
    }
    Ok(measured)
}

fn print_table(options: &Options, rounds: &[Vec<Round>]) {
    println!(
        "\nStreamable HTTP, tools/call echo, {} rounds of {:.1} s each (medians)\n",
        options.runs, options.seconds
    );
    println!(
        "| server | in flight | calls/s | p99 ms | server CPU µs/call | peak RSS MiB | RSS per 1,000 sessions MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (contender, rounds) in options.contenders.iter().zip(rounds) {
        for (index, concurrency) in options.concurrency.iter().enumerate() {
            let of = |figure: &dyn Fn(&HttpReport) -> f64| {
                median(
                    &rounds
                        .iter()
                        .filter_map(|round| round.runs.get(index))
                        .map(figure)
                        .collect::<Vec<_>>(),
                )
            };
            let rss_sessions = median(
                &rounds
                    .iter()
                    .filter_map(|round| round.rss_per_thousand)
                    .collect::<Vec<_>>(),
            );
            println!(
                "| {} | {concurrency} | {} | {} | {} | {} | {} |",
                contender.label,
                shown(of(&|run| run.calls_per_second()), 0),
                shown(of(&|run| run.p99.as_secs_f64() * 1e3), 2),
                shown(of(&|run| run.cpu_us_per_call()), 1),
                shown(of(&|run| run.peak_rss_kib as f64 / 1024.0), 1),
                shown(rss_sessions.map(|kib| kib / 1024.0), 1),
            );
        }
    }
}

fn shown(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "n/a".to_owned(), |value| format!("{value:.decimals$}"))
}

/// Each ratio per round (rounds run the contenders seconds apart), then its median and
/// range, against the goal.
fn print_ratios(options: &Options, rounds: &[Vec<Round>]) {
    let position = |concurrency: usize| options.concurrency.iter().position(|&c| c == concurrency);
    let ratio = |a: usize, b: usize, concurrency: usize| -> Vec<f64> {
        let Some(index) = position(concurrency) else {
            return Vec::new();
        };
        rounds[a]
            .iter()
            .zip(&rounds[b])
            .filter_map(|(x, y)| Some((x.runs.get(index)?, y.runs.get(index)?)))
            .map(|(x, y)| x.calls_per_second() / y.calls_per_second().max(1e-9))
            .collect()
    };
    println!("\n| ratio (calls/s) | median | range | goal |");
    println!("|---|---:|---:|---:|");
    // Indexes into `Options::contenders`, in `configure`'s order.
    let (fusion, fusion_askable, fusion_stateless, fusion_2026) = (0, 1, 2, 3);
    let (rmcp, rmcp_askable, rmcp_stateless, rmcp_2026, floor) = (4, 5, 6, 7, 8);
    let lines = [
        (
            "fusion / rmcp, sessions, askable client, 32 in flight",
            fusion_askable,
            rmcp_askable,
            32,
            GOAL_VS_RMCP_C32,
        ),
        (
            "fusion / rmcp, sessions, askable client, 1 in flight",
            fusion_askable,
            rmcp_askable,
            1,
            GOAL_VS_RMCP_C1,
        ),
        (
            "fusion, sessions, askable client / floor, 32 in flight",
            fusion_askable,
            floor,
            32,
            GOAL_VS_FLOOR_C32,
        ),
        (
            "fusion / rmcp, sessions, 32 in flight",
            fusion,
            rmcp,
            32,
            GOAL_VS_RMCP_C32,
        ),
        (
            "fusion / rmcp, no session, 32 in flight",
            fusion_stateless,
            rmcp_stateless,
            32,
            GOAL_VS_RMCP_C32,
        ),
        (
            "fusion / rmcp, no session, 2026-07-28, 32 in flight",
            fusion_2026,
            rmcp_2026,
            32,
            GOAL_VS_RMCP_C32,
        ),
        (
            "fusion / rmcp, sessions, 1 in flight",
            fusion,
            rmcp,
            1,
            GOAL_VS_RMCP_C1,
        ),
        (
            "fusion / rmcp, no session, 1 in flight",
            fusion_stateless,
            rmcp_stateless,
            1,
            GOAL_VS_RMCP_C1,
        ),
        (
            "fusion / rmcp, no session, 2026-07-28, 1 in flight",
            fusion_2026,
            rmcp_2026,
            1,
            GOAL_VS_RMCP_C1,
        ),
        (
            "fusion, sessions / floor, 32 in flight",
            fusion,
            floor,
            32,
            GOAL_VS_FLOOR_C32,
        ),
    ];
    // A ratio's median and range over the rounds.
    let spread = |ratios: Vec<f64>| -> Option<(f64, f64, f64)> {
        Some((
            median(&ratios)?,
            ratios.iter().copied().reduce(f64::min)?,
            ratios.iter().copied().reduce(f64::max)?,
        ))
    };
    for (label, a, b, concurrency, goal) in lines {
        let Some((mid, low, high)) = spread(ratio(a, b, concurrency)) else {
            continue;
        };
        let met = if mid >= goal { "met" } else { "missed" };
        println!("| {label} | {mid:.2}× | {low:.2}–{high:.2} | ≥ {goal}× ({met}) |");
    }
    // The floor at every concurrency measured, for each way a client talks; the two with
    // a goal at 32 are above.
    let clients = [
        ("sessions", fusion),
        ("sessions, askable client", fusion_askable),
        ("no session", fusion_stateless),
        ("no session, 2026-07-28", fusion_2026),
    ];
    for (label, a) in clients {
        for &concurrency in &options.concurrency {
            if concurrency == 32 && (a == fusion || a == fusion_askable) {
                continue;
            }
            let Some((mid, low, high)) = spread(ratio(a, floor, concurrency)) else {
                continue;
            };
            println!(
                "| fusion, {label} / floor, {concurrency} in flight | {mid:.2}× | {low:.2}–{high:.2} | — |"
            );
        }
    }
}
