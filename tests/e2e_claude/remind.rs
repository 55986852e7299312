//! An idle agent that left its step open is reminded, and the reminder
//! reaches the model: a prompt the fake model answers without ticking (a
//! template without the close instruction), then, once the session has
//! been idle for `sessions.remind_after_ms`, the default reminder — whose
//! close instruction the agent follows.

use std::time::Duration;

use super::rig::{ms, ready, toml, Rig};
use crate::util::plans::Step;

const TITLE: &str = "Left open e2e-m1";

#[test]
fn an_idle_claude_that_left_its_step_open_is_reminded_and_the_reminder_reaches_the_model() {
    let Some(rig) = Rig::start(|p| {
        p.set("sessions", "remind_after_ms", "1000");
        // No close instruction: the fake model answers it in words only.
        let template = "[reveille] Step {id} of \"{goal}\" is ready: {title}\nPlan file: {path}\n";
        p.set("prompt", "template", &toml(template));
    }) else {
        return;
    };
    let name = "20260101T000000_0e0e0e0e--remind__todo.md";
    let (path, _) = rig.plan(name, "Remind", &[Step::new(TITLE)]);
    rig.wait_model(&ready(TITLE));
    let reminder = format!("Reminder 1 of 3: s1 is still open: {TITLE}");
    let reminded = rig.wait_model(&reminder);
    rig.wait_ticked(&path, TITLE);
    rig.idle();
    // Read again now: the record taken as the turn began may be from
    // before its answer was written.
    let first = rig.wait_model(&ready(TITLE));
    let first_done = first.done.expect("the first turn's answer was written");
    println!(
        "claude e2e remind: the reminder asked the model {} after the step's own turn answered (remind_after_ms 1000)",
        ms(reminded.at - first_done)
    );
    assert!(
        reminded.at - first_done >= Duration::from_secs(1),
        "reminded before the session was idle for remind_after_ms"
    );
    println!(
        "what the model received for the reminder:\n{}",
        reminded.last_user
    );
    rig.assert_once(&[ready(TITLE), reminder]);
    let said = rig.wait_log(&[
        "reminded session",
        &rig.session(),
        "of s1 (reminder 1 of 3)",
    ]);
    assert!(said.contains("still open"), "{said}");
    assert_eq!(rig.daemon().log_count("reminded session"), 1);
}
