//! Fan-out on a Claude Code session (`[fanout] max_children = 1`): reveille
//! cannot create Claude Code sessions, so the parallel step meant for a
//! child goes to the parent after the refused create — nothing lost, each
//! step once, the journal says why, and a restart of reveille finds
//! nothing left for the child that never was.

use super::rig::{ready, Rig};
use crate::util::plans::Step;

const TITLES: [&str; 2] = ["Fan one e2e-f1", "Fan two e2e-f2"];

#[test]
fn a_parallel_step_meant_for_a_child_goes_to_the_claude_parent_and_nothing_is_lost() {
    let Some(mut rig) = Rig::start(|p| p.set("fanout", "max_children", "1")) else {
        return;
    };
    // Both roots; the annotation on a line of its own (see
    // doc/agents/claude.md: the close instruction quotes the title only).
    let steps = TITLES.map(|t| Step::new(t).desc("after: none"));
    let name = "20260101T000000_0f0f0f0f--fan__todo.md";
    let (path, _) = rig.plan(name, "Fan", &steps);
    let session = rig.session();
    let why = rig.wait_log(&["could not be created", "cannot create Claude Code sessions"]);
    assert!(why.contains(&format!("s2 goes back to {session}")), "{why}");
    println!("claude e2e fan-out: {why}");
    // Killed at once: what the journal replays is what the daemon knew —
    // nothing for the child that never was.
    rig.kill_daemon();
    rig.start_daemon();
    let status = rig.project.status_json();
    let outbox = status["outbox"].as_object().cloned().unwrap_or_default();
    assert!(outbox.keys().all(|s| *s == session), "{status:#}");
    for t in TITLES {
        rig.wait_ticked(&path, t);
    }
    rig.idle();
    rig.assert_once(&TITLES.map(ready));
    let order: Vec<u64> = TITLES.iter().map(|t| rig.wait_model(&ready(t)).n).collect();
    assert!(order[0] < order[1], "in file order: {order:?}");
    let logs = rig.all_logs();
    assert!(logs.contains(&format!("announced s2 to session {session}")));
    assert!(!logs.contains("cannot deliver"), "{logs}");
}
