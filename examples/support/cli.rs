//! The command line of the example servers: `--help`/`-h`, `--version`, and a usage error
//! (exit 64, `EX_USAGE` of BSD's sysexits) for a flag the example does not take. Included
//! by each example with `#[path]` (the demo too), so the examples depend on nothing but
//! `std` for it; the library has no command line.
//!
//! Each example declares its [`Usage`] and calls [`check`] first thing in `main`; its own
//! parsing of the values stays as it was. `check` only makes sure every argument is a flag
//! the example knows, with a value when it takes one.

use std::process::ExitCode;

/// `EX_USAGE`: the command was used incorrectly (sysexits.h).
pub(crate) const EXIT_USAGE: u8 = 64;

/// What an example's `--help` says and which flags it takes.
pub(crate) struct Usage {
    /// The program's name, as usage lines and errors start.
    pub(crate) name: &'static str,
    /// One line: what the server is.
    pub(crate) about: &'static str,
    /// The flags: `(flag, value placeholder or "" for a switch, what it does)`.
    pub(crate) flags: &'static [(&'static str, &'static str, &'static str)],
    /// The environment variables it reads: `(name, what it does)`.
    pub(crate) env: &'static [(&'static str, &'static str)],
}

/// Every example reads `RUST_LOG` through `fusion_runtime::log::init`.
const RUST_LOG: (&str, &str) = (
    "RUST_LOG",
    "log filter for the JSON log on stderr (default: info)",
);

impl Usage {
    /// The `--help` text: usage line, flags, environment variables.
    pub(crate) fn help(&self) -> String {
        let mut text = format!(
            "{}: {}\n\nUsage: {} [OPTIONS]\n\nOptions:\n",
            self.name, self.about, self.name
        );
        let mut rows: Vec<(String, &str)> = self
            .flags
            .iter()
            .map(|(flag, value, what)| {
                let left = if value.is_empty() {
                    (*flag).to_owned()
                } else {
                    format!("{flag} {value}")
                };
                (left, *what)
            })
            .collect();
        rows.push(("-h, --help".to_owned(), "print this help and exit"));
        rows.push(("--version".to_owned(), "print the version and exit"));
        let width = rows.iter().map(|(left, _)| left.len()).max().unwrap_or(0);
        for (left, what) in rows {
            text.push_str(&format!("  {left:<width$}  {what}\n"));
        }
        text.push_str("\nEnvironment variables:\n");
        let env: Vec<(&str, &str)> = self.env.iter().copied().chain([RUST_LOG]).collect();
        let width = env.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
        for (name, what) in env {
            text.push_str(&format!("  {name:<width$}  {what}\n"));
        }
        text
    }

    /// What is wrong with `args` (without the program's name), if anything; `Ok(None)` when
    /// the example should go on, `Ok(Some(text))` for `--help` or `--version`.
    fn judge(&self, args: &[String]) -> Result<Option<String>, String> {
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            match arg.as_str() {
                "-h" | "--help" => return Ok(Some(self.help())),
                "--version" => {
                    return Ok(Some(format!(
                        "{} {}\n",
                        self.name,
                        env!("CARGO_PKG_VERSION")
                    )));
                }
                _ => {}
            }
            let Some((flag, value, _)) = self.flags.iter().find(|(flag, _, _)| flag == arg) else {
                return Err(if arg.starts_with('-') {
                    format!("unknown flag `{arg}`")
                } else {
                    format!("unexpected argument `{arg}`")
                });
            };
            if !value.is_empty() && rest.next().is_none() {
                return Err(format!("`{flag}` needs a value: `{flag} {value}`"));
            }
        }
        Ok(None)
    }
}

/// Reads the process's arguments: prints the help or the version (exit 0), or a usage
/// error (exit 64) when an argument is not one of `usage`'s flags; `None` when the example
/// should go on and serve.
pub(crate) fn check(usage: &Usage) -> Option<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match usage.judge(&args) {
        Ok(None) => None,
        Ok(Some(text)) => {
            print!("{text}");
            Some(ExitCode::SUCCESS)
        }
        Err(problem) => {
            eprintln!(
                "{}: {problem}\nUsage: {} [OPTIONS]; `{} --help` lists them.",
                usage.name, usage.name, usage.name
            );
            Some(ExitCode::from(EXIT_USAGE))
        }
    }
}
