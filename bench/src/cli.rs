//! A small command-line parser for the binaries: `--key value`, `--key=value` and bare
//! `--flag`s, every error a sentence that names the option.

use std::{collections::BTreeMap, fmt::Display, str::FromStr};

/// Options parsed from the command line.
#[derive(Debug, Default)]
pub struct Args {
    values: BTreeMap<String, String>,
    flags: Vec<String>,
}

impl Args {
    /// Parses `args` (without the program name). `flags` are the options that take no
    /// value; `valued` those that do. Anything else is an error listing the valid ones.
    pub fn parse(
        args: impl IntoIterator<Item = String>,
        valued: &[&str],
        flags: &[&str],
    ) -> Result<Self, String> {
        let mut parsed = Args::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let Some(option) = arg.strip_prefix("--") else {
                return Err(format!(
                    "unexpected argument `{arg}`; options start with `--`"
                ));
            };
            let (key, inline) = match option.split_once('=') {
                Some((key, value)) => (key, Some(value.to_owned())),
                None => (option, None),
            };
            if flags.contains(&key) {
                if inline.is_some() {
                    return Err(format!("`--{key}` takes no value"));
                }
                parsed.flags.push(key.to_owned());
            } else if valued.contains(&key) {
                let value = match inline {
                    Some(value) => value,
                    None => args
                        .next()
                        .ok_or_else(|| format!("`--{key}` needs a value"))?,
                };
                parsed.values.insert(key.to_owned(), value);
            } else {
                let mut known: Vec<String> = valued.iter().map(|k| format!("--{k} V")).collect();
                known.extend(flags.iter().map(|k| format!("--{k}")));
                return Err(format!(
                    "unknown option `--{key}`; valid: {}",
                    known.join(", ")
                ));
            }
        }
        Ok(parsed)
    }

    /// The value of `--key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Whether `--flag` was given.
    pub fn flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|given| given == flag)
    }

    /// The value of `--key` parsed as `T`, or `default` when absent.
    pub fn parse_or<T>(&self, key: &str, default: T) -> Result<T, String>
    where
        T: FromStr,
        T::Err: Display,
    {
        match self.get(key) {
            None => Ok(default),
            Some(text) => text
                .parse()
                .map_err(|error| format!("`--{key} {text}`: {error}")),
        }
    }
}

/// Splits a command line the way a POSIX shell would (quotes, backslashes), without
/// running a shell, so the process started is the server itself.
pub fn split_command(command: &str) -> Result<Vec<String>, String> {
    match shlex::split(command) {
        Some(words) if !words.is_empty() => Ok(words),
        Some(_) => Err("the server command is empty".to_owned()),
        None => Err(format!("cannot split `{command}`: unbalanced quotes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| (*word).to_owned()).collect()
    }

    #[test]
    fn values_flags_and_errors() -> Result<(), String> {
        let args = Args::parse(
            strings(&["--calls", "10", "--tool=echo", "--json"]),
            &["calls", "tool"],
            &["json"],
        )?;
        assert_eq!(args.parse_or("calls", 0u64)?, 10);
        assert_eq!(args.get("tool"), Some("echo"));
        assert!(args.flag("json"));
        assert_eq!(args.parse_or("runs", 3u32)?, 3);
        let unknown = Args::parse(strings(&["--cals", "1"]), &["calls"], &[]);
        assert!(unknown.is_err_and(|e| e.contains("--calls V")));
        assert!(Args::parse(strings(&["--calls"]), &["calls"], &[]).is_err());
        assert!(
            Args::parse(strings(&["--calls", "x"]), &["calls"], &[])?
                .parse_or("calls", 1u64)
                .is_err()
        );
        Ok(())
    }

    #[test]
    fn commands_split_like_a_shell() -> Result<(), String> {
        assert_eq!(
            split_command("server --name 'a b' \"c d\"")?,
            strings(&["server", "--name", "a b", "c d"])
        );
        assert!(split_command("  ").is_err());
        assert!(split_command("server 'open").is_err());
        Ok(())
    }
}
