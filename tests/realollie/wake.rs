//! A wake-up reaches a real agent: idle, it starts a turn at once; busy
//! with a person's turn, the step runs as its own turn right after it.

use super::{sequential, ticked, Rig, AGENT, T, TICKING, WAKE};
use crate::util::daemon::Daemon;
use crate::util::realollie::Options;
use crate::util::wait_until;

#[test]
fn a_new_plan_wakes_an_idle_agent_within_250_ms_and_it_ticks_the_step() {
    let Some(rig) = Rig::new(Options::default(), TICKING) else {
        return;
    };
    let daemon = Daemon::start(&rig.project);
    let (plan, written) = rig.plan("wake me", &sequential(&["Wake step"]));
    let turn = rig.ollie.wait_turn("Wake step", T);
    let latency = turn.started - written;
    eprintln!(
        "idle wake: the model request came {:.0} ms after the plan write",
        latency * 1e3
    );
    assert!(
        latency < WAKE,
        "the turn started {latency:.3} s after the plan was written\n{}\n{}",
        rig.ollie.describe(),
        daemon.log()
    );
    wait_until("the agent to tick its step", T, || {
        ticked(&plan, "Wake step").then_some(())
    });
    let turns = rig.ollie.wait_quiet(T);
    assert_eq!(turns.len(), 1, "one turn, for the one step: {turns:?}");
}

#[test]
fn a_step_ready_during_a_persons_long_turn_runs_as_its_own_turn_right_after_it() {
    let Some(rig) = Rig::new(Options::default(), TICKING) else {
        return;
    };
    let daemon = Daemon::start(&rig.project);
    rig.ollie.submit(AGENT, "a person's long question delay=2");
    let person = rig.ollie.wait_turn("long question", T);
    daemon.wait_log(&format!("session {AGENT}: idle → thinking"), T);
    let (plan, written) = rig.plan("while busy", &sequential(&["Busy step"]));
    daemon.wait_log("queued s1 behind the running turn", T);
    let step = rig.ollie.wait_turn("Busy step", T);
    let turns = rig.ollie.wait_quiet(T);
    let person = turns.iter().find(|t| t.started == person.started).unwrap();
    let person_end = person.ended.expect("the person's turn ended");
    assert!(
        written < person_end,
        "the plan was written after the person's turn: the test proves nothing"
    );
    assert!(
        person
            .requests
            .iter()
            .all(|r| !r.last_user.contains("Busy step")),
        "the step was folded into the person's turn: {person:?}"
    );
    let gap = step.started - person_end;
    eprintln!(
        "busy wake: the step's turn started {:.0} ms after the person's ended",
        gap * 1e3
    );
    assert!(
        // Both ends are the fake model's millisecond stamps, logged from
        // two threads: the next request's start can be stamped a hair
        // before the last one's end.
        (-0.05..WAKE).contains(&gap),
        "the step's turn started {gap:.3} s after the person's turn ended\n{}\n{}",
        rig.ollie.describe(),
        daemon.log()
    );
    assert!(ticked(&plan, "Busy step"));
    assert_eq!(
        turns.len(),
        2,
        "the person's turn and the step's: {turns:?}"
    );
}
