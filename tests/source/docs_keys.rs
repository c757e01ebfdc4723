//! The documentation of `#[mcp_tool]` on docs.rs (`fusion-runtime/docs/mcp_tool.md`) lists
//! every key the macros accept (issue 36, item 6). The keys are read from what the macros
//! themselves say: the "valid keys are: .." of an unknown key's compile error, kept in the
//! trybuild cases' expected output.

use std::path::Path;

fn read(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The keys named after "valid keys are: " in a compile error.
fn valid_keys(stderr: &str) -> Vec<String> {
    let list = stderr
        .split("valid keys are: ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_else(|| panic!("no key list in:\n{stderr}"));
    list.split(", ")
        .map(|key| key.trim_matches('`').to_owned())
        .collect()
}

/// The rows of the Markdown table under `heading`: their first cells.
fn table_keys(doc: &str, heading: &str) -> String {
    let section = doc
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("no `{heading}` section"));
    section
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| line.split('|').nth(1))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every key the macro's unknown-key error in `stderr_file` lists (at least `least` of
/// them) stands, in backticks, in a row of the table under `heading`.
fn assert_documented(heading: &str, stderr_file: &str, least: usize) {
    let doc = read("fusion-runtime/docs/mcp_tool.md");
    let documented = table_keys(&doc, heading);
    let keys = valid_keys(&read(stderr_file));
    assert!(keys.len() >= least, "{keys:?}");
    for key in keys {
        assert!(
            documented.contains(&format!("`{key}")),
            "`{key}` is missing from the table under `{heading}`"
        );
    }
}

#[test]
fn every_mcp_tool_key_is_documented() {
    assert_documented(
        "# Every key of `#[mcp_tool(..)]`",
        "tests/ui/mcp_tool/unknown_key.stderr",
        17,
    );
}

#[test]
fn every_arg_key_is_documented() {
    assert_documented(
        "# Every key of `#[arg(..)]`",
        "tests/ui/arg/unknown_key.stderr",
        16,
    );
}
