//! A step that becomes ready while a person's long turn runs (typed into
//! the TUI) waits in Claude Code's inbox and runs as a turn of its own
//! after it — never merged into the person's turn; `status` and the
//! journal say where it is meanwhile.

use super::rig::{ms, ready, Rig};
use crate::util::plans::Step;

#[test]
fn a_step_ready_during_a_persons_long_turn_runs_as_its_own_turn_after_it() {
    let Some(rig) = Rig::start(|_| {}) else {
        return;
    };
    let person = "person's long question delay=3";
    rig.claude.type_prompt(person);
    let long = rig.wait_model("person's long question");
    rig.wait_state(Some("busy"));
    let title = "Review the docs e2e-b1";
    let name = "20260101T000000_0b0b0b0b--docs__todo.md";
    let (path, _) = rig.plan(name, "Docs", &[Step::new(title)]);
    // Meanwhile: in the inbox, behind the person's turn.
    let session = rig.session();
    rig.wait_status("s1 in the inbox of a busy session", |s| {
        s["state"] == "busy"
            && s["last_delivery"]["step"] == "s1"
            && s["last_delivery"]["outcome"] == "in_inbox"
    });
    let waits = format!("s1 waits in the inbox of {session} for its running turn to end (busy)");
    rig.wait_log(&[&waits]);
    assert!(
        rig.model.turns_on(&ready(title)).is_empty(),
        "the step reached the model during the person's turn"
    );
    let ours = rig.wait_model(&ready(title));
    rig.wait_ticked(&path, title);
    rig.idle();
    let requests = rig.model.requests();
    let long_done = requests
        .iter()
        .filter(|r| r.last_user.contains("person's long question"))
        .filter_map(|r| r.done)
        .max()
        .expect("the long turn's answer was written");
    println!(
        "claude e2e busy: the step's own turn asked the model {} after the person's turn's answer was written",
        ms(ours.at - long_done)
    );
    assert!(long.n < ours.n);
    assert!(
        ours.at >= long_done,
        "the step's turn began before the person's turn ended"
    );
    for r in &requests {
        let both = r.last_user.contains(title) && r.last_user.contains("person's long");
        assert!(!both, "merged into the person's turn: {r:?}");
    }
    rig.assert_once(&[ready(title), "person's long question".into()]);
    in_transcript_after_the_answer(&rig, title);
    rig.wait_status("s1's turn started", |s| {
        s["last_delivery"]["outcome"] == "turn_started"
    });
    rig.wait_log(&[&format!("turn started on s1 in session {session}")]);
}

/// The session's own record: the person's answer, then the step's prompt.
fn in_transcript_after_the_answer(rig: &Rig, title: &str) {
    let t = rig.claude.transcript(&rig.reg.session_id);
    let has = |e: &serde_json::Value, kind: &str, text: &str| {
        e["type"] == kind && e["message"]["content"].to_string().contains(text)
    };
    let answer = t.iter().position(|e| has(e, "assistant", "person's long"));
    let prompt = t.iter().position(|e| has(e, "user", title));
    assert!(
        answer.unwrap() < prompt.unwrap(),
        "the step's prompt before the person's answer in the transcript"
    );
}
