//! `cargo fusion install`: the built server added to an MCP client's config file, next to
//! what is there, with a backup of the file as it was.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::error::{CliError, CliResult, Verdict};
use crate::server::ServerSelection;

/// The clients whose config `cargo fusion install` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Client {
    /// Claude Desktop: `claude_desktop_config.json`, `mcpServers`.
    ClaudeDesktop,
    /// Claude Code, every project: `~/.claude.json`, `mcpServers`.
    ClaudeCode,
    /// Cursor, every project: `~/.cursor/mcp.json`, `mcpServers`.
    Cursor,
    /// VS Code, this project: `.vscode/mcp.json`, `servers`.
    Vscode,
}

impl Client {
    /// The config file: under `home` for the clients configured per user, under `project`
    /// (the current directory) for VS Code.
    fn config_path(self, home: &Path, project: &Path) -> PathBuf {
        match self {
            Self::ClaudeDesktop => claude_desktop_dir(home).join("claude_desktop_config.json"),
            Self::ClaudeCode => home.join(".claude.json"),
            Self::Cursor => home.join(".cursor").join("mcp.json"),
            Self::Vscode => project.join(".vscode").join("mcp.json"),
        }
    }

    /// The top-level key whose object holds the servers by name.
    fn servers_key(self) -> &'static str {
        match self {
            Self::Vscode => "servers",
            Self::ClaudeDesktop | Self::ClaudeCode | Self::Cursor => "mcpServers",
        }
    }

    /// The entry that starts the server as `launch` says. VS Code and Claude Code read the
    /// transport from `type`; Claude Desktop and Cursor take a `command` as stdio.
    ///
    /// # Errors
    /// When the path is not UTF-8: JSON could not hold it, and a lossy copy would name
    /// another file.
    fn entry(self, launch: &Launch) -> CliResult<Value> {
        let executable = &launch.executable;
        let command = executable.to_str().ok_or_else(|| {
            CliError::new(format!(
                "the server's path {} is not UTF-8: a config file cannot name it",
                executable.display()
            ))
        })?;
        let mut entry = match self {
            Self::Vscode | Self::ClaudeCode => {
                json!({ "type": "stdio", "command": command, "args": launch.args })
            }
            Self::ClaudeDesktop | Self::Cursor => {
                json!({ "command": command, "args": launch.args })
            }
        };
        if !launch.env.is_empty() {
            entry["env"] = Value::Object(launch.env.clone());
        }
        Ok(entry)
    }
}

/// How the client starts the server: the executable, its arguments, and the environment
/// its start-up checks require.
#[derive(Debug)]
pub(crate) struct Launch {
    /// The built server.
    pub(crate) executable: PathBuf,
    /// Its arguments (`--stdio` for a server that serves HTTP unless told otherwise).
    pub(crate) args: Vec<String>,
    /// The variables its `require_env` checks need, with the values given (`--env`), or a
    /// placeholder for the user to fill in.
    pub(crate) env: Map<String, Value>,
}

/// The text standing for a required variable's value that `--env` did not give: the
/// server refuses to start with it, naming the variable, so a config left unfilled fails
/// loudly.
fn placeholder(name: &str) -> String {
    format!("<your {name}>")
}

/// The environment of the entry: each variable the server requires, valued from `given`
/// (`KEY=VALUE` pairs) or with a placeholder; a given variable the server does not require
/// is written too (the user asked for it).
///
/// # Errors
/// When a pair has no `=` or an empty name.
fn environment(required: &[String], given: &[String]) -> CliResult<Map<String, Value>> {
    let mut env = Map::new();
    for pair in given {
        let Some((name, value)) = pair.split_once('=').filter(|(name, _)| !name.is_empty()) else {
            return Err(CliError::new(format!(
                "`--env {pair}`: expected NAME=VALUE, e.g. `--env REDIS_URL=redis://127.0.0.1:6379`"
            )));
        };
        env.insert(name.to_owned(), Value::String(value.to_owned()));
    }
    for name in required {
        if !env.contains_key(name) {
            env.insert(name.clone(), Value::String(placeholder(name)));
        }
    }
    Ok(env)
}

/// Keeps, in a new `entry`, what the user wrote into the `old` one under the same name: a
/// placeholder they filled in, a variable they added. Installing again (after an upgrade, or
/// with other server arguments) must not put `<your REDIS_URL>` back over their URL. A value
/// given with `--env` wins.
fn keep_filled_in(entry: &mut Value, old: &Value) {
    let Some(old_env) = old.get("env").and_then(Value::as_object) else {
        return;
    };
    let Some(entry) = entry.as_object_mut() else {
        return;
    };
    let Some(env) = entry
        .entry("env")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
    else {
        return;
    };
    for (name, old_value) in old_env {
        let unset = env
            .get(name)
            .is_none_or(|value| is_placeholder(name, value));
        if unset {
            env.insert(name.clone(), old_value.clone());
        }
    }
}

