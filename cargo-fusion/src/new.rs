//! `cargo fusion new NAME`: a new server crate that builds, passes its own tests and serves
//! at once. One tool, a test that calls it in memory, a test that holds its surface to the
//! `fusion.lock` written here, a README and a `.gitignore`; the templates are the files of
//! `cargo-fusion/templates/`.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{CliError, CliResult, Verdict};
use crate::{package_name, template};

/// The tool every new crate starts with: pasted into its `src/main.rs`, and compiled into
/// `cargo fusion` too ([`template_tool`]), which writes the lockfile of that same code.
const TOOL: &str = include_str!("../templates/tool.rs");
const CARGO_TOML: &str = include_str!("../templates/Cargo.toml.tmpl");
const MAIN_RS: &str = include_str!("../templates/main.rs.tmpl");
const README: &str = include_str!("../templates/README.md.tmpl");
const GITIGNORE: &str = include_str!("../templates/gitignore");

/// The version of `fusion-runtime` a new crate depends on: the one this `cargo fusion` is
/// released with (the workspace gives both one version).
const RUNTIME_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What `cargo fusion new` is asked to create.
#[derive(Debug)]
pub(crate) struct NewCrate {
    /// The package's name, and its directory's in the current directory.
    pub(crate) name: String,
    /// Serve Streamable HTTP by default, stdio with `--stdio`.
    pub(crate) http: bool,
    /// Keep idempotency keys in the Redis at `REDIS_URL`.
    pub(crate) redis: bool,
    /// Depend on the `fusion-runtime` in this directory, not on its release.
    pub(crate) fusion_path: Option<PathBuf>,
}

/// Creates the crate `new` in the current directory.
///
/// # Errors
/// When the name cannot be a package's, a file or directory of that name exists already
/// (nothing is changed then), `--fusion-path` is not a `fusion-runtime` package, or a file
/// cannot be written (what was created is removed).
pub(crate) fn run(new: &NewCrate) -> CliResult<Verdict> {
    package_name::check(&new.name).map_err(|problem| {
        CliError::new(format!(
            "`{}` cannot be a package's name: {problem}",
            new.name
        ))
    })?;
    let dependency = runtime_dependency(new.fusion_path.as_deref(), new.redis)?;
    let files = files(new, &dependency)?;
    let dir = std::env::current_dir()
        .map_err(|error| CliError::new(format!("cannot read the current directory: {error}")))?
        .join(&new.name);
    // `create_dir`, not a look first: it fails on anything there, even created a moment
    // ago, so nothing of another's is ever written into.
    fs::create_dir(&dir).map_err(|error| match error.kind() {
        std::io::ErrorKind::AlreadyExists => CliError::new(format!(
            "{} already exists; choose another name, or move it away first",
            dir.display()
        )),
        _ => CliError::new(format!("cannot create {}: {error}", dir.display())),
    })?;
    if let Err(error) = write_all(&dir, &files) {
        // The directory is this run's own, and half a crate is worse than none.
        let _ = fs::remove_dir_all(&dir);
        return Err(error);
    }
    let transport = if new.http {
        "Streamable HTTP at http://127.0.0.1:8931/mcp (--stdio for stdio)"
    } else {
        "stdio (--http PORT for Streamable HTTP)"
    };
    if let Some(workspace) = enclosing_workspace(&dir) {
        // Cargo refuses to build a package under a workspace that does not list it.
        eprintln!(
            "note: {} is a workspace: add \"{}\" to its `members` (or its `exclude`) before building",
            workspace.display(),
            new.name
        );
    }
    println!(
        "Created `{}` in {}: one tool, `greet`, served over {transport}{}.\nNext: cd {} && cargo test",
        new.name,
        dir.display(),
        if new.redis {
            ", its idempotency keys in the Redis at REDIS_URL"
        } else {
            ""
        },
        new.name
    );
    Ok(Verdict::Passed)
}

/// The manifest of a workspace above `dir`, if there is one: a `Cargo.toml` with a
/// `[workspace]` table, as cargo looks for it.
fn enclosing_workspace(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().skip(1).find_map(|ancestor| {
        let manifest = ancestor.join("Cargo.toml");
        let text = fs::read_to_string(&manifest).ok()?;
        text.lines()
            .any(|line| line.trim() == "[workspace]")
            .then_some(manifest)
    })
}

