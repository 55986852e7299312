//! doc/TESTING.md's matrix says which scenario runs on which kind; this
//! holds it to the tests that exist (`cells::CELLS`).

use super::cells::CELLS;

/// The kinds, in the matrix's column order, as the cells name them.
const KINDS: [&str; 6] = [
    "ollie",
    "ollie_double",
    "pipe",
    "codex",
    "claude",
    "opencode",
];

#[test]
fn matrix_is_documented() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/TESTING.md"))
        .expect("doc/TESTING.md");
    let mut rows = 0;
    for line in doc.lines() {
        let Some(rest) = line.strip_prefix("| `") else {
            continue;
        };
        let Some((scenario, cells)) = rest.split_once("` |") else {
            continue;
        };
        let cells: Vec<&str> = cells.split('|').map(str::trim).collect();
        for (i, kind) in KINDS.iter().enumerate() {
            let said = cells.get(i).copied().unwrap_or("");
            let tested = CELLS.contains(&(scenario, *kind));
            assert_eq!(
                said.starts_with('✓'),
                tested,
                "doc/TESTING.md says {said:?} for ({scenario}, {kind}); a test exists: {tested}"
            );
            assert!(
                tested || said.starts_with("n/a"),
                "({scenario}, {kind}): no test, and the doc says {said:?}, not n/a"
            );
        }
        rows += 1;
    }
    let scenarios: std::collections::BTreeSet<&str> = CELLS.iter().map(|c| c.0).collect();
    assert!(
        rows >= scenarios.len(),
        "doc/TESTING.md's matrix has {rows} rows for {} scenarios",
        scenarios.len()
    );
}
