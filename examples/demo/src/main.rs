//! The demo server over stdio. The caller's role comes from `DEMO_ROLE` (`ADMIN`, the
//! default, or `GUEST`); `--flat` lists one tool per action instead of one per group;
//! `--tool-search` lists `search_tools` and `call_tool` in place of the tools (issue 58).
//!
//! `--http PORT` serves Streamable HTTP on `127.0.0.1:PORT` instead (`0`: a free port,
//! printed on stderr), `--stateless` without sessions (for replicas behind a load balancer).
//!
//! `--oauth-issuer URL` (with `--http`) makes it an OAuth 2.1 resource server: every request
//! needs an access token from that issuer whose audience is `http://127.0.0.1:PORT/mcp`
//! (the bound port), and `GET /.well-known/oauth-protected-resource/mcp` says so. The role
//! then comes from each caller's token, not from `DEMO_ROLE`: a token granting the `admin`
//! scope is an admin, any other valid token a guest. `--oauth-scope SCOPE` (repeatable)
//! requires a scope on every request.

use std::process::ExitCode;

use fusion_demo::Ctx;
use fusion_demo::Role;
use fusion_runtime::{
    HttpOptions, OAuth, ServerBuilder, exit::EXIT_CONFIG, search::ToolSearch, tool::Exposure,
};

#[path = "../../support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "fusion-demo",
    about: "the seed's demo: grouped tools with actions, roles and presenters, over stdio",
    flags: &[
        (
            "--flat",
            "",
            "list one tool per action instead of one per group",
        ),
        (
            "--http",
            "PORT",
            "serve Streamable HTTP on 127.0.0.1:PORT instead of stdio (0: a free port, printed on stderr)",
        ),
        (
            "--tool-search",
            "",
            "list search_tools and call_tool in place of the tools (every tool stays callable by name)",
        ),
        ("--stateless", "", "with --http: serve without sessions"),
        (
            "--oauth-issuer",
            "URL",
            "with --http: be an OAuth 2.1 resource server for this issuer; roles come from each token",
        ),
        (
            "--oauth-scope",
            "SCOPE",
            "with --oauth-issuer: require SCOPE on every request (repeatable)",
        ),
    ],
    env: &[(
        "DEMO_ROLE",
        "the caller's role without OAuth: ADMIN (the default) or GUEST",
    )],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    let role = match std::env::var("DEMO_ROLE") {
        Ok(text) => match Role::parse(&text) {
            Some(role) => role,
            None => {
                eprintln!("fusion-demo: DEMO_ROLE must be ADMIN or GUEST, not {text:?}");
                return ExitCode::from(EXIT_CONFIG);
            }
        },
        Err(_) => Role::Admin,
    };
    let args: Vec<String> = std::env::args().collect();
    let exposure = if args.iter().any(|arg| arg == "--flat") {
        Exposure::Flat
    } else {
        Exposure::Grouped
    };
    // The tools found by `search_tools` and called through `call_tool` (issue 58).
    let searched = args.iter().any(|arg| arg == "--tool-search");
    let search = |builder: ServerBuilder<Ctx>| {
        if searched {
            builder.tool_search(ToolSearch::always())
        } else {
            builder
        }
    };
    let oauth = match oauth(&args) {
        Ok(oauth) => oauth,
        Err(problem) => {
            eprintln!("fusion-demo: {problem}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let Some(at) = args.iter().position(|arg| arg == "--http") else {
        if oauth.is_some() {
            eprintln!("fusion-demo: --oauth-issuer needs --http PORT");
            return ExitCode::from(EXIT_CONFIG);
        }
        return search(fusion_demo::builder(role, exposure))
            .serve_stdio()
            .await;
    };
    let Some(port) = args.get(at + 1).and_then(|port| port.parse::<u16>().ok()) else {
        eprintln!("fusion-demo: --http takes a port number");
        return ExitCode::from(EXIT_CONFIG);
    };
    let options = HttpOptions::default()
        .port(port)
        .stateless(args.iter().any(|arg| arg == "--stateless"));
    match oauth {
        // Many users: each call's role comes from its caller's token (`admin` scope).
        Some(oauth) => {
            search(fusion_demo::builder_from_token(exposure))
                .serve_http_with(options.oauth(oauth))
                .await
        }
        None => {
            search(fusion_demo::builder(role, exposure))
                .serve_http_with(options)
                .await
        }
    }
}

/// The resource server `--oauth-issuer URL` and `--oauth-scope SCOPE` ask for. Its resource
/// URL is left to the default, the bound `http://127.0.0.1:PORT/mcp`.
fn oauth(args: &[String]) -> Result<Option<OAuth>, String> {
    let values = |flag: &str| -> Result<Vec<String>, String> {
        let mut values = Vec::new();
        for (index, arg) in args.iter().enumerate() {
            if arg == flag {
                match args.get(index + 1).filter(|value| !value.starts_with("--")) {
                    Some(value) => values.push(value.clone()),
                    None => return Err(format!("{flag} takes a value")),
                }
            }
        }
        Ok(values)
    };
    let issuers = values("--oauth-issuer")?;
    let scopes = values("--oauth-scope")?;
    match issuers.as_slice() {
        [] if scopes.is_empty() => Ok(None),
        [] => Err("--oauth-scope needs --oauth-issuer URL".to_owned()),
        [issuer] => {
            // `admin` is the scope the demo's roles are read from; clients may ask for it.
            let mut supported = vec!["admin".to_owned()];
            supported.extend(scopes.iter().filter(|scope| *scope != "admin").cloned());
            Ok(Some(
                OAuth::new(issuer)
                    .scopes_supported(supported)
                    .required_scopes(scopes),
            ))
        }
        _ => Err("--oauth-issuer is given more than once".to_owned()),
    }
}
