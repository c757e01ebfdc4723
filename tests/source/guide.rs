//! The guide (`guide/src/`, an mdBook) and the README cannot drift: every relative link
//! names a file that exists (and a heading there, for `file.md#anchor`), every chapter is
//! listed in `SUMMARY.md`, every chapter is compiled as doc tests of `fusion-runtime`
//! (included by `fusion-runtime/src/guide.rs`), and a Rust block that is not compiled there
//! (`ignore`) only includes a file of the repository that is (`{{#include ../../examples/..}}`).
//! `scripts/test` builds the book itself with mdBook.

use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Every chapter of the guide, sorted: `guide/src/*.md` but `SUMMARY.md`.
fn chapters() -> Vec<PathBuf> {
    let dir = root().join("guide/src");
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .filter(|path| path.file_name().is_some_and(|name| name != "SUMMARY.md"))
        .collect();
    chapters.sort();
    chapters
}

/// The anchor mdBook and GitHub give a heading: lower case, punctuation dropped, spaces as
/// hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A line of a Markdown file, numbered from 1, and whether it is inside a fenced block.
struct Line<'a> {
    number: usize,
    text: &'a str,
    fenced: bool,
}

fn lines(text: &str) -> Vec<Line<'_>> {
    let mut fenced = false;
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            let fence = line.trim_start().starts_with("```");
            if fence {
                fenced = !fenced;
            }
            Line {
                number: index + 1,
                text: line,
                // A fence line itself belongs to no prose.
                fenced: fenced || fence,
            }
        })
        .collect()
}

/// The anchors of a Markdown file's headings.
fn anchors(path: &Path) -> Vec<String> {
    let text = read(path);
    lines(&text)
        .iter()
        .filter(|line| !line.fenced && line.text.starts_with('#'))
        .map(|line| slug(line.text.trim_start_matches('#')))
        .collect()
}

/// The targets of the Markdown links `[..](target)` on a line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(&after[..end]);
        rest = &after[end..];
    }
    targets
}

/// What is wrong with a link from `file` to `target`, if anything.
fn check_link(file: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let linked = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().expect("a file's directory").join(path)
    };
    if !linked.exists() {
        return Some(format!(
            "the link `{target}` names a file that does not exist"
        ));
    }
    if let Some(anchor) = anchor
        && linked.extension().is_some_and(|ext| ext == "md")
        && !anchors(&linked).iter().any(|found| found == anchor)
    {
        return Some(format!(
            "the link `{target}` names no heading of {}",
            linked.display()
        ));
    }
    None
}

/// What is wrong with an mdBook `{{#include path[:from:to]}}` in `file`, if anything.
fn check_include(file: &Path, include: &str) -> Option<String> {
    let spec = include
        .trim()
        .strip_prefix("{{#include ")
        .and_then(|rest| rest.strip_suffix("}}"))?;
    let mut parts = spec.trim().split(':');
    let path = parts.next().unwrap_or_default();
    let included = file.parent().expect("a file's directory").join(path);
    if !included.exists() {
        return Some(format!("`{include}` names a file that does not exist"));
    }
    let lines = read(&included).lines().count();
    for bound in parts {
        match bound.parse::<usize>() {
            Ok(n) if (1..=lines).contains(&n) => {}
            _ => {
                return Some(format!(
                    "`{include}`: line `{bound}` is not in the file ({lines} lines)"
                ));
            }
        }
    }
    None
}