fn is_placeholder(name: &str, value: &Value) -> bool {
    value.as_str() == Some(placeholder(name).as_str())
}

/// The variables of `entry` still valued with their placeholder.
fn unfilled(entry: &Value) -> Vec<String> {
    entry
        .get("env")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(name, value)| is_placeholder(name, value))
        .map(|(name, _)| name.clone())
        .collect()
}

/// `cargo fusion install`: builds the server and adds it to `client`'s config as `name`
/// (by default the binary's name); with `dry_run`, only says what it would change.
///
/// # Errors
/// When `HOME` is not set, the server cannot be built, or the config is malformed or
/// cannot be written.
pub(crate) fn run(
    server: &ServerSelection,
    client: Client,
    name: Option<String>,
    options: &InstallOptions,
) -> CliResult<Verdict> {
    let dry_run = options.dry_run;
    // Windows names the home USERPROFILE.
    let home = std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .ok_or_else(|| CliError::new("HOME is not set: cannot find the client's config"))?;
    let project = std::env::current_dir()
        .map_err(|error| CliError::new(format!("cannot read the current directory: {error}")))?;
    let built = server.build()?;
    let path = client.config_path(Path::new(&home), &project);
    let name = name.unwrap_or_else(|| built.name.clone());
    let required = crate::contract_source::read_requirements(&built)?;
    let env = environment(&required, &options.env)?;
    let launch = Launch {
        executable: built.executable.clone(),
        args: options.server_args.clone(),
        env,
    };
    let installation = plan(client, path, &name, &launch)?;
    print!("{}", installation.describe(dry_run));
    if !dry_run && let Some(backup) = installation.apply()? {
        println!("the file as it was is in {}", backup.display());
    }
    let unfilled = unfilled(&installation.entry);
    if !unfilled.is_empty() {
        println!(
            "the server refuses to start without {}: replace the placeholder{} in the file, or install again with `--env NAME=VALUE`",
            unfilled.join(", "),
            if unfilled.len() == 1 { "" } else { "s" }
        );
    }
    if !server.is_release() && installation.plan != Plan::AlreadyThere {
        println!(
            "note: this is a debug build, under target/debug; `--release` installs the optimized one"
        );
    }
    Ok(Verdict::Passed)
}

/// What `cargo fusion install` is told besides the server and the client.
#[derive(Debug, Default)]
pub(crate) struct InstallOptions {
    /// Print the change and write nothing.
    pub(crate) dry_run: bool,
    /// `NAME=VALUE` pairs for the entry's environment.
    pub(crate) env: Vec<String>,
    /// The arguments the client starts the server with.
    pub(crate) server_args: Vec<String>,
}

/// Where Claude Desktop keeps its config on this system.
fn claude_desktop_dir(home: &Path) -> PathBuf {
    if cfg!(target_os = "macos") {
        home.join("Library/Application Support/Claude")
    } else if cfg!(windows) {
        std::env::var_os("APPDATA")
            .map_or_else(|| home.join("AppData/Roaming"), PathBuf::from)
            .join("Claude")
    } else {
        home.join(".config/Claude")
    }
}

/// What installing changes.
#[derive(Debug, PartialEq)]
enum Plan {
    /// The same entry is there already: nothing to write.
    AlreadyThere,
    /// A new entry under the name.
    Add,
    /// The entry under the name was this, and is replaced.
    Replace(Value),
}

/// The config with the server added: the file's text after the change, and what changed.
struct Installation {
    /// The config file.
    path: PathBuf,
    /// The name the entry has in it.
    name: String,
    /// The entry.
    entry: Value,
    /// What it changes.
    plan: Plan,
    /// The whole file afterwards.
    new_text: String,
    /// Whether the file exists (and is then backed up before it is replaced).
    existed: bool,
}

