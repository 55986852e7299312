//! A plan runs to its end with nobody but reveille and the agent: the plan
//! is written, reveille wakes the agent, the agent ticks its step through
//! its own tool, the next step is ready, reveille wakes it again.

use super::{sequential, ticked, Rig, T, TICKING, WAKE};
use crate::util::daemon::Daemon;
use crate::util::realollie::{Options, Turn};
use crate::util::wait_until;

const TITLES: [&str; 3] = ["Lay out", "Build up", "Finish off"];

/// Runs the three-step plan to its end; returns the turns and the daemon's
/// log, with each step's turn checked to be its own, once, in order.
fn run_plan(rig: &Rig) -> (Vec<Turn>, String) {
    let daemon = Daemon::start(&rig.project);
    let (plan, written) = rig.plan("three steps", &sequential(&TITLES));
    wait_until("every step ticked by the agent", T, || {
        TITLES.iter().all(|t| ticked(&plan, t)).then_some(())
    });
    let turns = rig.ollie.wait_quiet(T);
    let steps: Vec<String> = turns
        .iter()
        .flat_map(|t| t.ticks().iter().map(|(_, title)| title.clone()))
        .collect();
    assert_eq!(
        steps,
        TITLES,
        "each step exactly once, in order\n{}\n{}",
        rig.ollie.describe(),
        daemon.log()
    );
    assert_eq!(turns.len(), TITLES.len(), "no other turn: {turns:?}");
    let took = turns.last().unwrap().ended.unwrap() - written;
    eprintln!(
        "three steps: done {took:.2} s after the plan was written; waits before each next step: {:?} ms",
        waits(&turns).iter().map(|w| (w * 1e3).round()).collect::<Vec<_>>()
    );
    (turns, daemon.log())
}

/// How long each turn waited after the one before ended.
fn waits(turns: &[Turn]) -> Vec<f64> {
    turns
        .windows(2)
        .map(|p| p[1].started - p[0].ended.unwrap())
        .collect()
}

#[test]
fn a_three_step_plan_runs_to_its_end_with_the_agent_ticking_each_step_once() {
    let Some(rig) = Rig::new(Options::default(), TICKING) else {
        return;
    };
    let (turns, _) = run_plan(&rig);
    for wait in waits(&turns) {
        assert!(wait >= -0.05, "turns overlap: {turns:?}");
    }
}

#[test]
fn each_step_of_a_plan_starts_right_after_the_turn_that_ticked_the_one_before() {
    let Some(rig) = Rig::new(Options::default(), TICKING) else {
        return;
    };
    let (turns, log) = run_plan(&rig);
    // Each step is ticked inside the turn before it (the agent's tool
    // call), so it is ready while the agent is busy and runs after that
    // turn — right after.
    for wait in waits(&turns) {
        assert!(
            wait < WAKE,
            "a step waited {wait:.3} s after the turn that made it ready\n{}\n{log}",
            rig.ollie.describe()
        );
    }
}
