//! The `*.plan.json` parser: a structured plan whose phases run in order and
//! whose tasks within a phase run in parallel.
//!
//! Only what wakes agents is read (`title`, `session`, `phases[].tasks[]`);
//! `summary`, `findings`, `objectives` and any other fields are tolerated and
//! ignored, so the format can grow without breaking the daemon.

use std::collections::HashMap;

use serde::Deserialize;

use super::types::{Plan, PlanError, Step, StepStatus};

/// Dependency edges a plan.json may imply before it is refused. "Every task
/// of every earlier phase" grows quadratically (1000 one-task phases are half
/// a million edges), and a hostile or runaway file must not eat the daemon.
pub const MAX_EDGES: usize = 4_000_000;

#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    phases: Option<Vec<Phase>>,
}

#[derive(Deserialize)]
struct Phase {
    #[serde(default)]
    tasks: Option<Vec<Task>>,
}

#[derive(Deserialize)]
struct Task {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    status: Option<TaskStatus>,
    #[serde(default)]
    note: Option<String>,
}

/// An unknown status fails deserialisation, so serde_json reports it with
/// its line and the accepted values.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum TaskStatus {
    Todo,
    Doing,
    Done,
    Dropped,
}

/// Parses a plan.json document and validates its dependency graph.
pub fn parse(text: &str) -> Result<Plan, PlanError> {
    let doc: Doc = serde_json::from_str(text).map_err(json_error)?;
    // serde also fills a struct from an array; a top-level array is no plan.
    if let Some(first) = text.find(|c: char| !c.is_whitespace()) {
        if !text[first..].starts_with('{') {
            return Err(PlanError {
                line: text[..first].matches('\n').count() + 1,
                message: "invalid plan.json: the document must be a JSON object".into(),
            });
        }
    }

    let mut steps: Vec<Step> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut edges = 0usize;
    for phase in doc.phases.unwrap_or_default() {
        // Every task before this phase: the whole earlier prefix of `steps`.
        let earlier = steps.len();
        let tasks = phase.tasks.unwrap_or_default();
        edges = edges.saturating_add(earlier.saturating_mul(tasks.len()));
        if edges > MAX_EDGES {
            return Err(PlanError {
                line: 0,
                message: format!(
                    "plan.json is too large: its phases imply more than {MAX_EDGES} dependencies \
                     (merge small phases)"
                ),
            });
        }
        for task in tasks {
            let num = steps.len() + 1;
            let title = normalise(task.text.as_deref().unwrap_or(""));
            let count = seen.entry(title.clone()).or_insert(0);
            *count += 1;
            let key = if *count == 1 {
                title.clone()
            } else {
                format!("{title}#{count}")
            };
            let status = match task.status.unwrap_or(TaskStatus::Todo) {
                TaskStatus::Todo => StepStatus::Open,
                TaskStatus::Doing => StepStatus::Doing,
                TaskStatus::Done | TaskStatus::Dropped => StepStatus::Checked,
            };
            steps.push(Step {
                num,
                key,
                label: format!("t{num}"),
                title,
                written: None,
                description: task.note.unwrap_or_default().trim_end().to_string(),
                status,
                deps: (0..earlier).collect(),
                line: 0,
            });
        }
    }

    let plan = Plan {
        goal: doc.title.as_deref().map(normalise).unwrap_or_default(),
        session: doc
            .session
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty()),
        steps,
    };
    plan.validate()?;
    Ok(plan)
}

fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// serde_json's message without its own " at line L column C" suffix: the
/// line goes into `PlanError::line`, where the journal entry expects it.
fn json_error(e: serde_json::Error) -> PlanError {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full);
    PlanError {
        line: e.line(),
        message: format!("invalid plan.json: {message} (column {})", e.column()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use StepStatus::{Checked as C, Doing as D, Open as O};

    fn ok(text: &str) -> Plan {
        parse(text).unwrap_or_else(|e| panic!("{e}\n---\n{text}"))
    }

    fn ready(p: &Plan) -> Vec<&str> {
        p.ready()
            .iter()
            .map(|&i| p.steps[i].label.as_str())
            .collect()
    }

    /// Two phases of two tasks, with the given statuses, as an agent writes it.
    fn two_phases(s: [&str; 4]) -> String {
        format!(
            r#"{{
  "title": "Refactor  storage",
  "summary": "Move to sqlite.",
  "findings": ["slow writes"],
  "objectives": [{{"text": "fast", "status": "todo"}}],
  "phases": [
    {{"title": "Prepare", "status": "doing", "tasks": [
      {{"text": "Write schema", "status": "{}"}},
      {{"text": "Pick driver", "status": "{}", "note": "rusqlite?"}}
    ]}},
    {{"title": "Move", "status": "todo", "tasks": [
      {{"text": "Port reads", "status": "{}"}},
      {{"text": "Port writes", "status": "{}"}}
    ]}}
  ]
}}"#,
            s[0], s[1], s[2], s[3]
        )
    }

    #[test]
    fn shape_labels_and_fields() {
        let p = ok(&two_phases(["todo", "doing", "done", "dropped"]));
        assert_eq!(p.goal, "Refactor storage");
        assert_eq!(p.session, None);
        let got: Vec<(&str, &str, StepStatus, usize)> = p
            .steps
            .iter()
            .map(|s| (s.label.as_str(), s.title.as_str(), s.status, s.num))
            .collect();
        assert_eq!(
            got,
            [
                ("t1", "Write schema", O, 1),
                ("t2", "Pick driver", D, 2),
                ("t3", "Port reads", C, 3),
                ("t4", "Port writes", C, 4)
            ]
        );
        assert_eq!(p.steps[1].description, "rusqlite?");
        assert_eq!(p.steps[0].description, "");
        let deps: Vec<&[usize]> = p.steps.iter().map(|s| s.deps.as_slice()).collect();
        assert_eq!(deps, [&[][..], &[], &[0, 1], &[0, 1]]);
    }

    #[test]
    fn readiness_by_phase() {
        let cases: [([&str; 4], &[&str]); 7] = [
            (["todo", "todo", "todo", "todo"], &["t1", "t2"]),
            (["done", "todo", "todo", "todo"], &["t2"]),
            (["done", "doing", "todo", "todo"], &[]),
            (["done", "done", "todo", "todo"], &["t3", "t4"]),
            (["dropped", "done", "todo", "doing"], &["t3"]),
            (["todo", "done", "todo", "todo"], &["t1"]),
            (["done", "dropped", "done", "done"], &[]),
        ];
        for (statuses, want) in cases {
            let p = ok(&two_phases(statuses));
            assert_eq!(ready(&p), want, "{statuses:?}");
        }
        assert!(ok(&two_phases(["done", "dropped", "done", "done"])).all_checked());
    }

    #[test]
    fn third_phase_waits_for_every_earlier_phase() {
        let text = r#"{"phases": [
            {"tasks": [{"text": "a", "status": "todo"}]},
            {"tasks": [{"text": "b", "status": "done"}]},
            {"tasks": [{"text": "c"}]}
        ]}"#;
        let p = ok(text);
        assert_eq!(p.steps[2].deps, [0, 1]);
        assert_eq!(
            ready(&p),
            ["t1"],
            "b being done does not free c while a is open"
        );
    }

    #[test]
    fn defaults_and_tolerance() {
        let p = ok(r#"{"session": " sess-1 ", "extra": {"x": 1},
            "phases": [{"tasks": [{"text": "  Do   it "}, {"text": "Do it", "status": null}, {}]}, {}, {"tasks": null}]}"#);
        assert_eq!(p.session.as_deref(), Some("sess-1"));
        assert_eq!(p.goal, "");
        let keys: Vec<&str> = p.steps.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["Do it", "Do it#2", ""]);
        assert!(p.steps.iter().all(|s| s.status == O));
        assert_eq!(ready(&p).len(), 3);
        assert!(ok("{}").steps.is_empty());
        assert!(!ok("{}").all_checked());
        assert_eq!(ok(r#"{"session": ""}"#).session, None);
    }

    #[test]
    fn unknown_status_is_an_error_naming_it() {
        let text = "{\"phases\": [{\"tasks\": [\n  {\"text\": \"a\"},\n  {\"text\": \"b\", \"status\": \"blocked\"}\n]}]}";
        let e = parse(text).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("blocked"), "{}", e.message);
        assert!(e.message.contains("dropped"), "{}", e.message);
        assert!(!e.message.contains(" at line "), "{}", e.message);
    }

    #[test]
    fn bad_json_reports_serde_line() {
        let cases = [
            ("{\n  \"title\": \"x\",\n  \"phases\": [\n}\n", 4),
            ("{\"title\": 3}", 1),
            ("[]", 1),
            ("", 1),
            ("{\n\"phases\": [{\"tasks\": [{\"text\": \"a\"}]}]\n", 3),
        ];
        for (text, line) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {}", e.message);
            assert!(
                e.message.starts_with("invalid plan.json: "),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn too_many_implied_edges_is_refused() {
        // 3000 one-task phases imply ~4.5 million dependencies.
        let phases = vec![r#"{"tasks":[{}]}"#; 3000].join(",");
        let e = parse(&format!(r#"{{"phases":[{phases}]}}"#)).unwrap_err();
        assert!(e.message.contains("too large"), "{}", e.message);
        let phases = vec![r#"{"tasks":[{}]}"#; 1000].join(",");
        assert_eq!(ok(&format!(r#"{{"phases":[{phases}]}}"#)).steps.len(), 1000);
    }
}
