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
//!
//! `compare --http --gateway` (issue 59) measures a call through a fusion gateway instead:
//! the quickstart's `echo` called directly (sessions), against the same call through
//! `gateway-http-echo`, which mounts a quickstart of its own with `Upstream::http` and
//! serves it as `app_echo`, with the upstream's default policy and with no policies. It
//! prints the ratio gateway/direct and the time a call adds (`1/gateway − 1/direct` calls/s)
//! at each concurrency (1 and 32 unless `--concurrency` says otherwise).
//!
//! ```sh
//! cargo run --release -p fusion-bench --bin compare -- --http --gateway --runs 3
//! ```

use std::{path::PathBuf, process::ExitCode, time::Duration};

use crate::{
    cli::{Args, split_command},
    http_load::{self, HttpReport, HttpServer, Mode},
    stats::median,
};

const USAGE: &str = "usage: compare --http [--gateway] [--fusion \"<cmd>\"] [--rmcp \"<cmd>\"] \
[--floor \"<cmd>\"] [--gateway-cmd \"<cmd>\"] [--runs 3] [--seconds 2] \
[--concurrency 1,32,256] [--sessions 1000] [--logs DIR] [--no-build]";

/// The goals of issue 32, as ratios: fusion against rmcp in the same mode (at 32 and at
/// 1 in flight), fusion with sessions against the floor at 32.
const GOAL_VS_RMCP_C32: f64 = 1.5;
const GOAL_VS_RMCP_C1: f64 = 1.2;
const GOAL_VS_FLOOR_C32: f64 = 0.5;

/// How long a server may take to print its address.
const START: Duration = Duration::from_secs(30);

/// One server under comparison.
struct Contender {
    label: &'static str,
    command: Vec<String>,
    mode: Mode,
    /// A gateway: the server it forwards to, started first; its URL is passed to
    /// `command` as `--upstream URL`.
    upstream: Option<Vec<String>>,
    /// The tool called: `echo`, or a gateway's name for it.
    tool: &'static str,
}

impl Contender {
    /// A server called directly.
    fn direct(label: &'static str, command: Vec<String>, mode: Mode) -> Self {
        Self {
            label,
            command,
            mode,
            upstream: None,
            tool: "echo",
        }
    }
}

/// What is compared: fusion against rmcp and the floor, or a call through a gateway.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Servers,
    Gateway,
}

