//! The code's shape, checked: no module imports one that imports it back
//! (at any level: two sibling modules, or two parts of one module through
//! their children), and no source file grows past what fits in a reader's
//! head. Test code is left out of both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a source file may be, in lines.
const MAX_LINES: usize = 700;

type Module = Vec<String>;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every non-test source file by its module path (`core::engine::outbox`).
fn modules() -> BTreeMap<Module, PathBuf> {
    let root = src();
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut out = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap().with_extension("");
        let mut parts: Module = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        if is_test(&parts) {
            continue;
        }
        out.insert(parts, file);
    }
    out
}

fn is_test(module: &Module) -> bool {
    module.iter().any(|p| p == "tests" || p.ends_with("_tests"))
}

/// The code of a file without its unit tests at the bottom.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.split("#[cfg(test)]").next().unwrap_or("").to_string()
}

/// The module paths `crate::…`, `super::…`, `self::…` named in `code`.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = ["crate::", "super::", "self::"]
            .iter()
            .filter_map(|k| rest.find(k))
            .min()
        {
            let before = rest[..at].chars().last();
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                out.push(tail[..end].split("::").map(str::to_string).collect());
            }
            rest = &tail[end.max(1)..];
        }
    }
    out
}

/// The module a path names from `current`: its longest prefix that is one.
fn resolve(current: &Module, path: &[String], known: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    let mut full: Module = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("self") => current.clone(),
        Some("super") => current.clone(),
        _ => return None,
    };
    let mut rest = path;
    if rest[0] == "crate" || rest[0] == "self" {
        rest = &rest[1..];
    }
    while rest.first().is_some_and(|p| p == "super") {
        full.pop();
        rest = &rest[1..];
    }
    full.extend(rest.iter().filter(|p| !p.is_empty()).cloned());
    (1..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|m| known.contains_key(m))
}

/// Edges between siblings: `a → b` when something in `a` (or below it)
/// names something in `b` (or below it), `a` and `b` children of one
/// module.
fn sibling_edges() -> BTreeMap<Module, BTreeSet<Module>> {
    let known = modules();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, file) in &known {
        for path in named_paths(&code(file)) {
            let Some(target) = resolve(module, &path, &known) else {
                continue;
            };
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common >= module.len() || common >= target.len() {
                continue; // a module and its own ancestor or descendant
            }
            edges
                .entry(module[..=common].to_vec())
                .or_default()
                .insert(target[..=common].to_vec());
        }
    }
    edges
}

/// One cycle through `start`, if there is one.
fn cycle_through(
    start: &Module,
    edges: &BTreeMap<Module, BTreeSet<Module>>,
) -> Option<Vec<Module>> {
    let mut stack = vec![(start.clone(), vec![start.clone()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in edges.get(&at).into_iter().flatten() {
            if next == start {
                return Some(path.clone());
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let edges = sibling_edges();
    assert!(
        edges.len() > 20,
        "found only {} importing modules",
        edges.len()
    );
    let mut cycles = BTreeSet::new();
    for start in edges.keys() {
        if let Some(mut cycle) = cycle_through(start, &edges) {
            let first = cycle.iter().min().unwrap().clone();
            let at = cycle.iter().position(|m| *m == first).unwrap();
            cycle.rotate_left(at);
            cycles.insert(
                cycle
                    .iter()
                    .map(|m| m.join("::"))
                    .collect::<Vec<_>>()
                    .join(" → "),
            );
        }
    }
    assert!(
        cycles.is_empty(),
        "import cycles (each back to its start):\n{}",
        cycles.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn no_source_file_is_longer_than_700_lines() {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, std::fs::read_to_string(f).unwrap().lines().count()))
        .filter(|(_, n)| *n > MAX_LINES)
        .map(|(f, n)| format!("{}: {n} lines", f.display()))
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}
