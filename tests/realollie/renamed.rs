//! Sessions are alive: renamed (`ctl rn`, when idle) or killed, a real
//! agent's prompts wait in reveille's outbox (shown by `reveille status`),
//! are delivered once it is back, and are withdrawn if they went stale
//! meanwhile.
//!
//! For about a second after a kill or a rename the kernel's entry cache
//! still shows `s/<old id>/prompt`, and opening it succeeds: after a kill
//! the write is lost (the session is not found at clunk, and nobody is
//! told); after a rename it reaches the renamed session (ollie-9p rewrites
//! the old path's fids to the new id, server.go `OnRename`). Half of these
//! tests write the plan inside that second, half after it.

use super::{sequential, Rig, AGENT, IDLE, T};
use crate::util::daemon::Daemon;
use crate::util::plans::task_complete;
use crate::util::realollie::Options;
use crate::util::wait_until;

/// A rig whose daemon follows the session states every 100 ms.
fn rig() -> Option<Rig> {
    let mut rig = Rig::new(Options::default(), IDLE)?;
    rig.project.set("sessions", "state_poll_ms", "100");
    Some(rig)
}

/// Waits until `reveille status --json` shows `steps` pending for `AGENT`.
fn wait_pending(rig: &Rig, steps: &[&str]) {
    let what = format!("{steps:?} pending for {AGENT} in reveille status");
    wait_until(&what, T, || {
        (rig.project.pending(AGENT) == steps).then_some(())
    });
}

/// Waits until the kernel no longer shows `s/<id>` (its entry cache let
/// go): from then on an open below it fails. A stat of the directory
/// itself has no side effect upstream (only `fifo.out`'s do).
fn wait_forgotten(rig: &Rig, id: &str) {
    let dir = rig.ollie.session_dir(id);
    wait_until(&format!("{} to vanish", dir.display()), T, || {
        (!dir.exists()).then_some(())
    });
}

/// Renames the idle agent away, writes a plan (after the kernel forgot the
/// old name, if `settled`), and checks the prompt waits in the outbox and
/// reaches the agent, once, when it is renamed back.
fn renamed(settled: bool) {
    let Some(rig) = rig() else {
        return;
    };
    let daemon = Daemon::start(&rig.project);
    daemon.wait_log(&format!("session {AGENT} appeared"), T);
    assert!(rig.ollie.rename(AGENT, "away"), "ctl rn on an idle session");
    daemon.wait_log(&format!("session {AGENT} is gone"), T);
    if settled {
        wait_forgotten(&rig, AGENT);
    }
    rig.plan("while away", &sequential(&["Renamed step"]));
    wait_pending(&rig, &["s1"]);
    let early = rig.ollie.turns();
    assert!(
        early.is_empty(),
        "delivered while away: {early:?}\n{}",
        daemon.log()
    );
    assert!(rig.ollie.rename("away", AGENT), "ctl rn back");
    rig.ollie.wait_turn("s1 Renamed step", T);
    wait_pending(&rig, &[]);
    let turns = rig.ollie.wait_quiet(T);
    assert_eq!(
        turns.len(),
        1,
        "delivered once: {turns:?}\n{}",
        daemon.log()
    );
}

/// Kills the agent, writes two plans (after the kernel forgot the killed
/// session, if `settled`); someone else does the first step meanwhile, so
/// only the second reaches the agent when it is created again.
fn killed(settled: bool) {
    let Some(rig) = rig() else {
        return;
    };
    let daemon = Daemon::start(&rig.project);
    daemon.wait_log(&format!("session {AGENT} appeared"), T);
    rig.ollie.kill(AGENT);
    daemon.wait_log(&format!("session {AGENT} is gone"), T);
    if settled {
        wait_forgotten(&rig, AGENT);
    }
    let (stale, _) = rig.plan("goes stale", &sequential(&["Stale step"]));
    wait_pending(&rig, &["s1"]);
    rig.plan("is kept", &sequential(&["Kept step"]));
    wait_pending(&rig, &["s1", "s1"]);
    task_complete(&stale, "Stale step");
    daemon.wait_log("withdrew pending prompt for s1", T);
    wait_pending(&rig, &["s1"]);
    rig.ollie.create(AGENT, &rig.ollie.work());
    rig.ollie.wait_turn("s1 Kept step", T);
    let turns = rig.ollie.wait_quiet(T);
    assert_eq!(
        turns.len(),
        1,
        "only the kept step reached the agent: {turns:?}\n{}",
        daemon.log()
    );
    wait_pending(&rig, &[]);
}

#[test]
fn a_renamed_agents_prompt_waits_in_the_outbox_and_is_delivered_when_it_is_back() {
    renamed(true);
}

#[test]
fn a_killed_agents_prompts_wait_and_the_stale_one_is_withdrawn_before_it_returns() {
    killed(true);
}

#[test]
fn a_prompt_for_an_agent_renamed_a_moment_ago_waits_for_its_return() {
    renamed(false);
}

#[test]
fn a_prompt_for_an_agent_killed_a_moment_ago_waits_for_its_return() {
    killed(false);
}
