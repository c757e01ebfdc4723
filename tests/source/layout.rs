//! The runtime's layout (issue 16, ARCHITECTURE.md): no import cycle between the files of
//! `fusion-runtime/src`, the stages importing one way (transport → protocol → pipeline →
//! policy), and no file over 600 lines of non-test code unless the list below says why (nor
//! in `fusion-macros/src`).
//!
//! It reads every `.rs` file as text (comments and string literals removed, the file's
//! `#[cfg(test)] mod` left out), resolves the `crate::`, `super::`, `self::` and child-module
//! paths of `use` items and of inline paths to the file that defines the item (following
//! `use` re-exports, so `crate::Failure` is the file of `Failure`, not `lib.rs`), and looks
//! for strongly connected components (Tarjan). Each cycle is printed with the names that
//! tie its files. Run it alone with `cargo test --test source layout -- --nocapture`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Files allowed over 600 lines of non-test code, and why: none now. A file that must be
/// longer is named here with its reason, so the exception is written down and reviewed.
const LONG_FILES: &[(&str, &str)] = &[];

/// How many lines of non-test code a file may have.
const MAX_LINES: usize = 600;

type ModPath = Vec<String>;

struct File {
    /// Relative to `fusion-runtime/src`, with `/`.
    name: String,
    module: ModPath,
    /// The code before the test module, comments and literals blanked, split into the
    /// file's own module and its inline `mod name { .. }` blocks, each with its module.
    blocks: Vec<(ModPath, String)>,
    non_test_lines: usize,
}

#[test]
fn no_import_cycle_between_runtime_files() {
    let layout = Layout::read();
    let report = layout.cycles();
    println!("{report}");
    assert!(
        report.starts_with("no import cycle"),
        "import cycles between runtime files:\n{report}"
    );
}

/// The stages a request goes through, outermost first: each may import the ones after it,
/// never one before it (issue 37). A transport hands a request to the protocol, the
/// protocol to the pipeline, the pipeline runs the handler under its policy.
const STAGES: &[&str] = &["transport", "protocol", "pipeline", "policy"];

#[test]
fn the_stages_import_one_way_transport_protocol_pipeline_policy() {
    let layout = Layout::read();
    let stage_of = |file: usize| {
        let name = &layout.files[file].name;
        STAGES
            .iter()
            .position(|stage| name.split('/').next() == Some(*stage))
    };
    let mut backwards = String::new();
    let mut forward = vec![false; STAGES.len()];
    for (from, targets) in layout.edges() {
        let Some(from_stage) = stage_of(from) else {
            continue;
        };
        for (to, names) in targets {
            let Some(to_stage) = stage_of(to) else {
                continue;
            };
            if to_stage < from_stage {
                let _ = writeln!(
                    backwards,
                    "{} (stage {}) imports {} (stage {}): {}",
                    layout.files[from].name,
                    STAGES[from_stage],
                    layout.files[to].name,
                    STAGES[to_stage],
                    names.iter().cloned().collect::<Vec<_>>().join(", ")
                );
            }
            if to_stage == from_stage + 1 {
                forward[from_stage] = true;
            }
        }
    }
    assert!(
        backwards.is_empty(),
        "a stage imports one before it:\n{backwards}"
    );
    // Each stage reaches the next through an import, so the direction is written down
    // where the compiler and this test can see it, not only in methods on `Server`.
    for (stage, reaches) in forward.iter().enumerate().take(STAGES.len() - 1) {
        assert!(
            reaches,
            "{} imports nothing of {}: the hand-over between them is not an import",
            STAGES[stage],
            STAGES[stage + 1]
        );
    }
}

#[test]
fn no_runtime_file_is_over_600_lines_of_non_test_code() {
    let layout = Layout::read();
    let mut over = String::new();
    for file in &layout.files {
        if file.non_test_lines > MAX_LINES {
            let why = LONG_FILES.iter().find(|(name, _)| *name == file.name);
            match why {
                Some((_, why)) => println!(
                    "{} has {} lines of non-test code: {why}",
                    file.name, file.non_test_lines
                ),
                None => {
                    let _ = writeln!(
                        over,
                        "{} has {} lines of non-test code (at most {MAX_LINES})",
                        file.name, file.non_test_lines
                    );
                }
            }
        }
    }
    print!("{over}");
    assert!(over.is_empty(), "{over}");
}

