//! `compare`: fusion's echo server with its JSON call log on (the default) and off
//! (`RUST_LOG=off`), `rmcp-echo` (rmcp 3.11 as its docs show it) and `floor-echo` (a bare
//! serde_json responder) side by side, at C=1 and C=32, alternating A B C D A B C D so that
//! drift on a shared machine hits all four alike. Prints the medians of `--runs` runs, the
//! ratios (the median of the per-round ratios, with their range) and the goals of issues
//! 9 and 20 against what was measured.
//!
//! ```sh
//! cargo run --release -p fusion-bench --bin compare
//! cargo run --release -p fusion-bench --bin compare -- --fusion "target/release/examples/demo --stdio" --runs 5
//! ```
//!
//! `--client current` adds a 2026-07-28 client (no `initialize`; every call's `_meta` names
//! the revision, the client and its capabilities) against fusion, rmcp and the floor, as
//! rows of their own (`fusion-2026-07-28`, ...), with their ratios to the classic client
//! and to the floor (issue 56).
//!
//! `--rmcp target/release/rmcp-pipe-echo` measures rmcp's own service without its
//! blocking-pool stdio (built with the baselines).
//!
//! Each server is first probed with a short run to size its measured runs to about
//! `--seconds` of wall time (so the slow baseline does not take minutes and the fast ones
//! are long enough for the 100 Hz CPU clock). Run through cargo, it first builds the two
//! baselines and, unless `--fusion` is given, the quickstart as a user builds it
//! (`examples/quickstart.rs` in a crate of its own on `fusion-runtime`'s default features,
//! `fusion_bench::user_crate`; `--no-build` skips this). Server stderr (fusion's JSON call log) goes to files in `target/bench-logs/`.
//!
//! `compare --http` compares over Streamable HTTP instead (`fusion_bench::http_compare`).
//!
//! `compare --otel` measures what OpenTelemetry costs (issue 38): the quickstart with its
//! call log and OTLP export on (every call a span: the SDK's default sampler), the same
//! sampled out (`OTEL_TRACES_SAMPLER=always_off`), the call log alone, and both off
//! (`RUST_LOG=off`, no endpoint), at C=32 unless `--concurrency` says otherwise. The
//! servers export to a collector this program runs on a loopback port
//! (`fusion_bench::otlp_sink`), which decodes and counts the spans: the table gives the
//! spans received per call, so a batch processor that dropped spans shows.
//!
//! Exits 1 when any run failed or broke "every id answered exactly once, not an error";
//! missed goals are reported, not fatal (`--strict` makes them exit 3).

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use fusion_bench::{
    cli::{Args, split_command},
    load::{self, Client, LoadConfig, RunReport},
    otlp_sink::OtlpSink,
    stats::median,
    user_crate,
};

const USAGE: &str = "usage: compare [--fusion \"<cmd>\"] [--rmcp \"<cmd>\"] [--floor \"<cmd>\"] \
[--runs 3] [--seconds 2] [--concurrency 1,32] [--tool echo] [--args '{\"text\":\"hi\"}'] \
[--timeout SECS] [--logs DIR] [--client classic|current] [--no-build] [--strict] [--otel]";

/// The goals, as ratios (absolute figures move with the machine): fusion with its call log
/// on against the floor (issue 20: at 1 and at 32 in flight), the call log's cost (log on
/// against log off, at 32 in flight), fusion against rmcp (issue 9), and memory.
const GOAL_VS_FLOOR_C1: f64 = 0.8;
const GOAL_VS_FLOOR_C32: f64 = 0.6;
const GOAL_LOG_ON_VS_OFF_C32: f64 = 0.9;
const GOAL_VS_RMCP_C32: f64 = 15.0;
const GOAL_RSS_VS_RMCP: f64 = 2.0;
/// Issue 56: a 2026-07-28 client within 10% of the classic one's calls/s, and at least
/// 0.6× the floor at 32 in flight.
const GOAL_CURRENT_VS_CLASSIC: f64 = 0.9;
const GOAL_CURRENT_VS_FLOOR_C32: f64 = 0.6;
/// Issue 38: tracing costs at most 15% of the throughput with every call exported (the
/// SDK's default sampler), and at most 3% sampled out, both against the call log alone.
const GOAL_OTEL_EXPORTED: f64 = 0.85;
const GOAL_OTEL_SAMPLED_OUT: f64 = 0.97;

