//! Whether a name can be the package, the binary and the directory that `cargo fusion new`
//! creates: cargo's rules for a package name, kept to ASCII so that the name is the same
//! as a directory on every system, as a crate and in a client's config.

/// crates.io's limit on a name's length.
const MAX_LENGTH: usize = 64;

/// Rust's keywords, strict and reserved (edition 2024): a binary crate named so cannot be
/// referred to, and cargo refuses them.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Names cargo refuses for a package: the standard library's crates, and the directories
/// of its own in `target/`.
const RESERVED: &[&str] = &[
    "alloc",
    "build",
    "core",
    "deps",
    "examples",
    "incremental",
    "proc_macro",
    "std",
    "test",
];

/// The new crate's own dependencies: a package of the same name would clash with them.
const DEPENDENCIES: &[&str] = &["fusion_runtime", "tokio"];

/// Names Windows gives to devices: no directory can have them there.
const WINDOWS_DEVICES: &[&str] = &[
    "aux", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8", "com9", "con", "lpt1",
    "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9", "nul", "prn",
];

/// `Ok` when `name` can be a new package's name and its directory's.
///
/// # Errors
/// What is wrong with it, as a clause: "it starts with a digit".
pub(crate) fn check(name: &str) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err("it is empty".to_owned());
    };
    if !first.is_ascii_alphabetic() {
        return Err(format!(
            "it starts with `{first}`: a name starts with an ASCII letter"
        ));
    }
    if let Some(other) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(format!(
            "it holds `{}`: a name holds ASCII letters, digits, `-` and `_` only",
            other.escape_default()
        ));
    }
    if name.len() > MAX_LENGTH {
        return Err(format!(
            "it is {} characters long, and crates.io takes at most {MAX_LENGTH}",
            name.len()
        ));
    }
    // Cargo names the crate with `_` for `-`; the rules below are about the crate.
    let crate_name = name.replace('-', "_");
    if KEYWORDS.contains(&crate_name.as_str()) {
        return Err("it is a Rust keyword".to_owned());
    }
    if RESERVED.contains(&crate_name.as_str()) {
        return Err("cargo reserves it (a standard crate, or a directory of target/)".to_owned());
    }
    if DEPENDENCIES.contains(&crate_name.as_str()) {
        return Err("the new crate depends on a crate of that name".to_owned());
    }
    if WINDOWS_DEVICES.contains(&crate_name.to_ascii_lowercase().as_str()) {
        return Err("Windows reserves it for a device: no directory can have it there".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cargo_takes_pass() {
        for name in ["demo", "demo-x", "my_server2", "a", "Calc"] {
            assert_eq!(check(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn names_cargo_refuses_are_refused_with_the_reason() {
        let refused = [
            ("", "empty"),
            ("1calc", "starts with `1`"),
            ("-calc", "starts with `-`"),
            ("my server", "holds ` `"),
            ("a/b", "holds `/`"),
            ("../x", "starts with `.`"),
            ("café", "holds `\\u{e9}`"),
            ("fn", "keyword"),
            ("self", "keyword"),
            ("test", "reserves"),
            ("proc-macro", "reserves"),
            ("fusion-runtime", "depends on"),
            ("tokio", "depends on"),
            ("Nul", "Windows"),
        ];
        for (name, reason) in refused {
            let error = check(name).expect_err(name);
            assert!(error.contains(reason), "{name}: {error}");
        }
        let long = "a".repeat(MAX_LENGTH + 1);
        assert!(check(&long).is_err_and(|error| error.contains("at most 64")));
    }
}
