//! The offline answer to `reveille ready FILE`: a plan's ready steps as text
//! lines for people and shell pipelines, or as JSON for programs.

use serde_json::{json, Value};

use super::plan::Plan;

/// One line per ready step, in file order: `{label}\t{title}\n`.
/// Titles are normalised by the parsers, so they hold no tab or newline.
pub fn ready_lines(plan: &Plan) -> String {
    plan.ready()
        .into_iter()
        .map(|i| &plan.steps[i])
        .map(|s| format!("{}\t{}\n", s.label, s.title))
        .collect()
}

/// The ready steps as a JSON array of `{id, num, title, description, deps}`,
/// `deps` being the labels of the steps each one waited for.
pub fn ready_json(plan: &Plan) -> Value {
    let label = |d: usize| plan.steps.get(d).map(|s| s.label.clone());
    Value::Array(
        plan.ready()
            .into_iter()
            .map(|i| &plan.steps[i])
            .map(|s| {
                let deps: Vec<String> = s.deps.iter().filter_map(|&d| label(d)).collect();
                json!({
                    "id": s.label,
                    "num": s.num,
                    "title": s.title,
                    "description": s.description,
                    "deps": deps,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::plan::markdown;

    const PLAN: &str = "# G\n\n- [x] Design (after: none)\n- [ ] Build API (after: 1)\n  REST, JSON.\n- [ ] Build UI (after: s1)\n- [ ] Ship\n";

    #[test]
    fn lines() {
        let p = markdown::parse(PLAN).unwrap();
        assert_eq!(ready_lines(&p), "s2\tBuild API\ns3\tBuild UI\n");
        let none = markdown::parse("# G\n- [x] a\n").unwrap();
        assert_eq!(ready_lines(&none), "");
    }

    #[test]
    fn json_shape() {
        let p = markdown::parse(PLAN).unwrap();
        assert_eq!(
            ready_json(&p),
            json!([
                {"id": "s2", "num": 2, "title": "Build API", "description": "REST, JSON.", "deps": ["s1"]},
                {"id": "s3", "num": 3, "title": "Build UI", "description": "", "deps": ["s1"]},
            ])
        );
    }
}
