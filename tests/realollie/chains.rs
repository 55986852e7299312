//! Right after a chain: an agent that just ran two turns back to back (a
//! person's, and a step of reveille's queued behind it) is idle; the next
//! step becomes ready then, and must start at once — the real server's gap
//! between chained turns is sub-millisecond, so nothing is gained by
//! waiting for the chain to "settle".

use super::{sequential, Rig, AGENT, IDLE, T, WAKE};
use crate::util::daemon::Daemon;
use crate::util::plans::task_complete_timed;
use crate::util::realollie::{unix_now, Options};

#[test]
fn a_step_ready_right_after_a_chain_of_two_turns_starts_within_250_ms() {
    let Some(rig) = Rig::new(Options::default(), IDLE) else {
        return;
    };
    let daemon = Daemon::start(&rig.project);
    rig.ollie.submit(AGENT, "a person's question delay=2");
    rig.ollie.wait_turn("person's question", T);
    // reveille has seen the agent busy (one `idx` poll, 1 s by default).
    daemon.wait_log(&format!("session {AGENT}: idle → thinking"), T);
    // First is announced while the person's turn runs: reveille's Submit
    // queues behind it, and the two turns run as one chain.
    let (plan, _) = rig.plan("after a chain", &sequential(&["First", "Second"]));
    rig.ollie.wait_turn("s1 First", T);
    let chain = rig.ollie.wait_quiet(T);
    assert_eq!(chain.len(), 2, "the chain: {chain:?}");
    // The agent is idle; someone ticks First now, so Second is ready.
    let closed = task_complete_timed(&plan, "First");
    let ticked_at = unix_now() - closed.elapsed().as_secs_f64();
    let second = rig.ollie.wait_turn("s2 Second", T);
    let latency = second.started - ticked_at;
    eprintln!(
        "after a chain: Second's turn started {:.0} ms after First was ticked",
        latency * 1e3
    );
    assert!(
        latency < WAKE,
        "Second's turn started {latency:.3} s after First was ticked on an idle agent\n{}\n{}",
        rig.ollie.describe(),
        daemon.log()
    );
}
