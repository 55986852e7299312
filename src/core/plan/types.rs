//! The parsed plan as a value, shared by the parsers, the graph and the
//! engine.

use serde::Serialize;

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
    /// The text after the checkbox exactly as the file has it, when it
    /// differs from `title` (an inline `(after: …)`, runs of spaces): what
    /// an agent's edit of the line must match. `None` otherwise — the
    /// common case costs nothing.
    pub written: Option<String>,
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

impl Step {
    /// The step's text as its line has it (what a tick must match).
    pub fn as_written(&self) -> &str {
        self.written.as_deref().unwrap_or(&self.title)
    }
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