/// Every problem of one Markdown file: broken links and includes, and (in a chapter that is
/// compiled, `compiled`) Rust blocks that are marked `ignore` without including a file
/// that is compiled elsewhere.
fn problems(file: &Path, compiled: bool) -> Vec<String> {
    let text = read(file);
    let name = file
        .strip_prefix(root())
        .unwrap_or(file)
        .display()
        .to_string();
    let mut problems = Vec::new();
    let mut block: Option<(usize, String)> = None; // the open fence's line and info string
    let mut body: Vec<&str> = Vec::new();
    for line in lines(&text) {
        let trimmed = line.text.trim_start();
        if trimmed.starts_with("```") {
            match block.take() {
                None => {
                    block = Some((line.number, trimmed.trim_start_matches('`').to_owned()));
                    body.clear();
                }
                Some((start, info)) => {
                    let rust = info.split(',').next() == Some("rust");
                    let ignored = info.split(',').any(|flag| flag.trim() == "ignore");
                    if rust && !compiled {
                        problems.push(format!(
                            "{name}:{start}: a Rust block in a file that `fusion-runtime/src/guide.rs` does not include: it is never compiled"
                        ));
                    } else if rust && ignored {
                        let includes_only = body
                            .iter()
                            .filter(|l| !l.trim().is_empty())
                            .all(|l| l.trim().starts_with("{{#include "))
                            && body.iter().any(|l| !l.trim().is_empty());
                        if !includes_only {
                            problems.push(format!(
                                "{name}:{start}: a Rust block marked `ignore` is never compiled: make it compile (hidden `# ` lines), or include a file that is compiled (`{{{{#include ../../examples/..}}}}`)"
                            ));
                        }
                    }
                }
            }
            continue;
        }
        if block.is_some() {
            body.push(line.text);
        }
        if line.text.trim().starts_with("{{#include ")
            && let Some(problem) = check_include(file, line.text)
        {
            problems.push(format!("{name}:{}: {problem}", line.number));
        }
        if !line.fenced {
            for target in link_targets(line.text) {
                if let Some(problem) = check_link(file, target) {
                    problems.push(format!("{name}:{}: {problem}", line.number));
                }
            }
        }
    }
    if let Some((start, _)) = block {
        problems.push(format!(
            "{name}:{start}: a fenced block that is never closed"
        ));
    }
    problems
}

/// The files `fusion-runtime/src/guide.rs` includes as doc tests, relative to the root.
fn doc_tested() -> Vec<PathBuf> {
    let module = root().join("fusion-runtime/src/guide.rs");
    read(&module)
        .split("include_str!(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|path| {
            let joined = module.parent().expect("src/").join(path);
            // `fusion-runtime/src/../../guide/src/x.md`, without the `..`s.
            let mut normal = PathBuf::new();
            for part in joined.components() {
                match part {
                    std::path::Component::ParentDir => {
                        normal.pop();
                    }
                    other => normal.push(other),
                }
            }
            normal
        })
        .collect()
}

#[test]
fn the_guide_and_the_readme_have_no_broken_link_and_no_uncompiled_block() {
    let root = root();
    let tested = doc_tested();
    let summary_path = root.join("guide/src/SUMMARY.md");
    let summary = read(&summary_path);
    let listed: Vec<&str> = summary.lines().flat_map(link_targets).collect();
    let mut problems = problems(&summary_path, true);
    for chapter in chapters() {
        let file_name = chapter
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 name");
        let compiled = tested.contains(&chapter);
        if !compiled {
            problems.push(format!(
                "guide/src/{file_name}:1: not included by fusion-runtime/src/guide.rs (`#[doc = include_str!(\"../../guide/src/{file_name}\")]`): its Rust blocks are never compiled"
            ));
        }
        if !listed.contains(&file_name) {
            problems.push(format!(
                "guide/src/{file_name}:1: not listed in guide/src/SUMMARY.md: mdBook would not build it"
            ));
        }
        problems.extend(self::problems(&chapter, compiled));
    }
    let readme = root.join("README.md");
    problems.extend(self::problems(&readme, tested.contains(&readme)));
    assert!(
        problems.is_empty(),
        "the guide and the README:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn slugs_are_the_anchors_mdbook_gives() {
    assert_eq!(
        slug(" Bounds against hostile peers"),
        "bounds-against-hostile-peers"
    );
    assert_eq!(
        slug("What replicas share, and what each keeps to itself"),
        "what-replicas-share-and-what-each-keeps-to-itself"
    );
    assert_eq!(
        slug("Failures for programs: `_meta[\"fusion/failure\"]`"),
        "failures-for-programs-_metafusionfailure"
    );
}

#[test]
fn a_broken_link_is_found() {
    let dir = std::env::temp_dir().join(format!("fusion-guide-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let page = dir.join("page.md");
    std::fs::write(
        &page,
        "# Page\n\nSee [there](missing.md), [here](#page) and [nowhere](#gone).\n\n```rust,ignore\nlet x = 1;\n```\n",
    )
    .expect("written");
    let found = problems(&page, true);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].ends_with("page.md:3: the link `missing.md` names a file that does not exist"),
        "{found:#?}"
    );
    assert!(found[1].contains("`#gone` names no heading"), "{found:#?}");
    assert!(
        found[2].contains("page.md:5: a Rust block marked `ignore`"),
        "{found:#?}"
    );
}
