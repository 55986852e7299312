//! Prompts another client queued (`fifo.in`) all run while reveille
//! watches the session: every walk or stat of `fifo.out` would pop and
//! discard one upstream, and reveille never makes one.

use super::{sequential, Rig, AGENT, IDLE, T};
use crate::util::daemon::Daemon;
use crate::util::realollie::Options;
use crate::util::wait_until;

#[test]
fn prompts_queued_by_another_client_all_run_while_reveille_watches_the_session() {
    let Some(mut rig) = Rig::new(Options::default(), IDLE) else {
        return;
    };
    rig.project.set("sessions", "state_poll_ms", "50");
    let daemon = Daemon::start(&rig.project);
    daemon.wait_log("following ollie-9p session states", T);
    let mut queued: Vec<String> = (1..=3).map(|i| format!("queued item {i}")).collect();
    for text in &queued {
        rig.ollie.queue(AGENT, text);
    }
    // An idle agent does not start on fifo.in; reveille's Submit starts a
    // turn, and the queue drains behind it, one item per finished turn.
    rig.plan("drain the queue", &sequential(&["Queue step"]));
    rig.ollie.wait_turn("s1 Queue step", T);
    for i in 4..=5 {
        let text = format!("queued item {i}");
        rig.ollie.queue(AGENT, &text);
        queued.push(text);
    }
    wait_until("every queued item to run", T, || {
        queued
            .iter()
            .all(|q| !rig.ollie.turns_with(q).is_empty())
            .then_some(())
    });
    let turns = rig.ollie.wait_quiet(T);
    for text in &queued {
        let ran = turns.iter().filter(|t| t.prompt == *text).count();
        assert_eq!(ran, 1, "{text:?} ran {ran} times\n{}", rig.ollie.describe());
    }
    assert_eq!(
        turns.len(),
        queued.len() + 1,
        "{}\n{}",
        rig.ollie.describe(),
        daemon.log()
    );
    // olliesrv logs every 9P walk and stat with its path (server.go
    // `walk`, `stat`): none named fifo.out.
    let log = rig.ollie.server_log();
    assert!(
        log.contains("Twalk"),
        "olliesrv logs no walks: the check below would prove nothing"
    );
    assert_eq!(
        log.matches("fifo.out").count(),
        0,
        "olliesrv saw requests for fifo.out"
    );
}
