//! The texts of a plan's prompts: a step's (from the template), the queue
//! fallback's `qN` form, how a step is closed, the all-done file name.

use std::path::Path;

use crate::core::close::Close;
use crate::core::plan::Plan;
use crate::core::prompt;
use crate::core::source::Source;

pub(super) fn display_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// `x__wip.md` → `x__done.md`.
pub(super) fn done_name(file: &str) -> String {
    for state in ["__todo.md", "__wip.md"] {
        if let Some(head) = file.strip_suffix(state) {
            return format!("{head}__done.md");
        }
    }
    file.to_string()
}

pub(super) fn dep_labels(plan: &Plan, i: usize, prefix: Option<&str>) -> Vec<String> {
    plan.steps[i]
        .deps
        .iter()
        .map(|&d| match prefix {
            Some(p) => format!("{p}{}", plan.steps[d].num),
            None => plan.steps[d].label.clone(),
        })
        .collect()
}

pub(super) fn render_step(
    template: &str,
    plan: &Plan,
    i: usize,
    file: &str,
    path: &Path,
    source: &Source,
    session: &str,
) -> String {
    let step = &plan.steps[i];
    let deps = dep_labels(plan, i, None);
    let deps = if deps.is_empty() {
        "none".to_string()
    } else {
        deps.join(", ")
    };
    let close = closing(source, step.as_written(), path).to_string();
    prompt::render(
        template,
        &[
            ("goal", &plan.goal),
            ("id", &step.label),
            ("title", &step.title),
            ("description", &step.description),
            ("deps", &deps),
            ("file", file),
            ("path", &path.display().to_string()),
            ("plan", &source.to_string()),
            ("session", session),
            ("close", &close),
        ],
    )
}

/// How the step titled `title` of the plan `source` at `path` is closed.
pub(super) fn closing<'a>(source: &Source, title: &'a str, path: &'a Path) -> Close<'a> {
    match source {
        Source::SessionPlan(_) => Close::Checklist { title },
        Source::PlanJson(_) => Close::PlanJson { text: title, path },
        _ => Close::PlanFile { title, path },
    }
}

/// The queue fallback's format: `qN: title (after: qA, qB)`, description
/// lines under it, the goal before the first step of a plan.
pub(super) fn render_queue(plan: &Plan, i: usize, file: &str, with_goal: bool) -> String {
    let step = &plan.steps[i];
    let mut out = String::new();
    if with_goal {
        out.push_str(&format!("Goal: {}\nPlan file: {file}\n\n", plan.goal));
    }
    out.push_str(&format!("q{}: {}", step.num, step.title));
    let deps = dep_labels(plan, i, Some("q"));
    if !deps.is_empty() {
        out.push_str(&format!(" (after: {})", deps.join(", ")));
    }
    out.push('\n');
    for line in step.description.lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    out
}