/// One server under comparison.
struct Contender {
    label: &'static str,
    command: Vec<String>,
    /// How the driver speaks to it.
    client: Client,
}

struct Options {
    /// Build before measuring: `Some(true)` also builds fusion's quickstart.
    build: Option<bool>,
    /// The features of `fusion-runtime` the quickstart is built with.
    features: &'static [&'static str],
    contenders: Vec<Contender>,
    runs: usize,
    seconds: f64,
    concurrency: Vec<usize>,
    tool: String,
    arguments: serde_json::Value,
    timeout: Duration,
    logs: PathBuf,
    strict: bool,
    /// `--otel`: the collector the exporting contenders send to.
    sink: Option<OtlpSink>,
}

fn main() -> ExitCode {
    if std::env::args().skip(1).any(|arg| arg == "--http") {
        return fusion_bench::http_compare::main(std::env::args().skip(1));
    }
    let options = match configure() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("compare: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Some(quickstart) = options.build
        && let Err(message) = build(quickstart.then_some(options.features))
    {
        eprintln!("compare: {message}");
        return ExitCode::FAILURE;
    }
    if let Err(message) = check_programs(&options.contenders) {
        eprintln!("compare: {message}");
        return ExitCode::FAILURE;
    }
    if let Err(message) = std::fs::create_dir_all(&options.logs) {
        eprintln!(
            "compare: cannot create {}: {message}",
            options.logs.display()
        );
        return ExitCode::from(2);
    }
    compare(&options)
}

fn configure() -> Result<Options, String> {
    let args = Args::parse(
        std::env::args().skip(1),
        &[
            "fusion",
            "rmcp",
            "floor",
            "runs",
            "seconds",
            "concurrency",
            "tool",
            "args",
            "timeout",
            "logs",
            "client",
        ],
        &["no-build", "strict", "otel"],
    )?;
    // `target/release/compare` → `target/release`, where cargo put the baselines.
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let bin_dir = exe
        .parent()
        .ok_or("this program has no directory")?
        .to_path_buf();
    let sibling = |name: &str| bin_dir.join(name).to_string_lossy().into_owned();
    let command = |key: &str, default: String| -> Result<Vec<String>, String> {
        match args.get(key) {
            Some(command) => split_command(command),
            None => Ok(vec![default]),
        }
    };
    // `--otel` measures the quickstart as a user who wants OpenTelemetry builds it.
    let features: &[&str] = if args.flag("otel") { &["otel"] } else { &[] };
    let fusion = command(
        "fusion",
        user_crate::quickstart_binary(features)
            .to_string_lossy()
            .into_owned(),
    )?;
    // The same server with variables set: `env` execs the server, so its pid is sampled.
    let with_env = |variables: &[&str]| -> Vec<String> {
        std::iter::once("env")
            .chain(variables.iter().copied())
            .map(str::to_owned)
            .chain(fusion.iter().cloned())
            .collect()
    };
    let sink = if args.flag("otel") {
        Some(OtlpSink::start().map_err(|e| format!("cannot start the OTLP collector: {e}"))?)
    } else {
        None
    };
    let contenders = if let Some(sink) = &sink {
        let endpoint = format!("OTEL_EXPORTER_OTLP_ENDPOINT={}", sink.endpoint());
        vec![
            Contender {
                label: "log+otel",
                command: with_env(&[&endpoint]),
                client: Client::Classic,
            },
            Contender {
                label: "log+otel-off",
                command: with_env(&[&endpoint, "OTEL_TRACES_SAMPLER=always_off"]),
                client: Client::Classic,
            },
            Contender {
                label: "log",
                command: fusion.clone(),
                client: Client::Classic,
            },
            Contender {
                label: "both-off",
                command: with_env(&["RUST_LOG=off"]),
                client: Client::Classic,
            },
        ]
    } else {
        stdio_contenders(&args, fusion.clone(), with_env(&["RUST_LOG=off"]), &sibling)?
    };
    let concurrency = args
        .get("concurrency")
        .unwrap_or(if sink.is_some() { "32" } else { "1,32" })
        .split(',')
        .map(|c| {
            c.trim()
                .parse::<usize>()
                .ok()
                .filter(|&c| c > 0)
                .ok_or(format!("`--concurrency`: `{c}` is not a positive number"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let arguments = match args.get("args") {
        Some(json) => {
            serde_json::from_str(json).map_err(|error| format!("`--args {json}`: {error}"))?
        }
        None => serde_json::json!({"text": "hi"}),
    };
    let logs = match args.get("logs") {
        Some(dir) => PathBuf::from(dir),
        None => bin_dir.parent().map_or_else(
            || bin_dir.join("bench-logs"),
            |target| target.join("bench-logs"),
        ),
    };
    Ok(Options {
        build: (!args.flag("no-build")).then_some(args.get("fusion").is_none()),
        features: if args.flag("otel") { &["otel"] } else { &[] },
        contenders,
        runs: args.parse_or("runs", 3usize)?.max(1),
        seconds: args.parse_or("seconds", 2.0f64)?.max(0.1),
        concurrency,
        tool: args.get("tool").unwrap_or("echo").to_owned(),
        arguments,
        timeout: Duration::from_secs_f64(args.parse_or("timeout", 180.0)?),
        logs,
        strict: args.flag("strict"),
        sink,
    })
}

/// The stdio comparison's servers: fusion with its log on and off, rmcp, the floor.
fn stdio_contenders(
    args: &Args,
    fusion: Vec<String>,
    fusion_quiet: Vec<String>,
    sibling: &dyn Fn(&str) -> String,
) -> Result<Vec<Contender>, String> {
    let command = |key: &str, default: String| -> Result<Vec<String>, String> {
        match args.get(key) {
            Some(command) => split_command(command),
            None => Ok(vec![default]),
        }
    };
    let mut contenders = vec![
        Contender {
            label: "fusion",
            command: fusion,
            client: Client::Classic,
        },
        Contender {
            label: "fusion-log-off",
            command: fusion_quiet,
            client: Client::Classic,
        },
        Contender {
            label: "rmcp",
            command: command("rmcp", sibling("rmcp-echo"))?,
            client: Client::Classic,
        },
        Contender {
            label: "floor",
            command: command("floor", sibling("floor-echo"))?,
            client: Client::Classic,
        },
    ];
    match args.get("client").map(|name| (name, Client::parse(name))) {
        None | Some((_, Some(Client::Classic))) => {}
        Some((_, Some(Client::Current))) => {
            // The same servers, each also driven by a 2026-07-28 client.
            let current: Vec<Contender> = contenders
                .iter()
                .filter_map(|contender| {
                    let label = match contender.label {
                        "fusion" => "fusion-2026-07-28",
                        "rmcp" => "rmcp-2026-07-28",
                        "floor" => "floor-2026-07-28",
                        _ => return None,
                    };
                    Some(Contender {
                        label,
                        command: contender.command.clone(),
                        client: Client::Current,
                    })
                })
                .collect();
            contenders.extend(current);
        }
        Some((name, None)) => {
            return Err(format!(
                "`--client {name}`: the client is `classic` or `current`"
            ));
        }
    }
    Ok(contenders)
}

/// Every server program given as a path must exist.
fn check_programs(contenders: &[Contender]) -> Result<(), String> {
    for contender in contenders {
        let program = Path::new(&contender.command[0]);
        if program.components().count() > 1 && !program.exists() {
            return Err(format!(
                "{} server `{}` does not exist; build it first (fusion's quickstart: run \
                 `compare` through cargo without `--no-build`)",
                contender.label,
                program.display()
            ));
        }
    }
    Ok(())
}

/// Builds the baselines (and fusion's quickstart) in release when run through cargo,
/// so a stale binary is never measured.
fn build(quickstart: Option<&[&str]>) -> Result<(), String> {
    let Some(cargo) = std::env::var_os("CARGO") else {
        // Not run through cargo: measure the binaries as they are.
        return Ok(());
    };
    user_crate::build_baselines(
        &cargo,
        "compare",
        &["rmcp-echo", "floor-echo", "rmcp-pipe-echo"],
    )?;
    if let Some(features) = quickstart {
        eprintln!(
            "compare: building the quickstart as a user's crate ({})",
            user_crate::quickstart_binary(features).display()
        );
        user_crate::quickstart(features)?;
    }
    Ok(())
}

/// The measured runs of one contender at one concurrency.
#[derive(Default)]
struct Cell {
    calls: u64,
    /// Each run's report, by round (`None`: that run failed).
    rounds: Vec<Option<RunReport>>,
    failures: Vec<String>,
    /// `--otel`: the spans the collector received per call (warm-up included), each run.
    spans_per_call: Vec<f64>,
}

impl Cell {
    fn reports(&self) -> impl Iterator<Item = &RunReport> {
        self.rounds.iter().flatten()
    }

    fn median(&self, metric: impl Fn(&RunReport) -> f64) -> Option<f64> {
        median(&self.reports().map(metric).collect::<Vec<_>>())
    }
}

/// `metric(a) / metric(b)` for each round where both ran (runs of one round are seconds
/// apart, so drift on a shared machine cancels out): the median, the lowest, the highest.
fn paired_ratio(a: &Cell, b: &Cell, metric: fn(&RunReport) -> f64) -> Option<(f64, f64, f64)> {
    let ratios: Vec<f64> = a
        .rounds
        .iter()
        .zip(&b.rounds)
        .filter_map(|pair| match pair {
            (Some(a), Some(b)) if metric(b) > 0.0 => Some(metric(a) / metric(b)),
            _ => None,
        })
        .collect();
    let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let high = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    median(&ratios).map(|mid| (mid, low, high))
}

/// The 1-minute load average, to show how busy the shared machine was.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

fn compare(options: &Options) -> ExitCode {
    let load_before = load_average();
    let mut failed = false;
    // cells[c][contender]
    let mut cells: Vec<Vec<Cell>> = Vec::new();
    for &concurrency in &options.concurrency {
        let mut row: Vec<Cell> = options.contenders.iter().map(|_| Cell::default()).collect();
        for (contender, cell) in options.contenders.iter().zip(&mut row) {
            let probed = probe(options, contender, concurrency);
            if let Some(sink) = &options.sink {
                // The probe's spans are not the measured runs'.
                sink.take();
            }
            match probed {
                Ok(calls) => cell.calls = calls,
                Err(error) => {
                    eprintln!(
                        "compare: C={concurrency} {} probe: {error}",
                        contender.label
                    );
                    cell.failures.push(error);
                    failed = true;
                }
            }
        }
        for run in 1..=options.runs {
            for (contender, cell) in options.contenders.iter().zip(&mut row) {
                if cell.calls == 0 {
                    continue;
                }
                let config = config(options, contender, concurrency, cell.calls);
                let outcome = load::run(&config);
                // The server flushed its exports before it exited, and each was counted
                // before it was answered: everything it sent is in.
                let received = options.sink.as_ref().map(OtlpSink::take);
                match outcome {
                    Ok(report) => {
                        if let Some(received) = received {
                            let calls = (report.calls + report.warmup).max(1);
                            cell.spans_per_call
                                .push(received.spans as f64 / calls as f64);
                            if received.rejected > 0 {
                                eprintln!(
                                    "compare: the collector rejected {} export(s) of {}",
                                    received.rejected, contender.label
                                );
                                failed = true;
                            }
                        }
                        eprintln!(
                            "compare: C={concurrency} run {run}/{} {:<14} {:>9.0} calls/s  p50 \
                             {:>5} µs  p99 {:>6} µs  CPU {:>6.2} µs/call  RSS {:>5.1} MiB{}",
                            options.runs,
                            contender.label,
                            report.calls_per_sec(),
                            report.p50.as_micros(),
                            report.p99.as_micros(),
                            report.server_cpu_us_per_call(),
                            report.peak_rss_kib as f64 / 1024.0,
                            if report.is_clean() {
                                String::new()
                            } else {
                                format!("  VIOLATIONS: {}", report.violations)
                            }
                        );
                        failed |= !report.is_clean();
                        cell.rounds.push(Some(report));
                    }
                    Err(error) => {
                        eprintln!(
                            "compare: C={concurrency} run {run} {}: {error}",
                            contender.label
                        );
                        cell.failures.push(error.to_string());
                        cell.rounds.push(None);
                        failed = true;
                    }
                }
            }
        }
        cells.push(row);
    }
    let missed = print_tables(options, &cells);
    println!(
        "Load average (1 min) before: {load_before}, after: {}.{}",
        load_average(),
        match std::env::var("RUST_LOG") {
            Ok(filter) => format!(" RUST_LOG={filter} was passed on to the servers."),
            Err(_) => String::new(),
        }
    );
    if failed {
        println!("\nSome runs failed or broke the exactly-once rule (see above).");
        ExitCode::FAILURE
    } else if missed > 0 && options.strict {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

fn config(options: &Options, contender: &Contender, concurrency: usize, calls: u64) -> LoadConfig {
    let mut config = LoadConfig::new(contender.command.clone());
    config.concurrency = concurrency;
    config.calls = calls;
    config.warmup = (calls / 10).clamp(500, 20_000);
    config.tool = options.tool.clone();
    config.arguments = options.arguments.clone();
    config.client = contender.client;
    config.timeout = options.timeout;
    config.stderr = Some(
        options
            .logs
            .join(format!("{}-c{concurrency}.stderr", contender.label)),
    );
    config
}

/// A short run to size the measured ones to about `--seconds` each.
fn probe(options: &Options, contender: &Contender, concurrency: usize) -> Result<u64, String> {
    let mut config = config(
        options,
        contender,
        concurrency,
        2_000 * concurrency.min(8) as u64,
    );
    config.warmup = 500;
    let report = load::run(&config).map_err(|error| error.to_string())?;
    if !report.is_clean() {
        return Err(format!("violations: {}", report.violations));
    }
    let calls = (report.calls_per_sec() * options.seconds) as u64;
    Ok(calls.clamp(2_000, 10_000_000))
}

/// Prints the tables; returns how many goals were missed.
fn print_tables(options: &Options, cells: &[Vec<Cell>]) -> usize {
    let title = if options.sink.is_some() {
        "what OpenTelemetry costs fusion"
    } else {
        "fusion vs rmcp 3.11 vs the floor"
    };
    println!(
        "\n## {title}: `{}` {}, medians of {} runs (A B C D alternating)\n",
        options.tool, options.arguments, options.runs
    );
    for contender in &options.contenders {
        println!("- {}: `{}`", contender.label, contender.command.join(" "));
    }
    let spans = options.sink.is_some();
    for (&concurrency, row) in options.concurrency.iter().zip(cells) {
        println!("\n### C={concurrency}\n");
        println!(
            "| server | calls/run | calls/s | p50 µs | p99 µs | server CPU µs/call | driver CPU µs/call | peak RSS MiB |{} runs ok |",
            if spans { " spans/call |" } else { "" }
        );
        println!(
            "|---|---:|---:|---:|---:|---:|---:|---:|{}---:|",
            if spans { "---:|" } else { "" }
        );
        for (contender, cell) in options.contenders.iter().zip(row) {
            let value = |metric: fn(&RunReport) -> f64, digits: usize| {
                cell.median(metric)
                    .map_or_else(|| "—".to_owned(), |v| format!("{v:.digits$}"))
            };
            let spans_per_call = if spans {
                median(&cell.spans_per_call)
                    .map_or_else(|| " — |".to_owned(), |v| format!(" {v:.3} |"))
            } else {
                String::new()
            };
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |{spans_per_call} {}/{} |",
                contender.label,
                cell.calls,
                value(RunReport::calls_per_sec, 0),
                value(|r| r.p50.as_secs_f64() * 1e6, 0),
                value(|r| r.p99.as_secs_f64() * 1e6, 0),
                value(RunReport::server_cpu_us_per_call, 2),
                value(RunReport::driver_cpu_us_per_call, 2),
                value(|r| r.peak_rss_kib as f64 / 1024.0, 1),
                cell.reports().filter(|r| r.is_clean()).count(),
                options.runs,
            );
        }
    }
    let missed = if spans {
        otel_goals(options, cells)
    } else {
        stdio_goals(options, cells)
    };
    println!(
        "\n{} goal(s) missed. Ratios are the median (lowest–highest) of per-round ratios, each \
         round running the four servers seconds apart. Server CPU is utime+stime from \
         /proc/<pid>/stat over the measured window; peak RSS is VmHWM; driver and servers \
         share this machine's {} CPUs.",
        missed,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    missed
}

/// A goal: whether the ratio must be at least (or at most) the target, and how it reads.
type Goal = Option<(bool, f64, String)>;

fn at_least(goal: f64) -> Goal {
    Some((true, goal, format!("≥ {goal}×")))
}

/// Prints one ratio and its verdict; returns whether a goal was missed.
fn goal_line(
    concurrency: usize,
    measure: &str,
    ratio: Option<(f64, f64, f64)>,
    goal: Goal,
) -> bool {
    let (verdict, missed) = match (ratio, &goal) {
        (None, _) => ("not measured", goal.is_some()),
        (Some(_), None) => ("", false),
        (Some((v, _, _)), Some((at_least, target, _))) => {
            let met = if *at_least {
                v >= *target
            } else {
                v <= *target
            };
            if met {
                ("met", false)
            } else {
                ("**MISSED**", true)
            }
        }
    };
    let shown = ratio.map_or("—".into(), |(mid, low, high)| {
        format!("{mid:.2}× ({low:.2}–{high:.2})")
    });
    let goal_text = goal.map_or_else(|| "—".to_owned(), |(_, _, text)| text);
    println!("| {concurrency} | {measure} | {shown} | {goal_text} | {verdict} |");
    missed
}

/// Prints the heading of a goals table; returns the contenders' positions by label, in
/// the order asked.
fn goals_table<const N: usize>(
    options: &Options,
    issues: &str,
    labels: [&str; N],
) -> Option<[usize; N]> {
    println!("\n### Ratios and goals ({issues})\n");
    println!("| C | measure | measured | goal | verdict |");
    println!("|---:|---|---:|---:|---|");
    let mut found = [0; N];
    for (slot, label) in found.iter_mut().zip(labels) {
        *slot = options.contenders.iter().position(|c| c.label == label)?;
    }
    Some(found)
}

/// The goals of issues 9 and 20: fusion against the floor and rmcp, the call log's cost.
fn stdio_goals(options: &Options, cells: &[Vec<Cell>]) -> usize {
    let labels = ["fusion", "fusion-log-off", "rmcp", "floor"];
    let Some([fusion, quiet, rmcp, floor]) = goals_table(options, "issues 9 and 20", labels) else {
        return 0;
    };
    let mut missed = 0;
    for (&concurrency, row) in options.concurrency.iter().zip(cells) {
        let mut line = |measure: &str, ratio, goal| {
            missed += usize::from(goal_line(concurrency, measure, ratio, goal));
        };
        let calls = RunReport::calls_per_sec;
        let floor_goal = match concurrency {
            1 => at_least(GOAL_VS_FLOOR_C1),
            32 => at_least(GOAL_VS_FLOOR_C32),
            _ => None,
        };
        let at_32 = |goal: Goal| goal.filter(|_| concurrency == 32);
        line(
            "fusion (log on) / floor calls/s",
            paired_ratio(&row[fusion], &row[floor], calls),
            floor_goal,
        );
        line(
            "fusion (log off) / floor calls/s",
            paired_ratio(&row[quiet], &row[floor], calls),
            None,
        );
        line(
            "fusion log on / log off calls/s",
            paired_ratio(&row[fusion], &row[quiet], calls),
            at_32(at_least(GOAL_LOG_ON_VS_OFF_C32)),
        );
        line(
            "fusion (log on) / rmcp calls/s",
            paired_ratio(&row[fusion], &row[rmcp], calls),
            at_32(at_least(GOAL_VS_RMCP_C32)),
        );
        line(
            "rmcp / floor calls/s",
            paired_ratio(&row[rmcp], &row[floor], calls),
            None,
        );
        line(
            "fusion (log on) / floor server CPU per call",
            paired_ratio(&row[fusion], &row[floor], RunReport::server_cpu_us_per_call),
            None,
        );
        line(
            "fusion (log on) / rmcp peak RSS",
            paired_ratio(&row[fusion], &row[rmcp], |r| r.peak_rss_kib as f64),
            Some((false, GOAL_RSS_VS_RMCP, format!("≤ {GOAL_RSS_VS_RMCP}×"))),
        );
    }
    missed + current_goals(options, cells)
}

/// The goals of issue 56, when a 2026-07-28 client was measured (`--client current`):
/// fusion served to it against the classic client and against the floor.
fn current_goals(options: &Options, cells: &[Vec<Cell>]) -> usize {
    if !options
        .contenders
        .iter()
        .any(|contender| contender.client == Client::Current)
    {
        return 0;
    }
    let labels = [
        "fusion-2026-07-28",
        "fusion",
        "rmcp-2026-07-28",
        "floor-2026-07-28",
        "floor",
    ];
    let Some([current, classic, rmcp, floor_current, floor]) =
        goals_table(options, "issue 56, a 2026-07-28 client", labels)
    else {
        return 0;
    };
    let mut missed = 0;
    for (&concurrency, row) in options.concurrency.iter().zip(cells) {
        let mut line = |measure: &str, ratio, goal| {
            missed += usize::from(goal_line(concurrency, measure, ratio, goal));
        };
        let calls = RunReport::calls_per_sec;
        let cpu: fn(&RunReport) -> f64 = RunReport::server_cpu_us_per_call;
        line(
            "fusion 2026-07-28 / fusion classic calls/s",
            paired_ratio(&row[current], &row[classic], calls),
            at_least(GOAL_CURRENT_VS_CLASSIC),
        );
        line(
            "fusion 2026-07-28 / floor 2026-07-28 calls/s",
            paired_ratio(&row[current], &row[floor_current], calls),
            (concurrency == 32)
                .then(|| at_least(GOAL_CURRENT_VS_FLOOR_C32))
                .flatten(),
        );
        line(
            "fusion 2026-07-28 / floor classic calls/s",
            paired_ratio(&row[current], &row[floor], calls),
            None,
        );
        line(
            "fusion 2026-07-28 / rmcp 2026-07-28 calls/s",
            paired_ratio(&row[current], &row[rmcp], calls),
            None,
        );
        line(
            "fusion 2026-07-28 / fusion classic server CPU per call",
            paired_ratio(&row[current], &row[classic], cpu),
            None,
        );
    }
    missed
}

/// The goals of issue 38: what tracing costs on top of the call log, exported and sampled
/// out, and the call log with export against both off.
fn otel_goals(options: &Options, cells: &[Vec<Cell>]) -> usize {
    let labels = ["log+otel", "log+otel-off", "log", "both-off"];
    let Some([exported, sampled_out, log, off]) = goals_table(options, "issue 38", labels) else {
        return 0;
    };
    let mut missed = 0;
    for (&concurrency, row) in options.concurrency.iter().zip(cells) {
        let mut line = |measure: &str, ratio, goal| {
            missed += usize::from(goal_line(concurrency, measure, ratio, goal));
        };
        let calls: fn(&RunReport) -> f64 = RunReport::calls_per_sec;
        let cpu: fn(&RunReport) -> f64 = RunReport::server_cpu_us_per_call;
        // (measure, numerator, denominator, metric, goal)
        let ratios = [
            (
                "every call exported / log alone calls/s",
                exported,
                log,
                calls,
                at_least(GOAL_OTEL_EXPORTED),
            ),
            (
                "sampled out / log alone calls/s",
                sampled_out,
                log,
                calls,
                at_least(GOAL_OTEL_SAMPLED_OUT),
            ),
            (
                "log and export on / both off calls/s",
                exported,
                off,
                calls,
                None,
            ),
            ("log alone / both off calls/s", log, off, calls, None),
            (
                "every call exported / log alone server CPU per call",
                exported,
                log,
                cpu,
                None,
            ),
        ];
        for (measure, numerator, denominator, metric, goal) in ratios {
            line(
                measure,
                paired_ratio(&row[numerator], &row[denominator], metric),
                goal,
            );
        }
        // Spans that never reached the collector make exporting look cheaper than it is.
        if let Some(spans) = median(&row[exported].spans_per_call)
            && spans < 0.99
        {
            println!(
                "| {concurrency} | spans received per call, exported | {spans:.3} | ≥ 0.99 | **MISSED**: the batch processor dropped spans |"
            );
            missed += 1;
        }
    }
    missed
}