struct Options {
    build: bool,
    comparison: Comparison,
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
        && let Err(message) = build(options.comparison)
    {
        eprintln!("compare --http: {message}");
        return ExitCode::FAILURE;
    }
    if let Err(error) = std::fs::create_dir_all(&options.logs) {
        eprintln!("compare --http: {}: {error}", options.logs.display());
        return ExitCode::from(2);
    }
    let load_before = load_average();
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
    match options.comparison {
        Comparison::Servers => print_ratios(&options, &rounds),
        Comparison::Gateway => {
            print_gateway(&options, &rounds);
            // Other work on the shared cores moves every figure of this comparison.
            println!(
                "\nLoad average (1 min) before: {load_before}, after: {}.",
                load_average()
            );
        }
    }
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
            "gateway-cmd",
        ],
        &["http", "no-build", "gateway"],
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
    let comparison = if args.flag("gateway") {
        Comparison::Gateway
    } else {
        Comparison::Servers
    };
    let contenders = match comparison {
        Comparison::Servers => server_contenders(&fusion, &rmcp, floor, &with),
        Comparison::Gateway => {
            let gateway = command("gateway-cmd", sibling("gateway-http-echo"))?;
            gateway_contenders(&fusion, &gateway, &with)
        }
    };
    let concurrency = args
        .get("concurrency")
        .unwrap_or(match comparison {
            Comparison::Servers => "1,32,256",
            Comparison::Gateway => "1,32",
        })
        .split(',')
        .map(|n| {
            n.trim()
                .parse::<usize>()
                .map_err(|_| format!("--concurrency: `{n}` is not a number"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // What 1,000 more sessions cost is the servers' comparison's, not the gateway's.
    let sessions = match comparison {
        Comparison::Servers => 1000,
        Comparison::Gateway => 0,
    };
    Ok(Options {
        build: !args.flag("no-build") && std::env::var_os("CARGO").is_some(),
        comparison,
        contenders,
        runs: args.parse_or("runs", 3usize)?.max(1),
        seconds: args.parse_or("seconds", 2.0f64)?.max(0.2),
        concurrency,
        sessions: args.parse_or("sessions", sessions)?,
        logs: PathBuf::from(args.get("logs").unwrap_or("target/bench-logs")),
    })
}

/// A command with arguments added.
type With<'a> = dyn Fn(&[String], &[&str]) -> Vec<String> + 'a;

/// The servers' comparison: fusion and rmcp each five ways, the floor.
fn server_contenders(
    fusion: &[String],
    rmcp: &[String],
    floor: Vec<String>,
    with: &With<'_>,
) -> Vec<Contender> {
    vec![
        Contender::direct(
            "fusion, sessions",
            with(fusion, &["--http", "0"]),
            Mode::Sessions,
        ),
        Contender::direct(
            "fusion, sessions, askable client",
            with(fusion, &["--http", "0"]),
            Mode::SessionsAskable,
        ),
        Contender::direct(
            "fusion, no session",
            with(fusion, &["--http", "0", "--stateless"]),
            Mode::Stateless,
        ),
        Contender::direct(
            "fusion, no session, 2026-07-28",
            with(fusion, &["--http", "0", "--stateless"]),
            Mode::Stateless2026,
        ),
        Contender::direct("rmcp, sessions", rmcp.to_vec(), Mode::Sessions),
        Contender::direct(
            "rmcp, sessions, askable client",
            rmcp.to_vec(),
            Mode::SessionsAskable,
        ),
        Contender::direct(
            "rmcp, no session",
            with(rmcp, &["--stateless"]),
            Mode::Stateless,
        ),
        Contender::direct(
            "rmcp, no session, 2026-07-28",
            with(rmcp, &["--stateless"]),
            Mode::Stateless2026,
        ),
        Contender::direct("floor", floor, Mode::Sessions),
    ]
}

/// The gateway's comparison (issue 59): the quickstart called directly, and through
/// `gateway-http-echo` in front of a quickstart of its own, with the upstream's default
/// policy and with none.
fn gateway_contenders(fusion: &[String], gateway: &[String], with: &With<'_>) -> Vec<Contender> {
    let upstream = Some(with(fusion, &["--http", "0"]));
    vec![
        Contender::direct("direct", with(fusion, &["--http", "0"]), Mode::Sessions),
        Contender {
            label: "gateway, default policy",
            command: with(gateway, &["--http", "0"]),
            mode: Mode::Sessions,
            upstream: upstream.clone(),
            tool: "app_echo",
        },
        Contender {
            label: "gateway, no policies",
            command: with(gateway, &["--http", "0", "--no-policies"]),
            mode: Mode::Sessions,
            upstream,
            tool: "app_echo",
        },
    ]
}

/// Builds the baselines (the gateway for its comparison), and the quickstart as a user
/// builds it ([`user_crate::quickstart`](crate::user_crate::quickstart)), in release (run
/// through cargo).
fn build(comparison: Comparison) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").ok_or("not run through cargo")?;
    let bins: &[&str] = match comparison {
        Comparison::Servers => &["rmcp-http-echo", "floor-http-echo"],
        Comparison::Gateway => &["gateway-http-echo"],
    };
    crate::user_crate::build_baselines(&cargo, "compare --http", bins)?;
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
    let server = match &contender.upstream {
        None => HttpServer::start(&contender.command, &log, START)?,
        Some(upstream) => {
            let upstream_log = options
                .logs
                .join(format!("http-{slug}-upstream-{round}.log"));
            let upstream = HttpServer::start(upstream, &upstream_log, START)?;
            let mut command = contender.command.clone();
            command.extend([
                "--upstream".to_owned(),
                format!("http://{}/mcp", upstream.addr()),
            ]);
            HttpServer::start(&command, &log, START)?.with_upstream(upstream)
        }
    };
    let warmup = Duration::from_secs_f64(options.seconds / 4.0);
    let window = Duration::from_secs_f64(options.seconds);
    let mut measured = Round::default();
    for &concurrency in &options.concurrency {
        let report = http_load::run_tool(
            &server,
            contender.mode,
            contender.tool,
            concurrency,
            warmup,
            window,
        )?;
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
    // A gateway's upstream works for each call too: its CPU beside the gateway's.
    let gateway = options.comparison == Comparison::Gateway;
    println!(
        "| server | in flight | calls/s | p99 ms | server CPU µs/call |{} peak RSS MiB | RSS per 1,000 sessions MiB |",
        if gateway {
            " upstream CPU µs/call |"
        } else {
            ""
        }
    );
    println!(
        "|---|---:|---:|---:|---:|{}---:|---:|",
        if gateway { "---:|" } else { "" }
    );
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
            let upstream_cpu = if gateway {
                format!(
                    " {} |",
                    match contender.upstream {
                        Some(_) => shown(of(&|run| run.upstream_cpu_us_per_call()), 1),
                        None => "—".to_owned(),
                    }
                )
            } else {
                String::new()
            };
            println!(
                "| {} | {concurrency} | {} | {} | {} |{upstream_cpu} {} | {} |",
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
    for (label, a, b, concurrency, goal) in lines {
        let Some((mid, low, high)) = spread(&ratio(a, b, concurrency)) else {
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
            let Some((mid, low, high)) = spread(&ratio(a, floor, concurrency)) else {
                continue;
            };
            println!(
                "| fusion, {label} / floor, {concurrency} in flight | {mid:.2}× | {low:.2}–{high:.2} | — |"
            );
        }
    }
}

/// A figure of each round where both ran: its median, lowest and highest.
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    Some((
        median(values)?,
        values.iter().copied().reduce(f64::min)?,
        values.iter().copied().reduce(f64::max)?,
    ))
}

/// `figure(a, b)` for each round where both contenders measured concurrency `index`.
fn paired(
    rounds: &[Vec<Round>],
    (a, b): (usize, usize),
    index: usize,
    figure: impl Fn(&HttpReport, &HttpReport) -> f64,
) -> Vec<f64> {
    rounds[a]
        .iter()
        .zip(&rounds[b])
        .filter_map(|(x, y)| Some(figure(x.runs.get(index)?, y.runs.get(index)?)))
        .collect()
}

/// The gateway's comparison (issue 59): for each policy and concurrency, the direct and
/// the gateway's calls/s, their ratio, and what the gateway adds to each call:
/// `1/gateway − 1/direct` seconds a call (at 1 in flight, the latency it adds; at 32,
/// the time of the shared cores each call takes more), and the CPU of the gateway and its
/// upstream against the direct server's. Each per round, then the median and range.
fn print_gateway(options: &Options, rounds: &[Vec<Round>]) {
    // Indexes into `Options::contenders`, in `gateway_contenders`' order.
    let direct = 0;
    let gateways = [(1, "default policy"), (2, "no policies")];
    println!(
        "\n### Through the gateway (issue 59): `app_echo` on gateway-http-echo → the quickstart's `echo`, against `echo` on the quickstart\n"
    );
    println!(
        "| policy | in flight | direct calls/s | gateway calls/s | gateway / direct | added µs per call | direct CPU µs/call | gateway + upstream CPU µs/call |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let calls = |run: &HttpReport| run.calls_per_second().max(1e-9);
    let cpu = |run: &HttpReport| run.cpu_us_per_call() + run.upstream_cpu_us_per_call();
    // (policy, in flight, ratio, added µs)
    let mut summary = Vec::new();
    for (gateway, policy) in gateways {
        for (index, &concurrency) in options.concurrency.iter().enumerate() {
            let pair = (gateway, direct);
            let ratio = spread(&paired(rounds, pair, index, |g, d| calls(g) / calls(d)));
            let added = spread(&paired(rounds, pair, index, |g, d| {
                (1.0 / calls(g) - 1.0 / calls(d)) * 1e6
            }));
            let of = |contender: usize, figure: &dyn Fn(&HttpReport) -> f64| {
                median(
                    &rounds[contender]
                        .iter()
                        .filter_map(|round| round.runs.get(index))
                        .map(figure)
                        .collect::<Vec<_>>(),
                )
            };
            let ranged = |value: Option<(f64, f64, f64)>, unit: &str, decimals: usize| {
                value.map_or_else(
                    || "n/a".to_owned(),
                    |(mid, low, high)| {
                        format!("{mid:.decimals$}{unit} ({low:.decimals$}–{high:.decimals$})")
                    },
                )
            };
            println!(
                "| {policy} | {concurrency} | {} | {} | {} | {} | {} | {} |",
                shown(of(direct, &calls), 0),
                shown(of(gateway, &calls), 0),
                ranged(ratio, "×", 2),
                ranged(added, "", 1),
                shown(of(direct, &cpu), 1),
                shown(of(gateway, &cpu), 1),
            );
            if let (Some((ratio, ..)), Some((added, ..))) = (ratio, added) {
                summary.push((policy, concurrency, ratio, added));
            }
        }
    }
    // The closing note: the overhead per call, each policy at each concurrency.
    let said: Vec<String> = summary
        .iter()
        .map(|(policy, concurrency, ratio, added)| {
            format!(
                "{policy}, {concurrency} in flight: +{added:.1} µs a call ({ratio:.2}× the calls/s)"
            )
        })
        .collect();
    if !said.is_empty() {
        println!(
            "\nThrough the gateway: {}. At 1 in flight the added time is the latency of the second hop \
             (the gateway's pipeline, its HTTP client, the upstream's session); with more in flight it is \
             what each call takes more of the {} shared cores, which run the driver, the gateway and its \
             upstream.",
            said.join("; "),
            std::thread::available_parallelism().map_or(0, usize::from)
        );
    }
}

/// The 1-minute load average, to show how busy the shared machine was.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}
