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

/// The text of `path` from the line starting with `start` to the first
/// line that is exactly `end` (its code only, without unit tests).
fn block(path: &Path, start: &str, end: &str) -> String {
    let code = code(path);
    let from = code
        .find(start)
        .unwrap_or_else(|| panic!("no `{start}` in {}", path.display()));
    let rest = &code[from..];
    let to = rest
        .lines()
        .position(|l| l == end)
        .unwrap_or_else(|| panic!("`{start}` in {} never ends", path.display()));
    rest.lines().take(to + 1).collect::<Vec<_>>().join("\n")
}

/// The daemon's state is a handful of parts that each own theirs, not
/// one struct every file reaches into.
#[test]
fn the_daemon_struct_holds_at_most_8_fields() {
    let body = block(&src().join("shell/daemon.rs"), "struct Daemon {", "}");
    let fields: Vec<&str> = body
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with('#'))
        .filter_map(|l| {
            let l = l.strip_prefix("pub(super) ").unwrap_or(l);
            let (name, _) = l.split_once(':')?;
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                .then_some(name)
        })
        .collect();
    assert!(!fields.is_empty(), "found no fields in:\n{body}");
    assert!(
        fields.len() <= 8,
        "the daemon struct holds {} fields: {fields:?}",
        fields.len()
    );
}

/// Each kind of session is made from one list, `agents::KINDS`: every
/// kind the engine parses (`core::session::Kind`) has one entry there,
/// every backend is made only there, and no part of the shell outside the
/// kinds' folders branches on a kind by name.
#[test]
fn the_list_of_kinds_is_the_one_place_kinds_are_named() {
    let kinds_file = src().join("shell/agents/mod.rs");
    let variants: BTreeSet<String> = block(&src().join("core/session.rs"), "pub enum Kind {", "}")
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && l.ends_with(','))
        .map(|l| l.trim_end_matches(',').to_string())
        .collect();
    assert!(variants.len() >= 4, "kinds: {variants:?}");
    let list = block(&kinds_file, "pub const KINDS", "];");
    let listed: Vec<String> = list
        .split("kind: Kind::")
        .skip(1)
        .map(|rest| rest.split(',').next().unwrap().trim().to_string())
        .collect();
    assert_eq!(
        listed.iter().cloned().collect::<BTreeSet<_>>(),
        variants,
        "every kind once in agents::KINDS"
    );
    assert_eq!(
        listed.len(),
        variants.len(),
        "a kind listed twice: {listed:?}"
    );

    let agents = src().join("shell/agents");
    let mut backends = Vec::new();
    for (module, file) in modules() {
        for l in code(&file).lines() {
            if let Some(ty) = l.trim().strip_prefix("impl Backend for ") {
                let ty = ty.trim_end_matches(" {").to_string();
                backends.push((ty, file.parent().unwrap().to_path_buf(), module.clone()));
            }
        }
    }
    assert!(backends.len() >= 4, "backends: {backends:?}");
    for (ty, folder, _) in &backends {
        assert!(
            folder.starts_with(&agents),
            "{ty} is not in a folder under shell/agents"
        );
        assert!(
            list.contains(&format!("{ty}::new(")),
            "{ty} is not made in agents::KINDS"
        );
        for file in modules().values() {
            let made_here = code(file).contains(&format!("{ty}::new("));
            if made_here && *file != kinds_file && !file.starts_with(folder) {
                panic!("{} makes a {ty}: only agents::KINDS does", file.display());
            }
        }
    }
    for (module, file) in modules() {
        let shell_outside_agents =
            module.first().is_some_and(|m| m == "shell") && !file.starts_with(&agents);
        if !shell_outside_agents {
            continue;
        }
        let code: String = code(&file)
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        for kind in &variants {
            assert!(
                !code.contains(&format!("Kind::{kind}")),
                "{} branches on Kind::{kind}: a kind's own behaviour belongs in its folder or its entry in agents::KINDS",
                file.display()
            );
        }
    }
}
