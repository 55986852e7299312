//! STUB (replaced by the plan branch).
use super::plan::{Plan, PlanError, Step, StepStatus};
pub fn parse(text: &str) -> Result<Plan, PlanError> {
    let mut goal = String::new(); let mut steps: Vec<Step> = Vec::new(); let mut session = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(g) = line.strip_prefix("# ") { if goal.is_empty() { goal = g.trim().into(); } continue; }
        if let Some(s) = line.trim().strip_prefix("<!-- session:") { session = Some(s.trim_end_matches("-->").trim().to_string()); continue; }
        let (status, title) = if let Some(t) = line.strip_prefix("- [ ] ") { (StepStatus::Open, t) } else if let Some(t) = line.strip_prefix("- [x] ") { (StepStatus::Checked, t) } else {
            if let Some(d) = line.strip_prefix("  ") { if let Some(s) = steps.last_mut() { if !s.description.is_empty() { s.description.push('\n'); } s.description.push_str(d); } }
            continue };
        let n = steps.len() + 1;
        let deps = if n > 1 { vec![n - 2] } else { vec![] };
        steps.push(Step { num: n, key: title.trim().into(), label: format!("s{n}"), title: title.trim().into(), description: String::new(), status, deps, line: i + 1 });
    }
    Ok(Plan { goal, session, steps })
}
