//! Reminders reach a real agent that ended its turn with its step still
//! open: it is asked again once it has been idle for `remind_after_ms`,
//! and the reminder is a turn of its own that the agent acts on.

use super::{sequential, ticked, toml, Rig, IDLE, T};
use crate::util::daemon::Daemon;
use crate::util::realollie::Options;
use crate::util::wait_until;

/// The idle time before a reminder (the smallest reveille accepts).
const AFTER: f64 = 1.0;
/// How late a reminder may be: one state poll to see the agent idle, and
/// a loaded machine.
const SLACK: f64 = 1.0;

#[test]
fn an_idle_agent_that_left_its_step_open_is_reminded_and_acts_on_it() {
    let Some(mut rig) = Rig::new(Options::default(), IDLE) else {
        return;
    };
    rig.project.set("sessions", "state_poll_ms", "100");
    rig.project.set(
        "sessions",
        "remind_after_ms",
        &((AFTER * 1e3) as u64).to_string(),
    );
    rig.project.set("sessions", "remind_max", "2");
    let reminder = "[reveille] Reminder {n} of {max}: {id} {title}\nTICK {path} :: {title}\n";
    rig.project
        .set("prompt", "remind_template", &toml(reminder));
    let daemon = Daemon::start(&rig.project);
    let (plan, _) = rig.plan("remind me", &sequential(&["Left open"]));
    rig.ollie.wait_turn("s1 Left open", T);
    let reminded = rig.ollie.wait_turn("Reminder 1 of 2", T);
    let first = rig.ollie.turns_with("s1 Left open").remove(0);
    let idle_for = reminded.started - first.ended.expect("the first turn ended before");
    eprintln!("reminder: its turn started {idle_for:.2} s after the agent went idle");
    assert!(
        (AFTER..AFTER + SLACK).contains(&idle_for),
        "reminded after {idle_for:.3} s idle (remind_after {AFTER} s)\n{}\n{}",
        rig.ollie.describe(),
        daemon.log()
    );
    wait_until("the agent to tick the step on the reminder", T, || {
        ticked(&plan, "Left open").then_some(())
    });
    let turns = rig.ollie.wait_quiet(T);
    assert_eq!(
        turns.len(),
        2,
        "the step's turn and one reminder: {turns:?}"
    );
    assert_eq!(
        daemon.log_count("reminded session agent of s1"),
        1,
        "{}",
        daemon.log()
    );
}
