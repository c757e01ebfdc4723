//! `compile-time`: how long a user's crate of 50 tools takes to rebuild with fusion's
//! `#[mcp_tool]`, against the same crate written with rmcp's macros as its docs show them
//! (`#[tool_router]`, `#[tool]`, `Parameters<T>` with schemars, `#[tool_handler]`) — issue 32,
//! item 6.
//!
//! Both crates are generated under `<target>/compile-time/` (or `--dir`), each its own
//! workspace with its own target directory, the workspace's `Cargo.lock` copied in (so rmcp,
//! serde, schemars and tokio are the versions fusion locks) and path dependencies on the
//! workspace's fusion crates. Dependencies are built once; each built server is checked once
//! (initialize + tools/list piped in: 50 tools). Then, in rounds, `src/main.rs` is touched and
//! `cargo build` and `cargo check` are timed for each crate, fusion and rmcp alternating (which
//! goes first swaps each round: the machine's other load falls on both). Prints every time and
//! the median over rounds of each round's ratio fusion/rmcp.
//!
//! `--constrained` gives every tool the parameters users constrain (a length on a `String`,
//! a range on an `i64`, an `Option<bool>`), as `#[arg(..)]` in fusion's crate and the same
//! as `#[schemars(..)]` attributes in rmcp's (issue 56).

