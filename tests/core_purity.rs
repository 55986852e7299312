//! The engine's rule, checked: nothing under `src/core` does I/O, reads a
//! clock, or depends on tokio or notify (test code aside).

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_core_imports_nothing_that_touches_the_world() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(
        files.len() > 10,
        "found {} files under {}",
        files.len(),
        root.display()
    );
    let forbidden = [
        "std::fs",
        "std::net",
        "std::process",
        "std::thread",
        "tokio",
        "notify::",
        "Instant::now",
        "SystemTime",
        "std::env",
        "libc::",
        "nix::",
    ];
    let mut found = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        // Test modules: `tests.rs`, `*_tests.rs`, and everything in a
        // `tests/` directory of the core (the engine's tests by subject).
        let in_tests = file
            .strip_prefix(&root)
            .is_ok_and(|rel| rel.components().any(|c| c.as_os_str() == "tests"));
        if name == "tests.rs" || name.ends_with("_tests.rs") || in_tests {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        // Unit tests at the bottom of a module may use temp files.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for bad in forbidden {
                if line.contains(bad) {
                    found.push(format!("{}:{}: {line}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "I/O or clocks in the core:\n{}",
        found.join("\n")
    );
}
