//! The offline answers to `reveille ready FILE` and `reveille why FILE`: a
//! plan's ready steps (or a beads file's ready issues) in one shape for
//! both, and for every unchecked step what it still waits for — as text
//! lines for people and shell pipelines, or as JSON for programs.

use serde::Serialize;

use super::beads::Issue;
use super::plan::{Plan, StepStatus};

/// One ready step or issue: the one shape of `ready --json`, whatever the
/// file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadyItem {
    /// `sN`, `tN`, or the issue id.
    pub id: String,
    pub title: String,
    /// The step's description lines; empty for issues.
    pub description: String,
    /// The ids it waited for (all complete now).
    pub deps: Vec<String>,
    /// 1-based line in the file; `None` where lines mean nothing (plan.json).
    pub line: Option<usize>,
}

/// Another step, named: what a step waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepRef {
    pub id: String,
    pub title: String,
}

/// Where an unchecked step stands, as the file alone says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Standing {
    /// Every step it depends on is checked.
    Ready,
    /// Some step it depends on is not checked yet.
    Waiting,
    /// A plan.json task marked `doing`: started, never announced.
    Doing,
}

/// One unchecked step and what it still waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepWhy {
    pub id: String,
    pub title: String,
    /// The step's identity across edits (its normalised title), which is
    /// how the daemon remembers what it announced.
    #[serde(skip)]
    pub key: String,
    pub line: Option<usize>,
    pub standing: Standing,
    /// The unchecked steps it depends on, in file order.
    pub waits_for: Vec<StepRef>,
}

fn line(n: usize) -> Option<usize> {
    (n > 0).then_some(n)
}

/// The ready steps of `plan`, in file order.
pub fn ready_steps(plan: &Plan) -> Vec<ReadyItem> {
    let label = |d: usize| plan.steps.get(d).map(|s| s.label.clone());
    plan.ready()
        .into_iter()
        .map(|i| &plan.steps[i])
        .map(|s| ReadyItem {
            id: s.label.clone(),
            title: s.title.clone(),
            description: s.description.clone(),
            deps: s.deps.iter().filter_map(|&d| label(d)).collect(),
            line: line(s.line),
        })
        .collect()
}

/// The issues at `ready` (indices into `issues`), in the same shape.
pub fn ready_issues(issues: &[Issue], ready: &[usize]) -> Vec<ReadyItem> {
    ready
        .iter()
        .filter_map(|&i| issues.get(i))
        .map(|issue| ReadyItem {
            id: issue.id.clone(),
            title: issue.title.clone(),
            description: String::new(),
            deps: issue
                .dependencies
                .iter()
                .map(|d| d.depends_on_id.clone())
                .collect(),
            line: line(issue.line),
        })
        .collect()
}

/// A title on one line: control characters (a tab, a newline from a JSON
/// title) would break the `id<TAB>title` rows.
pub fn one_line(title: &str) -> String {
    title
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// One line per item: `{id}\t{title}\n`.
pub fn ready_lines(items: &[ReadyItem]) -> String {
    items
        .iter()
        .map(|i| format!("{}\t{}\n", i.id, one_line(&i.title)))
        .collect()
}

/// Every unchecked step of `plan`, in file order, with what it waits for.
pub fn explain(plan: &Plan) -> Vec<StepWhy> {
    plan.steps
        .iter()
        .filter(|s| s.status != StepStatus::Checked)
        .map(|s| {
            let waits_for: Vec<StepRef> = s
                .deps
                .iter()
                .filter_map(|&d| plan.steps.get(d))
                .filter(|d| d.status != StepStatus::Checked)
                .map(|d| StepRef {
                    id: d.label.clone(),
                    title: d.title.clone(),
                })
                .collect();
            let standing = match s.status {
                StepStatus::Doing => Standing::Doing,
                _ if waits_for.is_empty() => Standing::Ready,
                _ => Standing::Waiting,
            };
            StepWhy {
                id: s.label.clone(),
                title: s.title.clone(),
                key: s.key.clone(),
                line: line(s.line),
                standing,
                waits_for,
            }
        })
        .collect()
}

/// The step `wanted` names: its id (`s3`, `t3`), its number (`3`, `q3`),
/// or else the first step whose title contains it (case-insensitive), as
/// `task_complete` finds a step.
pub fn find_step<'a>(plan: &'a Plan, wanted: &str) -> Option<&'a super::plan::Step> {
    let w = wanted.trim();
    let num = w
        .strip_prefix(['s', 't', 'q'])
        .unwrap_or(w)
        .parse::<usize>()
        .ok();
    if let Some(n) = num {
        if let Some(s) = plan.steps.iter().find(|s| s.num == n) {
            return Some(s);
        }
    }
    let lower = w.to_lowercase();
    plan.steps
        .iter()
        .find(|s| s.title.to_lowercase().contains(&lower))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::plan::markdown;

    const PLAN: &str = "# G\n\n- [x] Design (after: none)\n- [ ] Build API (after: 1)\n  REST, JSON.\n- [ ] Build UI (after: s1)\n- [ ] Ship\n";

    #[test]
    fn lines() {
        let p = markdown::parse(PLAN).unwrap();
        assert_eq!(
            ready_lines(&ready_steps(&p)),
            "s2\tBuild API\ns3\tBuild UI\n"
        );
        let none = markdown::parse("# G\n- [x] a\n").unwrap();
        assert_eq!(ready_lines(&ready_steps(&none)), "");
    }

    #[test]
    fn json_shape() {
        let p = markdown::parse(PLAN).unwrap();
        assert_eq!(
            serde_json::to_value(ready_steps(&p)).unwrap(),
            serde_json::json!([
                {"id": "s2", "title": "Build API", "description": "REST, JSON.", "deps": ["s1"], "line": 4},
                {"id": "s3", "title": "Build UI", "description": "", "deps": ["s1"], "line": 6},
            ])
        );
    }

    #[test]
    fn explain_says_what_each_unchecked_step_waits_for() {
        let p = markdown::parse(PLAN).unwrap();
        let why = explain(&p);
        let ids: Vec<&str> = why.iter().map(|w| w.id.as_str()).collect();
        assert_eq!(ids, ["s2", "s3", "s4"]);
        assert_eq!(why[0].standing, Standing::Ready);
        assert_eq!(why[2].standing, Standing::Waiting);
        assert_eq!(
            why[2].waits_for,
            [StepRef {
                id: "s3".into(),
                title: "Build UI".into()
            }]
        );
    }

    #[test]
    fn steps_are_found_by_id_number_or_title() {
        let p = markdown::parse(PLAN).unwrap();
        for wanted in ["s3", "3", "q3", "build ui", "Build UI"] {
            assert_eq!(find_step(&p, wanted).map(|s| s.num), Some(3), "{wanted}");
        }
        assert!(find_step(&p, "s9").is_none());
        assert!(find_step(&p, "deploy").is_none());
    }
}
