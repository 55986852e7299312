//! The agent's program stopped (kill -9, as a crash or a closed terminal)
//! and started again with `claude --resume <id>` mid-plan: the prompt that
//! was waiting in its inbox went with the program and is delivered again,
//! once, when it is back; a step announced while it was down waits in
//! reveille's outbox and is delivered once too. `status` and the journal
//! say why meanwhile.

use super::rig::{ready, Rig};
use crate::util::plans::Step;

const TITLES: [&str; 3] = [
    "Resume one e2e-r1",
    "Resume two e2e-r2",
    "Resume meanwhile e2e-r3",
];

#[test]
fn a_claude_stopped_and_resumed_mid_plan_gets_each_step_once_when_it_is_back() {
    let Some(mut rig) = Rig::start(|_| {}) else {
        return;
    };
    let session = rig.session();
    // A prompt in the inbox, behind a person's long turn, when the program dies.
    rig.claude.type_prompt("long turn before the crash delay=3");
    rig.wait_model("long turn before the crash");
    rig.wait_state(Some("busy"));
    let steps = [Step::new(TITLES[0]), Step::new(TITLES[1])];
    let (plan, _) = rig.plan(
        "20260101T000000_0d0d0d0d--resume__todo.md",
        "Resume",
        &steps,
    );
    rig.wait_log(&[&format!("s1 waits in the inbox of {session}")]);
    rig.claude.kill();
    rig.wait_log(&[&format!("session {session} went away with s1 in its inbox")]);
    // A step announced while it is down.
    let meanwhile = [Step::new(TITLES[2])];
    let name = "20260101T000001_0d0d0d0e--meanwhile__todo.md";
    let (other, _) = rig.plan(name, "Meanwhile", &meanwhile);
    rig.wait_log(&["announced s1", "0d0d0d0e"]);
    let down = rig.wait_status("the session down, its prompts kept", |s| {
        s["state"].is_null() && s["pending"].as_array().is_some_and(|p| p.len() == 2)
    });
    let refused = rig.wait_log(&["cannot deliver to session", &session, "is not running"]);
    assert!(refused.contains("claude --resume"), "{refused}");
    println!("claude e2e resume, while down: {refused}\nstatus: {down:#}");
    assert!(TITLES.iter().all(|t| rig.turns(&ready(t)) == 0));
    rig.reg = rig.claude.resume(&rig.reg.session_id.clone());
    for (path, t) in [(&plan, TITLES[0]), (&other, TITLES[2]), (&plan, TITLES[1])] {
        rig.wait_ticked(path, t);
    }
    rig.idle();
    rig.assert_once(&TITLES.map(ready));
    let order: Vec<u64> = TITLES.iter().map(|t| rig.wait_model(&ready(t)).n).collect();
    assert!(
        order[0] < order[2] && order[2] < order[1],
        "in announcement order: {order:?}"
    );
    rig.wait_status("the session back and idle", |s| {
        s["state"] == "idle" && s["pending"].as_array().is_some_and(|p| p.is_empty())
    });
}