/// Every file of the new crate: its path in the crate, and its text.
fn files(new: &NewCrate, dependency: &str) -> CliResult<Vec<(&'static str, String)>> {
    let context = minijinja::context! {
        http => new.http,
        redis => new.redis,
        name => new.name.as_str(),
        fusion_runtime => dependency,
        tool => TOOL,
    };
    let render = |path: &'static str, text: &str| {
        template::render(text, context.clone())
            .map(|rendered| (path, rendered))
            .map_err(|problem| {
                CliError::new(format!(
                    "the template of {path} is broken (a bug in cargo fusion): {problem}"
                ))
            })
    };
    Ok(vec![
        render("Cargo.toml", CARGO_TOML)?,
        render("src/main.rs", MAIN_RS)?,
        render("README.md", README)?,
        (".gitignore", GITIGNORE.to_owned()),
        ("fusion.lock", template_tool::lockfile()?),
    ])
}

/// Writes `files` under `dir`, each into a file that did not exist.
fn write_all(dir: &Path, files: &[(&str, String)]) -> CliResult<()> {
    for (relative, text) in files {
        let path = dir.join(relative);
        let written = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| {
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)?
                    .write_all(text.as_bytes())
            });
        written
            .map_err(|error| CliError::new(format!("cannot write {}: {error}", path.display())))?;
    }
    Ok(())
}