use std::{
    fmt::Write as _,
    fs,
    io::{BufRead, BufReader, Write},
    path::PathBuf,
    process::{Command, ExitCode, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use fusion_bench::{
    cli::Args,
    user_crate::{self, UserCrate},
};

/// The number of tools in each generated crate.
const TOOLS: usize = 50;

/// The parameters of each generated tool.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Three shapes in turn, without attributes.
    Plain,
    /// `--constrained`: every tool a `String` with a length, an `i64` with a range and an
    /// `Option<bool>` (issue 56), the same constraints as `schemars` attributes in rmcp's
    /// crate.
    Constrained,
}

/// One parameter: its name and type, its doc comment, and its constraint as fusion's
/// `#[arg(..)]` and as rmcp's `#[schemars(..)]` (empty: none).
type Param = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

/// The three parameters of tool `i`. Plain: three shapes in turn, so strings, integers,
/// booleans and optionals all appear.
fn params(shape: Shape, i: usize) -> [Param; 3] {
    if shape == Shape::Constrained {
        return [
            (
                "name",
                "String",
                "The name to use.",
                "#[arg(length(min = 1, max = 40))]",
                "#[schemars(length(min = 1, max = 40))]",
            ),
            (
                "count",
                "i64",
                "How many times.",
                "#[arg(min = 1, max = 50)]",
                "#[schemars(range(min = 1, max = 50))]",
            ),
            ("verbose", "Option<bool>", "Say more, when set.", "", ""),
        ];
    }
    match i % 3 {
        0 => [
            ("name", "String", "The name to use.", "", ""),
            ("count", "i64", "How many times.", "", ""),
            ("verbose", "Option<bool>", "Say more, when set.", "", ""),
        ],
        1 => [
            ("label", "String", "A label.", "", ""),
            ("limit", "u32", "The most to return.", "", ""),
            ("exact", "bool", "Match exactly.", "", ""),
        ],
        _ => [
            (
                "query",
                "Option<String>",
                "What to look for, when given.",
                "",
                "",
            ),
            ("offset", "i32", "Where to start.", "", ""),
            ("deep", "bool", "Look deeper.", "", ""),
        ],
    }
}

/// The body of tool `i`: trivial, the same in both crates.
fn body(shape: Shape, i: usize) -> String {
    let [(a, ..), (b, ..), (c, ..)] = params(shape, i);
    format!("format!(\"tool_{i}: {{:?}} {{}} {{:?}}\", {a}, {b}, {c})")
}

/// `src/main.rs` of the fusion crate.
fn fusion_main(shape: Shape) -> String {
    let mut src = String::from(
        "//! 50 tools written with fusion's `#[mcp_tool]`.\n\nuse fusion_runtime::prelude::*;\n\n",
    );
    for i in 0..TOOLS {
        let _ = writeln!(src, "/// Tool number {i}.\n#[mcp_tool]\nasync fn tool_{i}(");
        for (name, ty, doc, constraint, _) in params(shape, i) {
            let _ = writeln!(src, "    /// {doc}\n    {constraint}\n    {name}: {ty},");
        }
        let _ = writeln!(src, ") -> String {{\n    {}\n}}\n", body(shape, i));
    }
    src.push_str(
        "#[tokio::main(flavor = \"current_thread\")]\nasync fn main() -> std::process::ExitCode {\n    Server::builder(\"compile-time\", \"0.1.0\")\n",
    );
    for i in 0..TOOLS {
        let _ = writeln!(src, "        .tool(tool_{i})");
    }
    src.push_str("        .serve_stdio()\n        .await\n}\n");
    src
}

/// `src/main.rs` of the rmcp crate.
fn rmcp_main(shape: Shape) -> String {
    let mut src = String::from(
        "//! 50 tools written as rmcp's docs show.\n\nuse rmcp::{\n    ServerHandler, ServiceExt, handler::server::wrapper::Parameters, schemars, tool, tool_handler,\n    tool_router, transport::stdio,\n};\n\n",
    );
    for i in 0..TOOLS {
        let _ = writeln!(
            src,
            "/// The arguments of `tool_{i}`.\n#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]\nstruct Tool{i}Request {{"
        );
        for (name, ty, doc, _, constraint) in params(shape, i) {
            let _ = writeln!(src, "    /// {doc}\n    {constraint}\n    {name}: {ty},");
        }
        src.push_str("}\n\n");
    }
    src.push_str("/// The server.\n#[derive(Debug, Clone, Default)]\nstruct Tools;\n\n#[tool_router]\nimpl Tools {\n");
    for i in 0..TOOLS {
        let [(a, ..), (b, ..), (c, ..)] = params(shape, i);
        let _ = writeln!(
            src,
            "    /// Tool number {i}.\n    #[tool(description = \"Tool number {i}.\")]\n    async fn tool_{i}(&self, Parameters(Tool{i}Request {{ {a}, {b}, {c} }}): Parameters<Tool{i}Request>) -> String {{\n        {}\n    }}\n",
            body(shape, i)
        );
    }
    src.push_str(
        "}\n\n#[tool_handler(name = \"compile-time\")]\nimpl ServerHandler for Tools {}\n\n#[tokio::main(flavor = \"current_thread\")]\nasync fn main() -> Result<(), Box<dyn std::error::Error>> {\n    let service = Tools.serve(stdio()).await?;\n    service.waiting().await?;\n    Ok(())\n}\n",
    );
    src
}

/// What the rounds do with a generated crate beside building it.
trait Rounds {
    /// Marks `src/main.rs` changed, as an edit would.
    fn touch(&self) -> Result<(), String>;
    /// Pipes initialize + tools/list into the built server; the number of tools listed.
    fn count_tools(&self) -> Result<usize, String>;
}

impl Rounds for UserCrate {
    fn touch(&self) -> Result<(), String> {
        let path = self.dir.join("src/main.rs");
        let file = fs::File::options()
            .append(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        file.set_modified(std::time::SystemTime::now())
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    fn count_tools(&self) -> Result<usize, String> {
        let binary = self.binary("debug");
        let mut child = Command::new(&binary)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (lines, read) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let messages = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"compile-time","version":"0"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        ];
        let mut result = Err(format!("{}: no answer to tools/list", self.name));
        for message in messages {
            writeln!(stdin, "{message}").map_err(|e| format!("writing to {}: {e}", self.name))?;
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let Ok(line) = read.recv_timeout(left) else {
                break;
            };
            let Ok(answer) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if answer["id"] == 2 {
                result = answer["result"]["tools"]
                    .as_array()
                    .map(|tools| {
                        // Every tool lists its three parameters, with the integer's type.
                        let complete = tools.iter().all(|tool| {
                            tool["inputSchema"]["properties"]
                                .as_object()
                                .is_some_and(|p| p.len() == 3)
                        });
                        if complete { tools.len() } else { 0 }
                    })
                    .ok_or_else(|| format!("{}: tools/list answered {line}", self.name));
                break;
            }
        }
        drop(stdin);
        let _ = child.kill();
        let _ = child.wait();
        result
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

fn run() -> Result<(), String> {
    let args = Args::parse(
        std::env::args().skip(1),
        &["rounds", "dir"],
        &["constrained"],
    )?;
    let rounds: usize = args.parse_or("rounds", 3)?;
    let shape = if args.flag("constrained") {
        Shape::Constrained
    } else {
        Shape::Plain
    };
    // Both shapes write the same crates: their dependencies are built once.
    let root = match args.get("dir") {
        Some(dir) => PathBuf::from(dir),
        None => user_crate::target_dir().join("compile-time"),
    };
    let runtime = user_crate::workspace().join("fusion-runtime");
    let fusion = UserCrate::write(
        "fusion-tools",
        &root,
        &format!(
            "fusion-runtime = {{ path = {:?} }}\ntokio = {{ version = \"1\", features = [\"rt\", \"macros\"] }}\n",
            runtime.display().to_string()
        ),
        &[("main.rs", &fusion_main(shape))],
    )?;
    let rmcp = UserCrate::write(
        "rmcp-tools",
        &root,
        "rmcp = { version = \"3.11\", default-features = false, features = [\"server\", \"macros\", \"transport-io\", \"schemars\"] }\nserde = { version = \"1\", features = [\"derive\"] }\ntokio = { version = \"1\", features = [\"rt\", \"macros\"] }\n",
        &[("main.rs", &rmcp_main(shape))],
    )?;
    let crates = [&fusion, &rmcp];

    eprintln!("building dependencies under {} (once)", root.display());
    for krate in crates {
        krate.cargo(&["build"])?;
        krate.cargo(&["check"])?;
        let tools = krate.count_tools()?;
        if tools != TOOLS {
            return Err(format!(
                "{}: tools/list gave {tools} complete tools, not {TOOLS}",
                krate.name
            ));
        }
        eprintln!(
            "{}: tools/list lists {TOOLS} tools, 3 parameters each",
            krate.name
        );
    }

    println!(
        "{:<6} {:<6} {:>10} {:>10} {:>7}",
        "round", "cmd", "fusion s", "rmcp s", "ratio"
    );
    let mut ratios: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 1..=rounds {
        for (k, sub) in ["build", "check"].into_iter().enumerate() {
            let order: [usize; 2] = if round % 2 == 1 { [0, 1] } else { [1, 0] };
            let mut times = [0.0; 2];
            for which in order {
                crates[which].touch()?;
                times[which] = crates[which].cargo(&[sub, "--offline"])?.as_secs_f64();
            }
            let ratio = times[0] / times[1];
            ratios[k].push(ratio);
            println!(
                "{round:<6} {sub:<6} {:>10.2} {:>10.2} {ratio:>7.2}",
                times[0], times[1]
            );
        }
    }
    for (k, sub) in ["build", "check"].into_iter().enumerate() {
        println!(
            "median ratio fusion/rmcp, cargo {sub}: {:.2} (goal <= 1.00)",
            median(&mut ratios[k])
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("compile-time: {error}");
            ExitCode::FAILURE
        }
    }
}