/// The macros crate is held to the same rule: its largest file (`tool/expand.rs`, 733
/// lines) was split by the parts it emits (issue 61).
#[test]
fn no_macros_file_is_over_600_lines_of_non_test_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fusion-macros/src");
    let mut paths = Vec::new();
    walk(&root, &mut paths);
    paths.sort();
    assert!(paths.len() > 10, "fusion-macros/src has its files");
    let mut over = String::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("readable source");
        let (_, non_test_lines) = before_tests(&text);
        if non_test_lines > MAX_LINES {
            let _ = writeln!(
                over,
                "{} has {non_test_lines} lines of non-test code (at most {MAX_LINES})",
                path.strip_prefix(&root).expect("under src").display()
            );
        }
    }
    print!("{over}");
    assert!(over.is_empty(), "{over}");
}

struct Layout {
    files: Vec<File>,
    modules: BTreeMap<ModPath, usize>,
    /// Per file: the names its `use` items bring in, and the absolute path each stands for.
    imports: Vec<BTreeMap<String, ModPath>>,
    /// `#[macro_export]` macros: name → file.
    macros: BTreeMap<String, usize>,
}

impl Layout {
    fn read() -> Layout {
        // `FUSION_LAYOUT_SRC=dir` measures another tree (an older commit's, unpacked).
        let root = match std::env::var_os("FUSION_LAYOUT_SRC") {
            Some(dir) => PathBuf::from(dir),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("fusion-runtime/src"),
        };
        let mut paths = Vec::new();
        walk(&root, &mut paths);
        paths.sort();
        let mut files = Vec::new();
        for path in paths {
            let name = path
                .strip_prefix(&root)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).expect("readable source");
            let (non_test, non_test_lines) = before_tests(&text);
            let module = module_of(&name);
            files.push(File {
                blocks: split_inline_modules(&module, &strip(&non_test)),
                module,
                name,
                non_test_lines,
            });
        }
        let modules = files
            .iter()
            .enumerate()
            .map(|(index, file)| (file.module.clone(), index))
            .collect();
        let mut layout = Layout {
            files,
            modules,
            imports: Vec::new(),
            macros: BTreeMap::new(),
        };
        for index in 0..layout.files.len() {
            let mut map = BTreeMap::new();
            let (own, code) = &layout.files[index].blocks[0];
            for (path, alias) in use_paths(code) {
                if let Some(absolute) = layout.absolute(own, &path)
                    && alias != "*"
                    && alias != "self"
                {
                    // `pub use crate::{..}` inside an inline module of the file (lib.rs's
                    // prelude) names the file's own item, not a new one.
                    let mut own = layout.files[index].module.clone();
                    own.push(alias.clone());
                    if absolute != own {
                        map.entry(alias).or_insert(absolute);
                    }
                }
            }
            layout.imports.push(map);
            let code = &layout.files[index].blocks[0].1;
            let mut rest = code.as_str();
            while let Some(at) = rest.find("#[macro_export]") {
                rest = &rest[at + "#[macro_export]".len()..];
                if let Some(name) = rest
                    .trim_start()
                    .strip_prefix("macro_rules!")
                    .map(|after| ident_at(after.trim_start()))
                {
                    layout.macros.insert(name.to_owned(), index);
                }
            }
        }
        layout
    }

    /// `path` as written in module `module`, made absolute; `None` for other crates.
    fn absolute(&self, module: &[String], path: &[String]) -> Option<ModPath> {
        let mut module = module.to_vec();
        let mut segments = path.iter().peekable();
        match segments.peek().map(|s| s.as_str()) {
            Some("crate") => {
                module.clear();
                segments.next();
            }
            Some("self") => {
                segments.next();
            }
            Some("super") => {
                while segments.peek().map(|s| s.as_str()) == Some("super") {
                    module.pop();
                    segments.next();
                }
            }
            Some(first) => {
                let mut child = module.clone();
                child.push(first.to_owned());
                if !self.modules.contains_key(&child) {
                    return None;
                }
            }
            None => return None,
        }
        module.extend(segments.cloned());
        Some(module)
    }

    /// The file that defines what `absolute` names, and the item's name there.
    fn resolve(&self, absolute: &[String], depth: usize) -> (usize, Option<String>) {
        let mut module: ModPath = Vec::new();
        let mut rest = absolute;
        while let Some((first, tail)) = rest.split_first() {
            module.push(first.clone());
            if self.modules.contains_key(&module) {
                rest = tail;
            } else {
                module.pop();
                break;
            }
        }
        let file = self.modules[&module];
        let Some((item, tail)) = rest.split_first() else {
            return (file, None);
        };
        if depth < 8 {
            if let Some(target) = self.imports[file].get(item) {
                let mut next = target.clone();
                next.extend(tail.iter().cloned());
                return self.resolve(&next, depth + 1);
            }
            if module.is_empty()
                && let Some(&defined) = self.macros.get(item)
            {
                return (defined, Some(item.clone()));
            }
        }
        (file, Some(item.clone()))
    }

    /// Edges between files: from → to → the names that tie them.
    fn edges(&self) -> BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>> {
        let mut edges: BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>> = BTreeMap::new();
        for (index, file) in self.files.iter().enumerate() {
            let mut paths: Vec<(&ModPath, Vec<String>)> = Vec::new();
            for (module, code) in &file.blocks {
                paths.extend(use_paths(code).into_iter().map(|(p, _)| (module, p)));
                paths.extend(inline_paths(code).into_iter().map(|p| (module, p)));
            }
            for (module, path) in paths {
                let Some(absolute) = self.absolute(module, &path) else {
                    continue;
                };
                let (to, item) = self.resolve(&absolute, 0);
                if to != index {
                    let name = match item {
                        Some(item) => format!("{}::{item}", self.short(to)),
                        None => self.short(to),
                    };
                    edges
                        .entry(index)
                        .or_default()
                        .entry(to)
                        .or_default()
                        .insert(name);
                }
            }
        }
        edges
    }

    fn short(&self, file: usize) -> String {
        let module = &self.files[file].module;
        if module.is_empty() {
            "crate".to_owned()
        } else {
            module.join("::")
        }
    }

    fn cycles(&self) -> String {
        let edges = self.edges();
        // `FUSION_LAYOUT_EDGES=1` prints every edge, not only those of cycles.
        if std::env::var_os("FUSION_LAYOUT_EDGES").is_some() {
            for (from, targets) in &edges {
                for (to, names) in targets {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    println!(
                        "{} -> {}: {}",
                        self.files[*from].name,
                        self.files[*to].name,
                        names.join(", ")
                    );
                }
            }
        }
        let components = tarjan(self.files.len(), &edges);
        let mut out = String::new();
        let mut count = 0;
        for component in components.iter().filter(|c| c.len() > 1) {
            count += 1;
            let set: BTreeSet<usize> = component.iter().copied().collect();
            let names: Vec<&str> = set.iter().map(|&f| self.files[f].name.as_str()).collect();
            let _ = writeln!(
                out,
                "cycle of {} files: {}",
                component.len(),
                names.join(", ")
            );
            for &from in &set {
                for (to, names) in edges.get(&from).into_iter().flatten() {
                    if set.contains(to) {
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        let _ = writeln!(
                            out,
                            "  {} -> {}: {}",
                            self.files[from].name,
                            self.files[*to].name,
                            names.join(", ")
                        );
                    }
                }
            }
        }
        if count == 0 {
            format!(
                "no import cycle between the {} runtime files",
                self.files.len()
            )
        } else {
            format!("{count} import cycle(s):\n{out}")
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(name: &str) -> ModPath {
    let name = name.trim_end_matches(".rs");
    let mut parts: Vec<String> = name.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The file without its `#[cfg(test)] mod .. { .. }` (code after it counts), and how many
/// lines that leaves.
fn before_tests(text: &str) -> (String, usize) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut kept = String::with_capacity(text.len());
    let mut count = 0;
    let mut n = 0;
    while n < lines.len() {
        let test_module = lines[n].trim_end().starts_with("#[cfg(")
            && lines[n].contains("test")
            && lines
                .get(n + 1)
                .is_some_and(|next| next.starts_with("mod ") || next.starts_with("pub mod "));
        if test_module {
            // Up to the module's closing brace, at the start of a line.
            n += 1;
            while n < lines.len() && lines[n].trim_end() != "}" {
                n += 1;
            }
            n += 1;
            continue;
        }
        kept.push_str(lines[n]);
        count += 1;
        n += 1;
    }
    (kept, count)
}

/// The file's own code (inline module blocks blanked) and each inline `mod name { .. }`
/// block, with the module each belongs to.
fn split_inline_modules(module: &ModPath, code: &str) -> Vec<(ModPath, String)> {
    let mut outer = code.to_owned();
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("mod ").map(|at| at + from) {
        from = at + 4;
        if code[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let name = ident_at(&code[from..]);
        let after = code[from + name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        let mut depth = 0;
        let mut close = code.len();
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let mut inner_module = module.clone();
        inner_module.push(name.to_owned());
        blocks.push((inner_module, code[open..close].to_owned()));
        outer.replace_range(open..close, &" ".repeat(close - open));
        from = close;
    }
    let mut all = vec![(module.clone(), outer)];
    all.extend(blocks);
    all
}

/// The code with comments, strings and char literals replaced by spaces.
fn strip(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn ident_at(text: &str) -> &str {
    let end = text.find(|c: char| !is_ident(c)).unwrap_or(text.len());
    &text[..end]
}

/// Every `use` item's paths, each with the name it binds (`*` for a glob).
fn use_paths(code: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + 4..];
        if before.is_some_and(is_ident) {
            continue;
        }
        let end = rest.find(';').unwrap_or(rest.len());
        let words: Vec<&str> = rest[..end].split_whitespace().collect();
        let mut tree = words.join(" ");
        for punct in ["::", "{", "}", ","] {
            tree = tree
                .replace(&format!(" {punct}"), punct)
                .replace(&format!("{punct} "), punct);
        }
        expand_tree(&[], &tree, &mut out);
        rest = &rest[end..];
    }
    out
}

fn expand_tree(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.strip_prefix("::").unwrap_or(tree);
    if let Some(open) = tree.find('{') {
        let mut base = prefix.to_vec();
        base.extend(
            tree[..open]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_tree(&base, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_tree(&base, &inner[start..], out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let tree = tree.trim();
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path, Some(alias)),
        None => (tree, None),
    };
    let mut segments = prefix.to_vec();
    segments.extend(path.split("::").map(str::to_owned));
    if segments.last().map(String::as_str) == Some("self") {
        segments.pop();
    }
    let name = alias
        .map(str::to_owned)
        .or_else(|| path.split("::").last().map(str::to_owned))
        .unwrap_or_default();
    if !segments.is_empty() {
        out.push((segments, name));
    }
}

/// Paths written inline that start with `crate`, `super`, `self` or a child module name
/// (the caller drops the ones that name no module of this crate).
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = is_ident(chars[i])
            && !chars[i].is_ascii_digit()
            // `$crate::..` in a macro body names the crate where the macro expands.
            && (i == 0 || (!is_ident(chars[i - 1]) && chars[i - 1] != ':' && chars[i - 1] != '$'));
        if !starts {
            i += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let start = j;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            segments.push(chars[start..j].iter().collect::<String>());
            if chars.get(j) == Some(&':')
                && chars.get(j + 1) == Some(&':')
                && chars.get(j + 2).is_some_and(|c| is_ident(*c))
            {
                j += 2;
            } else {
                break;
            }
        }
        if segments.len() > 1 {
            out.push(segments);
        }
        i = j.max(i + 1);
    }
    out
}

/// Strongly connected components, each in the order Tarjan's algorithm closes them.
fn tarjan(n: usize, edges: &BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>>) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>>,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        let targets: Vec<usize> = s
            .edges
            .get(&v)
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default();
        for w in targets {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let mut state = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.out
}