/// Works out the change that adds the server `launch` starts as `name` to `client`'s config
/// at `path`.
///
/// # Errors
/// When the file exists but cannot be read, is not a JSON object, or its servers key is
/// not an object: it is then left as it is, for its owner to fix.
fn plan(client: Client, path: PathBuf, name: &str, launch: &Launch) -> CliResult<Installation> {
    refuse_a_link(&path)?;
    if let Ok(metadata) = std::fs::metadata(&path)
        && metadata.len() > MAX_CONFIG_BYTES
    {
        return Err(malformed(
            &path,
            &format!(
                "it holds {} bytes, more than a client's config ({MAX_CONFIG_BYTES})",
                metadata.len()
            ),
        ));
    }
    let (mut config, existed) = match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => (Map::new(), true),
        Ok(text) => match serde_json::from_str(&text) {
            Ok(Value::Object(config)) => (config, true),
            Ok(_) => return Err(malformed(&path, "it is not a JSON object")),
            Err(error) => return Err(malformed(&path, &format!("it is not valid JSON ({error})"))),
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => (Map::new(), false),
        Err(error) => {
            return Err(CliError::new(format!(
                "cannot read {}: {error}",
                path.display()
            )));
        }
    };
    let key = client.servers_key();
    let servers = config
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| malformed(&path, &format!("its `{key}` is not an object")))?;
    let mut entry = client.entry(launch)?;
    if let Some(old) = servers.get(name) {
        keep_filled_in(&mut entry, old);
    }
    let plan = match servers.insert(name.to_owned(), entry.clone()) {
        None => Plan::Add,
        Some(old) if old == entry => Plan::AlreadyThere,
        Some(old) => Plan::Replace(old),
    };
    let mut new_text = serde_json::to_string_pretty(&config)
        .map_err(|error| CliError::new(format!("cannot write the config: {error}")))?;
    new_text.push('\n');
    Ok(Installation {
        path,
        name: name.to_owned(),
        entry,
        plan,
        new_text,
        existed,
    })
}

/// A config larger than this is not a client's config: it is refused, not read.
const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// Refuses a path that is a symbolic link. The config would be replaced by a file of its
/// own (the link, and the dotfiles it points into, lost), and a `.bak` or `.tmp` planted as
/// a link would have the write go wherever it points.
fn refuse_a_link(path: &Path) -> CliResult<()> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            let target = std::fs::read_link(path)
                .map(|target| format!(" (to {})", target.display()))
                .unwrap_or_default();
            Err(CliError::new(format!(
                "{} is a symbolic link{target}; it was left as it is: install into the file it points to by hand, or replace the link with the file",
                path.display()
            )))
        }
        _ => Ok(()),
    }
}

fn malformed(path: &Path, why: &str) -> CliError {
    CliError::new(format!(
        "{} is malformed: {why}; it was left as it is (fix it, or move it away to start a new one)",
        path.display()
    ))
}

impl Installation {
    /// What the change is, for the user: the entry, and what it replaces.
    fn describe(&self, dry_run: bool) -> String {
        let entry = serde_json::to_string_pretty(&self.entry).unwrap_or_default();
        let path = self.path.display();
        let name = &self.name;
        let would = if dry_run { "would " } else { "" };
        match &self.plan {
            Plan::AlreadyThere => {
                format!("`{name}` is already in {path}, as it would be: nothing to change\n")
            }
            Plan::Add => format!("{would}add `{name}` to {path}:\n{entry}\n"),
            Plan::Replace(old) => format!(
                "{would}replace `{name}` in {path}:\nwas: {}\nnow: {entry}\n",
                serde_json::to_string_pretty(old).unwrap_or_default()
            ),
        }
    }

    /// Writes the change: the old file to `<file>.bak` first, then the new one beside it and
    /// renamed over it, so a failure midway leaves the old file whole. Returns the backup's
    /// path when there was a file to back up.
    ///
    /// # Errors
    /// When a file cannot be written.
    fn apply(&self) -> CliResult<Option<PathBuf>> {
        if self.plan == Plan::AlreadyThere {
            return Ok(None);
        }
        let failed = |what: &Path, error: std::io::Error| {
            CliError::new(format!("cannot write {}: {error}", what.display()))
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|error| failed(dir, error))?;
        }
        // Checked again: the file may have become a link since it was read.
        refuse_a_link(&self.path)?;
        let backup = if self.existed {
            let backup = with_suffix(&self.path, ".bak");
            refuse_a_link(&backup)?;
            std::fs::copy(&self.path, &backup).map_err(|error| failed(&backup, error))?;
            Some(backup)
        } else {
            None
        };
        let staged = with_suffix(&self.path, ".tmp");
        refuse_a_link(&staged)?;
        // A `.tmp` left by a run that died is ours to replace; a new one is created only
        // where nothing is (`create_new` never follows a link planted meanwhile).
        match std::fs::remove_file(&staged) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(failed(&staged, error)),
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&staged)
            .map_err(|error| failed(&staged, error))?;
        std::io::Write::write_all(&mut file, self.new_text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|error| failed(&staged, error))?;
        drop(file);
        std::fs::rename(&staged, &self.path).map_err(|error| failed(&self.path, error))?;
        Ok(backup)
    }
}

