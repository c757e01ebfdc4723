//! `cargo fusion dev`: builds the server, runs it with the human-readable log, and on each
//! change to its package's sources builds it again and, when the build succeeds, restarts
//! it. A build that fails leaves the previous server serving.
//!
//! Synchronous, as the rest of `cargo fusion`: the watcher's thread, the signal handler's
//! thread and the main loop talk over one channel of [`Event`]s.

use std::ffi::OsString;
use std::path::{Component, Path};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use crate::error::{CliError, CliResult, Verdict};
use crate::process;
use crate::server::{BuiltServer, ServerSelection};

/// How long the sources must be quiet before a change counts: an editor's save is often
/// several writes (a temporary file, a rename), and a formatter may follow it.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// How long a server asked to stop (SIGTERM) may drain its calls before it is killed:
/// a development server has no call worth waiting longer for.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// How often the main loop looks whether the server exited by itself, between events.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// The environment variable that chooses the runtime's log format
/// (`fusion_runtime::log::LOG_FORMAT_ENV`, not imported: cargo-fusion builds the runtime
/// without its serving side).
const LOG_FORMAT_ENV: &str = "FUSION_LOG_FORMAT";

/// The source directories of a package that are watched, recursively.
const WATCHED_DIRS: [&str; 2] = ["src", "examples"];

/// The files at the package's root that are watched.
const WATCHED_FILES: [&str; 2] = ["Cargo.toml", "build.rs"];

/// What the main loop is told.
enum Event {
    /// A source changed (one of the changed paths, for the status line).
    Changed(String),
    /// The watcher reported an error: it may miss changes from now on.
    WatchFailed(String),
    /// Ctrl-C or SIGTERM: stop the server and exit.
    Stop,
}

/// Runs `cargo fusion dev` until Ctrl-C or SIGTERM.
///
/// # Errors
/// When the package cannot be found, or its sources cannot be watched.
pub(crate) fn run(selection: &ServerSelection, server_args: &[OsString]) -> CliResult<Verdict> {
    let package_dir = selection.package_dir()?;
    let (sender, events) = mpsc::channel();
    let stopping = Arc::new(AtomicBool::new(false));
    install_stop_handler(sender.clone(), Arc::clone(&stopping))?;
    // Kept alive to the end: dropping the debouncer stops the watching.
    let _watching = watch(&package_dir, sender)?;
    status(&format!(
        "watching {} (src/, examples/, Cargo.toml, build.rs)",
        package_dir.display()
    ));

    let mut dev = Dev {
        selection,
        server_args,
        stopping: &stopping,
        server: None,
    };
    status("building…");
    dev.build_and_start();
    dev.serve(&events);
    if let Some(child) = dev.server.take() {
        stop(child);
    }
    status("stopped");
    Ok(Verdict::Passed)
}

/// The running state of `cargo fusion dev`.
struct Dev<'a> {
    /// The server to build.
    selection: &'a ServerSelection,
    /// Its arguments.
    server_args: &'a [OsString],
    /// Set by the signal handler: a server exiting now is not a crash to report.
    stopping: &'a AtomicBool,
    /// The server running, if one is.
    server: Option<Child>,
}

