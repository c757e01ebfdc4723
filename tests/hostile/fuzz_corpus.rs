//! The fuzz targets' committed corpus (`fuzz/corpus/<target>/`) and the inputs a fuzzer
//! once found (`fuzz/regressions/<target>/`), replayed on stable through the same checks
//! (`fuzz/checks.rs`): what a fuzzer found stays fixed, and the checks run in every build.

#[path = "../../fuzz/checks.rs"]
mod checks;

use std::path::Path;

/// Runs every file of `fuzz/<kind>/<target>/` through the target's check; how many ran.
fn replay(kind: &str, target: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut ran = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(
            outcome.is_ok(),
            "{target}: {} fails its check ({} bytes)",
            path.display(),
            data.len()
        );
        ran += 1;
    }
    ran
}

#[test]
fn every_corpus_input_passes_its_targets_check() {
    for (target, check) in checks::TARGETS {
        let ran = replay("corpus", target, check);
        assert!(
            ran >= 3,
            "{target}: only {ran} corpus inputs (fuzz/corpus/{target}/)"
        );
    }
}

#[test]
fn every_input_a_fuzzer_found_stays_fixed() {
    for (target, check) in checks::TARGETS {
        replay("regressions", target, check);
    }
}
