//! Fan-out through the real program (`[fanout] max_children = 1`): of two
//! parallel steps, one goes to the parent thread and the other to a child
//! thread reveille creates (`thread/start` in the parent's directory,
//! named by the engine's id for it, `codex:<parent>.s2-<hash>`); each runs
//! once, the child ticks its step, the parent is told, and the child is
//! archived once idle.

use serde_json::json;

use super::rig::{step_line, Rig, TURN};
use crate::util::plans::Step;
use crate::util::wait_until;

const GOAL: &str = "Document the API";
const DOCS: &str = "Write the docs";
const TESTS: &str = "Write the tests";

#[test]
fn a_parallel_step_runs_once_in_a_child_thread_which_is_archived_when_done() {
    let Some(rig) = Rig::start(|p| p.set("fanout", "max_children", "1")) else {
        return;
    };
    let parent = rig.session.clone();
    let plan = rig.plan(
        GOAL,
        // Roots by a description line: the fake model ticks only a line
        // that is exactly `- [ ] <title>`, which `(after: none)` is not.
        &[
            Step::new(DOCS).desc("after: none"),
            Step::new(TESTS).desc("after: none"),
        ],
    );
    let created = rig.wait_log("creating child session codex:");
    let child = created
        .split("creating child session ")
        .nth(1)
        .and_then(|rest| rest.split(" for s2").next())
        .expect("the child's id")
        .to_string();
    let name = child.strip_prefix("codex:").expect("a codex: child");
    assert!(
        name.starts_with(&format!("{}.s2-", rig.codex.thread)),
        "{child}"
    );
    rig.wait_log(&format!("child session {child} exists, working on s2"));

    let to_parent = step_line("s1", GOAL, DOCS);
    let to_child = format!(
        "sub-agent of session {parent}, created for exactly one step of \"{GOAL}\": s2: {TESTS}"
    );
    rig.wait_turn(&to_parent);
    rig.wait_turn(&to_child);
    rig.wait_ticked(&plan, DOCS);
    rig.wait_ticked(&plan, TESTS);
    let told = format!("s2 was completed by child {child}: {TESTS}");
    rig.wait_turn(&told);
    rig.wait_log(&format!(
        "killing child session {child}: s2 is checked and it is idle"
    ));

    let mut c = rig.codex.client().expect("the codex daemon serves");
    let archived = wait_until("the child thread archived", TURN, || {
        let list = c.call("thread/list", json!({ "archived": true })).ok()?;
        list["data"]
            .as_array()?
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
    });
    assert_eq!(
        archived["cwd"].as_str(),
        Some(rig.codex.cwd.display().to_string().as_str()),
        "the child works in its parent's directory: {archived:#}"
    );
    for needle in [&to_parent, &to_child, &told] {
        assert_eq!(
            rig.turns(needle).len(),
            1,
            "{needle}: {:#?}",
            rig.model.requests()
        );
    }
    assert!(
        rig.turns(&step_line("s2", GOAL, TESTS)).is_empty(),
        "s2 went to the parent too"
    );
    let in_parent: Vec<String> = rig
        .codex
        .user_messages()
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert!(
        in_parent.iter().any(|t| t.contains(&told)),
        "{in_parent:#?}"
    );
    assert!(
        !in_parent.iter().any(|t| t.contains(&to_child)),
        "the child's prompt in the parent: {in_parent:#?}"
    );
}