impl Dev<'_> {
    /// Reacts to events until the one that says stop.
    fn serve(&mut self, events: &Receiver<Event>) {
        loop {
            match events.recv_timeout(POLL_INTERVAL) {
                Ok(Event::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(Event::WatchFailed(error)) => {
                    status(&format!("watching the sources failed: {error}"));
                }
                Ok(Event::Changed(path)) => {
                    // Changes that came in meanwhile are in this build too.
                    for queued in events.try_iter() {
                        if matches!(queued, Event::Stop) {
                            return;
                        }
                    }
                    status(&format!("{path} changed: rebuilding…"));
                    self.build_and_start();
                    if self.stopping.load(Ordering::SeqCst) {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => self.notice_exit(),
            }
        }
    }

    /// Builds the server; when the build succeeds with a new executable, stops the running
    /// server and starts the new one.
    fn build_and_start(&mut self) {
        let built = match self.selection.build() {
            Ok(built) => built,
            // Ctrl-C at a terminal interrupts cargo too: that failure is no news.
            Err(_) if self.stopping.load(Ordering::SeqCst) => return,
            Err(error) => {
                if self.server.is_some() {
                    status(&format!(
                        "build failed; still serving the previous build ({error})"
                    ));
                } else {
                    status(&format!("build failed; waiting for a change ({error})"));
                }
                return;
            }
        };
        if self.stopping.load(Ordering::SeqCst) {
            return;
        }
        if built.fresh && self.server.is_some() {
            status("the build is unchanged; the server keeps running");
            return;
        }
        let restart = match self.server.take() {
            Some(child) => {
                stop(child);
                true
            }
            None => false,
        };
        self.server = start(&built, self.server_args);
        if let Some(child) = &self.server {
            let verb = if restart { "restarted" } else { "started" };
            status(&format!("{verb} {} (pid {})", built.name, child.id()));
        }
    }

    /// Reports a server that exited by itself, and forgets it: the next change restarts it.
    fn notice_exit(&mut self) {
        let Some(child) = &mut self.server else {
            return;
        };
        let exited = match child.try_wait() {
            Ok(Some(exit)) => exit.to_string(),
            Ok(None) => return,
            Err(error) => format!("cannot be waited for: {error}"),
        };
        self.server = None;
        // On Ctrl-C the terminal signals the server too, and it may exit before the
        // handler runs: that is no crash.
        if !self.stopping.load(Ordering::SeqCst) {
            status(&format!(
                "the server exited ({exited}); waiting for a change to rebuild and restart it"
            ));
        }
    }
}

/// Prints one status line of `dev` on stderr (stdout is the server's: a stdio server's
/// protocol). Plain text, no colour, so NO_COLOR and a pipe need nothing.
fn status(line: &str) {
    eprintln!("cargo fusion dev: {line}");
}

/// Makes Ctrl-C and SIGTERM send [`Event::Stop`].
fn install_stop_handler(sender: Sender<Event>, stopping: Arc<AtomicBool>) -> CliResult<()> {
    ctrlc::set_handler(move || {
        stopping.store(true, Ordering::SeqCst);
        // The loop may have ended already; nothing is left to tell then.
        let _ = sender.send(Event::Stop);
    })
    .map_err(|error| CliError::new(format!("cannot handle Ctrl-C: {error}")))
}

/// Watches the package's sources at `package_dir`, sending [`Event::Changed`] once the
/// changes have settled.
fn watch(
    package_dir: &Path,
    sender: Sender<Event>,
) -> CliResult<Debouncer<RecommendedWatcher, RecommendedCache>> {
    let root = package_dir.to_path_buf();
    let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| {
        let event = match result {
            Ok(events) => events
                .iter()
                // A read is no change: each build opens Cargo.toml, and would start the
                // next one.
                .filter(|event| !matches!(event.kind, EventKind::Access(_)))
                .flat_map(|event| event.paths.iter())
                .filter_map(|path| path.strip_prefix(&root).ok())
                .find(|path| is_source(path))
                .map(|path| Event::Changed(path.display().to_string())),
            Err(errors) => Some(Event::WatchFailed(
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            )),
        };
        if let Some(event) = event {
            // The loop may have ended already; nothing is left to tell then.
            let _ = sender.send(event);
        }
    })
    .map_err(|error| CliError::new(format!("cannot watch the sources: {error}")))?;
    for dir in WATCHED_DIRS {
        let dir = package_dir.join(dir);
        if dir.is_dir() {
            debouncer
                .watch(&dir, RecursiveMode::Recursive)
                .map_err(|error| {
                    CliError::new(format!("cannot watch {}: {error}", dir.display()))
                })?;
        }
    }
    // The root itself, not its files: an editor that saves by renaming a new file over
    // Cargo.toml would end a watch on the file. Only WATCHED_FILES count ([`is_source`]);
    // `target/` and what is under it are never seen, the watch is not recursive.
    debouncer
        .watch(package_dir, RecursiveMode::NonRecursive)
        .map_err(|error| {
            CliError::new(format!("cannot watch {}: {error}", package_dir.display()))
        })?;
    Ok(debouncer)
}

/// Whether a change at `path` (relative to the package's directory) is one to rebuild for:
/// a file under a watched directory that is not an editor's hidden or backup file, or one
/// of the watched files at the root.
fn is_source(path: &Path) -> bool {
    let mut components = path.components();
    let Some(Component::Normal(first)) = components.next() else {
        return false;
    };
    let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
        return false;
    };
    if components.next().is_none() {
        return WATCHED_FILES.iter().any(|file| first == *file);
    }
    let editor_file = name.starts_with('.')
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swx")
        || name == "4913";
    WATCHED_DIRS.iter().any(|dir| first == *dir) && !editor_file
}

/// Starts the `built` server with `args` and the human-readable log, on this terminal's
/// stdin, stdout and stderr; `None` (said on stderr) when it cannot be started.
fn start(built: &BuiltServer, args: &[OsString]) -> Option<Child> {
    let mut command = Command::new(&built.executable);
    command.args(args);
    // The person at the terminal reads the log, even when stderr is a pipe (a terminal
    // multiplexer, `| tee`); a format they chose themselves is kept.
    if std::env::var_os(LOG_FORMAT_ENV).is_none() {
        command.env(LOG_FORMAT_ENV, "text");
    }
    match command.spawn() {
        Ok(child) => Some(child),
        Err(error) => {
            status(&format!(
                "cannot start {}: {error}; waiting for a change",
                built.executable.display()
            ));
            None
        }
    }
}

/// Stops `child`: SIGTERM (the runtime then drains its calls), and a kill if it is still
/// running after [`STOP_TIMEOUT`].
fn stop(mut child: Child) {
    ask_to_stop(&mut child);
    match process::wait_until(&mut child, Instant::now() + STOP_TIMEOUT) {
        Ok(Some(_)) => {}
        Ok(None) => status(&format!(
            "the server (pid {}) did not stop within {} s and was killed",
            child.id(),
            STOP_TIMEOUT.as_secs()
        )),
        Err(error) => status(&format!("cannot wait for the server to stop: {error}")),
    }
}

/// Sends SIGTERM to `child`; the kill after the deadline is left to [`stop`].
#[cfg(unix)]
fn ask_to_stop(child: &mut Child) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    match i32::try_from(child.id()) {
        // It may have exited already: then there is nothing to ask.
        Ok(pid) => {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        Err(_) => {
            let _ = child.kill();
        }
    }
}

/// Stops `child` at once: no SIGTERM to ask with.
#[cfg(not(unix))]
fn ask_to_stop(child: &mut Child) {
    let _ = child.kill();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_watched_and_the_rest_is_not() {
        for path in [
            "src/main.rs",
            "src/tools/greet.rs",
            "examples/demo.rs",
            "Cargo.toml",
            "build.rs",
        ] {
            assert!(is_source(Path::new(path)), "{path}");
        }
        for path in [
            "fusion.lock",
            "Cargo.lock",
            "README.md",
            "target",
            "target/debug/demo",
            "src/.main.rs.swp",
            "src/main.rs~",
            "src/4913",
            "src",
            "",
        ] {
            assert!(!is_source(Path::new(path)), "{path}");
        }
    }
}
