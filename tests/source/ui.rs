//! Compile-time diagnostics: each file under `tests/ui/<macro>/` breaks one rule and its
//! `.stderr` holds what the user reads. Regenerate with `TRYBUILD=overwrite` and read the
//! diff: every message must say the rule and the fix.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/mcp_tool/*.rs");
    cases.compile_fail("tests/ui/arg/*.rs");
    cases.compile_fail("tests/ui/classify/*.rs");
    cases.compile_fail("tests/ui/mcp_type/*.rs");
    // Each of these registers (and some call) the tool they break: one error a mistake.
    cases.compile_fail("tests/ui/registered/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
