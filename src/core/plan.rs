//! The parsed form of a plan — a markdown checklist or a `*.plan.json`
//! document — shared by the parsers, the dependency graph and the engine.
//!
//! A `Plan` is a value: parsing is a pure function of the file's bytes, and the
//! engine diffs successive values of the same plan identity.

use serde::Serialize;

use super::{markdown, planjson};

/// Where a step stands, as the file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    /// Not started: `- [ ]`, or a plan.json task with status `todo`.
    Open,
    /// Started but not finished (plan.json `doing`): never ready, not checked.
    Doing,
    /// `- [x]` / `- [X]`, or plan.json `done` / `dropped`.
    Checked,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Position in file order, 1-based: the `N` of `N`, `sN` and `qN`.
    pub num: usize,
    /// Identity across edits: the normalised title, plus `#k` for the k-th
    /// (k ≥ 2) step with that same title.
    pub key: String,
    /// The id agents see: `sN` for markdown plans, `tN` for plan.json tasks.
    pub label: String,
    /// The title, trimmed, with any `(after: …)` annotation removed.
    pub title: String,
    /// Description lines (indentation removed), joined with `\n`.
    pub description: String,
    /// Checked, doing or open.
    pub status: StepStatus,
    /// Indices (0-based, into `Plan::steps`) of the steps this one waits for.
    pub deps: Vec<usize>,
    /// 1-based line of the step in its file (0 for plan.json, which has no
    /// meaningful lines per task).
    pub line: usize,
}

/// A parsed, validated plan: every dependency exists and the graph is acyclic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The goal: the markdown `# ` heading, or plan.json `title`.
    pub goal: String,
    /// The session named inside the file (`<!-- session: id -->`, front
    /// matter `session:`, or plan.json `session`), unvalidated.
    pub session: Option<String>,
    /// Steps in file order.
    pub steps: Vec<Step>,
}

/// Why a plan file is invalid. The caller adds the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    /// 1-based line the problem is on; 0 when it concerns the whole file.
    pub line: usize,
    /// What is wrong, in words a user can act on.
    pub message: String,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: {}", self.line, self.message)
        } else {
            f.write_str(&self.message)
        }
    }
}

/// Which parser a file needs, decided from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFormat {
    Markdown,
    Json,
}

/// Reads a plan file's bytes with the parser its name calls for.
///
/// Refuses, before any parsing, what cannot be a plan: more than `max_bytes`
/// (line 0), NUL bytes (binary content), and invalid UTF-8 — the last two
/// with the line of the first offending byte, so the journal entry points at
/// it.
pub fn parse_plan(format: PlanFormat, bytes: &[u8], max_bytes: usize) -> Result<Plan, PlanError> {
    if bytes.len() > max_bytes {
        return Err(PlanError {
            line: 0,
            message: format!(
                "plan file is {} bytes, over the cap of {max_bytes} bytes (project.max_plan_bytes)",
                bytes.len()
            ),
        });
    }
    let line_at = |offset: usize| bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        return Err(PlanError {
            line: line_at(nul),
            message: format!("binary content, not a plan: NUL byte at byte offset {nul}"),
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| PlanError {
        line: line_at(e.valid_up_to()),
        message: format!(
            "not valid UTF-8: first bad byte at byte offset {}",
            e.valid_up_to()
        ),
    })?;
    match format {
        PlanFormat::Markdown => markdown::parse(text),
        PlanFormat::Json => planjson::parse(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &[u8] = b"# Goal\n\n- [x] one\n- [ ] two\n  desc\n";

    #[test]
    fn dispatches_by_format() {
        let p = parse_plan(PlanFormat::Markdown, MD, 1024).unwrap();
        assert_eq!(p.goal, "Goal");
        assert_eq!(p.ready(), [1]);
        let p = parse_plan(
            PlanFormat::Json,
            br#"{"title": "J", "phases": [{"tasks": [{"text": "a"}]}]}"#,
            1024,
        )
        .unwrap();
        assert_eq!(p.steps[0].label, "t1");
        // the wrong parser for the content is an error, not a silent empty plan
        assert!(parse_plan(PlanFormat::Json, MD, 1024).is_err());
    }

    #[test]
    fn size_cap() {
        assert!(parse_plan(PlanFormat::Markdown, MD, MD.len()).is_ok());
        let e = parse_plan(PlanFormat::Markdown, MD, MD.len() - 1).unwrap_err();
        assert_eq!(e.line, 0);
        assert_eq!(
            e.message,
            format!(
                "plan file is {} bytes, over the cap of {} bytes (project.max_plan_bytes)",
                MD.len(),
                MD.len() - 1
            )
        );
    }

    #[test]
    fn nul_is_binary() {
        let e = parse_plan(PlanFormat::Markdown, b"# G\n- [ ] a\n\0rest", 1024).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.starts_with("binary content"), "{}", e.message);
    }

    #[test]
    fn invalid_utf8_names_its_line() {
        let e = parse_plan(
            PlanFormat::Markdown,
            b"# G\r\n- [ ] a\r\n- [ ] caf\xe9\r\n",
            1024,
        )
        .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.starts_with("not valid UTF-8"), "{}", e.message);
        let e = parse_plan(PlanFormat::Json, b"\xff{}", 1024).unwrap_err();
        assert_eq!(e.line, 1);
        assert_eq!(
            e.to_string(),
            "line 1: not valid UTF-8: first bad byte at byte offset 0"
        );
    }
}