/// `path` with `suffix` added to its file name: `mcp.json` → `mcp.json.bak`.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plans installing `/opt/demo` as `demo` for `client` over a config file holding
    /// `existing` (none: no file).
    fn plan_over(
        client: Client,
        existing: Option<&str>,
    ) -> (tempfile::TempDir, CliResult<Installation>) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("mcp.json");
        if let Some(text) = existing {
            std::fs::write(&path, text).expect("written");
        }
        let launch = Launch {
            executable: PathBuf::from("/opt/demo"),
            args: Vec::new(),
            env: Map::new(),
        };
        let planned = plan(client, path, "demo", &launch);
        (dir, planned)
    }

    #[test]
    fn a_required_variable_not_given_gets_a_placeholder() -> CliResult<()> {
        let required = ["REDIS_URL".to_owned(), "TOKEN".to_owned()];
        let env = environment(&required, &["TOKEN=a=b".to_owned(), "X=".to_owned()])?;
        let entry = json!({ "env": env });
        assert_eq!(
            entry["env"],
            json!({"TOKEN": "a=b", "X": "", "REDIS_URL": "<your REDIS_URL>"})
        );
        assert_eq!(unfilled(&entry), ["REDIS_URL"]);
        assert!(environment(&required, &["=x".to_owned()]).is_err());
        Ok(())
    }

    #[test]
    fn installing_again_keeps_what_the_user_filled_in() -> CliResult<()> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("mcp.json");
        let filled = r#"{"mcpServers": {"demo": {"command": "/opt/demo", "args": [],
            "env": {"REDIS_URL": "redis://db:6379", "TOKEN": "<your TOKEN>", "MINE": "1"}}}}"#;
        std::fs::write(&path, filled).expect("written");
        let required = ["REDIS_URL".to_owned(), "TOKEN".to_owned()];
        let launch = |given: &[&str]| -> CliResult<Launch> {
            let given: Vec<String> = given.iter().map(|pair| (*pair).to_owned()).collect();
            Ok(Launch {
                executable: PathBuf::from("/opt/demo"),
                args: Vec::new(),
                env: environment(&required, &given)?,
            })
        };
        // Without `--env`: the filled-in URL and the user's own variable stay; the token
        // is still to fill in; nothing changes.
        let again = plan(Client::Cursor, path.clone(), "demo", &launch(&[])?)?;
        assert_eq!(again.plan, Plan::AlreadyThere);
        assert_eq!(unfilled(&again.entry), ["TOKEN"]);
        // `--env` wins over what the file had.
        let given = plan(
            Client::Cursor,
            path,
            "demo",
            &launch(&["REDIS_URL=redis://other:6379", "TOKEN=t"])?,
        )?;
        assert_eq!(
            given.entry["env"],
            json!({"REDIS_URL": "redis://other:6379", "TOKEN": "t", "MINE": "1"})
        );
        assert!(unfilled(&given.entry).is_empty());
        Ok(())
    }

    #[test]
    fn vscode_lists_servers_with_their_type() -> CliResult<()> {
        let (_dir, planned) = plan_over(Client::Vscode, Some(r#"{"inputs": []}"#));
        let planned = planned?;
        assert_eq!(planned.plan, Plan::Add);
        let written: Value = serde_json::from_str(&planned.new_text).expect("JSON");
        assert_eq!(
            written,
            json!({"inputs": [], "servers": {"demo": {"type": "stdio", "command": "/opt/demo", "args": []}}})
        );
        Ok(())
    }

    #[test]
    fn an_entry_under_the_same_name_is_replaced_and_shown() -> CliResult<()> {
        let (_dir, planned) = plan_over(
            Client::Cursor,
            Some(r#"{"mcpServers": {"demo": {"command": "/old/demo"}}}"#),
        );
        let planned = planned?;
        assert_eq!(planned.plan, Plan::Replace(json!({"command": "/old/demo"})));
        assert!(planned.describe(true).starts_with("would replace `demo`"));
        Ok(())
    }

    #[test]
    fn a_config_of_another_shape_is_refused() {
        for existing in ["[]", r#"{"mcpServers": []}"#, "{"] {
            let (_dir, planned) = plan_over(Client::ClaudeDesktop, Some(existing));
            let error = planned
                .err()
                .map(|error| error.to_string())
                .unwrap_or_default();
            assert!(error.contains("is malformed"), "{existing}: {error}");
        }
    }

    #[test]
    fn a_dry_run_of_a_new_file_writes_nothing() -> CliResult<()> {
        let (dir, planned) = plan_over(Client::ClaudeCode, None);
        assert!(planned?.describe(true).starts_with("would add `demo`"));
        assert!(!dir.path().join("mcp.json").exists());
        Ok(())
    }
}
