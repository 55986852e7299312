//! A step that becomes ready while a person's long turn runs (typed into
//! the TUI) runs as its own turn after it: queued in the thread's own
//! queue, never steered into the running turn — no model request carries
//! both texts, the step's request comes after the long turn's answer was
//! written, and `status` shows the session busy with the step accepted.

use super::rig::{ms, step_line, Rig};
use crate::util::plans::Step;
use crate::util::wait_until;

use super::rig::TURN;

const GOAL: &str = "Review the parser";
const TITLE: &str = "Read the diff";

#[test]
fn a_step_ready_during_a_persons_long_turn_runs_as_its_own_turn_after_it() {
    let Some(rig) = Rig::start(|_| {}) else {
        return;
    };
    let long = "a person's long turn delay=3";
    rig.codex.type_prompt(long);
    let long_request = wait_until("the long turn's request", TURN, || {
        rig.turns(long).into_iter().next()
    });
    let plan = rig.plan(GOAL, &[Step::new(TITLE)]);
    rig.wait_log(&format!(
        "queued s1 behind the running turn of {}",
        rig.session
    ));
    let long_now = |rig: &Rig| rig.model.requests()[long_request.n as usize - 1].clone();
    assert!(
        long_now(&rig).done.is_none(),
        "the long turn was still answering when the step was delivered"
    );
    let busy = rig.wait_status("status: busy, s1 accepted", |s| {
        s["state"] == "active" && s["last_delivery"]["step"] == "s1"
    });
    assert_eq!(busy["kind"], "codex", "{busy:#}");
    assert_eq!(busy["last_delivery"]["outcome"], "accepted", "{busy:#}");

    let line = step_line("s1", GOAL, TITLE);
    let ours = rig.wait_turn(&line);
    let long_done = long_now(&rig).done.expect("the long turn was answered");
    assert!(
        ours.at >= long_done,
        "the step's request came before the long turn's answer was written"
    );
    println!(
        "codex e2e, busy: the long turn's answer written → the step's model request {}",
        ms(ours.at - long_done)
    );
    for r in rig.model.requests() {
        assert!(
            !(r.last_user.contains(long) && r.last_user.contains(&line)),
            "merged into one turn: {r:#?}"
        );
    }
    assert_eq!(rig.turns(&line).len(), 1, "{:#?}", rig.model.requests());
    assert_eq!(rig.turns(long).len(), 1, "{:#?}", rig.model.requests());
    rig.wait_ticked(&plan, TITLE);
    rig.wait_log(&format!("turn started on s1 in session {}", rig.session));
    let held = rig.codex.user_messages();
    let at = |want: &str| held.iter().position(|(t, _)| t.contains(want));
    assert!(at(long) < at(&line), "the thread's own order: {held:#?}");
}