/// The `fusion-runtime` line of the new crate's `[dependencies]`: its release, or the
/// package at `path`, with the `redis` feature when asked for (`http` is a default one).
fn runtime_dependency(path: Option<&Path>, redis: bool) -> CliResult<String> {
    let features = if redis {
        r#", features = ["redis"]"#
    } else {
        ""
    };
    let Some(path) = path else {
        return Ok(if redis {
            format!(r#"fusion-runtime = {{ version = "{RUNTIME_VERSION}"{features} }}"#)
        } else {
            format!(r#"fusion-runtime = "{RUNTIME_VERSION}""#)
        });
    };
    let path = runtime_path(path)?;
    Ok(format!(
        "fusion-runtime = {{ path = {}{features} }}",
        toml_string(&path)
    ))
}

/// The directory of the `fusion-runtime` package `given` names, absolute (the manifest is
/// read from the new crate's directory, not from here) and as UTF-8 (TOML holds no other).
fn runtime_path(given: &Path) -> CliResult<String> {
    let not_it = |why: &str| {
        CliError::new(format!(
            "--fusion-path {}: {why}; give the directory of the fusion-runtime package (fusion-runtime/ in a checkout of fusion)",
            given.display()
        ))
    };
    let dir = given
        .canonicalize()
        .map_err(|error| not_it(&error.to_string()))?;
    let manifest = fs::read_to_string(dir.join("Cargo.toml"))
        .map_err(|error| not_it(&format!("cannot read its Cargo.toml: {error}")))?;
    if !manifest
        .lines()
        .any(|line| line.trim() == r#"name = "fusion-runtime""#)
    {
        return Err(not_it("its Cargo.toml is not the package fusion-runtime's"));
    }
    dir.into_os_string()
        .into_string()
        .map_err(|_| not_it("the path is not UTF-8, which Cargo.toml cannot hold"))
}

/// `text` as a TOML basic string. JSON's string escapes (`\"`, `\\`, `\n`, `\uXXXX`) are
/// all TOML's too, so serde_json writes one (a Windows path's `\` included).
fn toml_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// The template's tool, compiled into `cargo fusion` from the same file the new crate's
/// `src/main.rs` gets, so that the lockfile written here is the contract of that code. A
/// contract does not name the server or its version, so a server of another name with the
/// same tools has the same one.
mod template_tool {
    use fusion_runtime::prelude::*;

    use crate::error::{CliError, CliResult};

    include!("../templates/tool.rs");

    /// The lockfile of a server with the template's tool alone: what the new crate's
    /// `the_tool_surface_is_the_locked_one` test compares with.
    pub(super) fn lockfile() -> CliResult<String> {
        let server = Server::builder("new", "0.0.0")
            .tool(greet)
            .try_build()
            .map_err(|errors| {
                let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
                CliError::new(format!(
                    "the template's tool does not build (a bug in cargo fusion): {}",
                    errors.join("; ")
                ))
            })?;
        Ok(server.contract().to_lockfile())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_with(http: bool, redis: bool) -> Vec<(&'static str, String)> {
        let new = NewCrate {
            name: "calc".to_owned(),
            http,
            redis,
            fusion_path: None,
        };
        let dependency = runtime_dependency(None, redis).expect("a release needs no path");
        files(&new, &dependency).expect("the templates render")
    }

    #[test]
    fn every_template_renders_under_every_flag() {
        for (http, redis) in [(false, false), (true, false), (false, true), (true, true)] {
            for (path, text) in crate_with(http, redis) {
                assert!(!text.contains("{{"), "{path} ({http}, {redis}):\n{text}");
                assert!(!text.is_empty(), "{path}");
            }
        }
    }

    #[test]
    fn the_flags_choose_the_transport_and_the_store() {
        let text = |http, redis, path| {
            crate_with(http, redis)
                .into_iter()
                .find(|(name, _)| *name == path)
                .map(|(_, text)| text)
                .unwrap_or_default()
        };
        let stdio = text(false, false, "src/main.rs");
        assert!(stdio.contains("builder.serve().await"), "{stdio}");
        assert!(!stdio.contains("HttpOptions") && !stdio.contains("RedisStore"));
        let http = text(true, false, "src/main.rs");
        assert!(http.contains("serve_on(transport)") && http.contains("const PORT: u16 = 8931;"));
        let redis = text(false, true, "src/main.rs");
        assert!(redis.contains("require_env(REDIS_URL)") && redis.contains("idempotency_store"));
        assert!(text(false, true, "Cargo.toml").contains(&format!(
            r#"fusion-runtime = {{ version = "{RUNTIME_VERSION}", features = ["redis"] }}"#
        )));
        assert!(
            text(false, false, "Cargo.toml")
                .contains(&format!(r#"fusion-runtime = "{RUNTIME_VERSION}""#))
        );
        assert!(text(true, false, "README.md").contains("http://127.0.0.1:8931/mcp"));
    }

    #[test]
    fn the_lockfile_holds_the_tool() {
        let lockfile = template_tool::lockfile().expect("the tool builds");
        let contract =
            fusion_runtime::contract::Contract::from_lockfile(&lockfile).expect("a lockfile");
        assert_eq!(lockfile, contract.to_lockfile());
        assert!(lockfile.contains("\"greet\""), "{lockfile}");
    }

    #[test]
    fn a_workspace_above_is_found() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let found = enclosing_workspace(&here.join("calc")).expect("this workspace");
        let root = here.parent().expect("cargo-fusion/ is in the workspace");
        assert_eq!(found, root.join("Cargo.toml"));
    }

    #[test]
    fn a_path_is_a_toml_string_that_escapes_what_it_must() {
        assert_eq!(toml_string(r#"C:\fusion "x""#), r#""C:\\fusion \"x\"""#);
    }

    #[test]
    fn a_fusion_path_that_is_not_the_runtime_is_refused() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let error = runtime_dependency(Some(here), false).expect_err("cargo-fusion is not it");
        assert!(
            error
                .to_string()
                .contains("not the package fusion-runtime's"),
            "{error}"
        );
        let missing = runtime_dependency(Some(&here.join("no-such-dir")), false)
            .expect_err("a missing directory");
        assert!(missing.to_string().contains("no-such-dir"), "{missing}");
        let runtime = runtime_dependency(Some(&here.join("../fusion-runtime")), true)
            .expect("the workspace's runtime");
        assert!(
            runtime.starts_with("fusion-runtime = { path = \"") && !runtime.contains(".."),
            "{runtime}"
        );
        assert!(
            runtime.ends_with(r#", features = ["redis"] }"#),
            "{runtime}"
        );
    }
}
