//! reveille killed -9 mid-plan, at three points, and started again each
//! time, while the real claude works through the plan: every step still
//! runs, and each kill costs at most one repeat.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::rig::{ready, Rig};
use super::watch::PlanWatch;
use crate::util::plans::Step;

const TITLES: [&str; 4] = [
    "Crash step one e2e-c1",
    "Crash step two e2e-c2",
    "Crash step three e2e-c3",
    "Crash step four e2e-c4",
];

#[test]
fn every_step_runs_when_reveille_is_killed_9_mid_plan_at_most_one_repeat_per_kill() {
    let Some(mut rig) = Rig::start(|_| {}) else {
        return;
    };
    let name = "20260101T000000_0c0c0c0c--crash__todo.md";
    let path = rig.plan_dir.join(name);
    // Kill 3: the moment the agent's tick of step 3 lands, before reveille
    // could announce step 4 (or just after), from the watching thread.
    let target = Arc::new(AtomicU32::new(0));
    let aim = target.clone();
    let tick3 = format!("- [x] {}", TITLES[2]);
    let watch = PlanWatch::start(&path, move |w| {
        let pid = aim.load(Ordering::SeqCst);
        if pid != 0 && w.text.contains(&tick3) {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            aim.store(0, Ordering::SeqCst);
        }
    });
    let steps: Vec<Step> = TITLES.iter().map(|t| Step::new(t)).collect();
    rig.plan(name, "Crash", &steps);
    // Kill 1: as soon as step 1 is announced (its prompt on its way).
    rig.wait_log(&["announced s1"]);
    rig.kill_daemon();
    rig.start_daemon();
    // Kill 2: when step 2's turn asks the model.
    rig.wait_model(&ready(TITLES[1]));
    rig.kill_daemon();
    rig.start_daemon();
    target.store(rig.daemon_pid(), Ordering::SeqCst);
    rig.wait_ticked(&path, TITLES[2]);
    assert!(watch.ticked(TITLES[2]).is_some());
    rig.kill_daemon();
    rig.start_daemon();
    for t in TITLES {
        rig.wait_ticked(&path, t);
    }
    rig.idle();
    each_ran_with_at_most(&rig, 3);
}

/// Every step reached the model, each at most twice, `kills` repeats in
/// all at most, and never two prompts in one message.
fn each_ran_with_at_most(rig: &Rig, kills: usize) {
    let turns: Vec<usize> = TITLES.iter().map(|t| rig.turns(&ready(t))).collect();
    println!("claude e2e kill -9: turns per step {turns:?} over {kills} kills");
    let repeats: usize = turns.iter().map(|n| n.saturating_sub(1)).sum();
    for (t, n) in TITLES.iter().zip(&turns) {
        assert!((1..=2).contains(n), "{t} reached the model {n} times");
    }
    assert!(repeats <= kills, "{repeats} repeats for {kills} kills");
    for r in rig.model.requests() {
        let steps = TITLES.iter().filter(|t| r.last_user.contains(*t)).count();
        assert!(steps <= 1, "prompts merged into one message: {r:?}");
    }
    // reveille never wrote a prompt a second time into the inbox (Claude
    // Code's guard would have dropped the copy, and said so).
    let dropped = rig.dropped_notices();
    assert!(dropped.is_empty(), "a prompt written twice: {dropped:#?}");
}
