//! A slow answer: the program takes a delivery but its turn starts seconds
//! later (ollie-core's pre-turn hooks: the session shows idle meanwhile),
//! or its answer to the delivery comes seconds late (Codex, through a tap
//! on its WebSocket: the turn runs meanwhile).
//! reveille must not take the quiet for a lost prompt and send it again,
//! and must not freeze: the next step goes out once the first is ticked.
//! While an answer is late, `why` and `status` say the prompt is in flight,
//! and nothing else goes to the session.

use std::path::Path;

use super::{barrier, nothing_pending, once, sequential};
use crate::conformance::{status_of, wait_followed, Kind, Slow, TICKING};
use crate::util::try_wait_until;

pub fn run<K: Kind>() {
    let Some(k) = K::start(TICKING, &|_| {}) else {
        return;
    };
    wait_followed(k.project(), &k.session(), K::T);
    let slow = k
        .slow_answers()
        .unwrap_or_else(|why| panic!("{} cannot answer slowly: {why}", K::NAME));
    let plan = k.plan("slowly", &sequential(&["Slow one", "Slow two"]), "");
    if slow == Slow::Answer {
        in_flight_meanwhile(&k, &plan);
    }
    k.closed(&plan, "Slow one");
    k.closed(&plan, "Slow two");
    barrier(&k, "after the slow answers");
    once(&k, "s1", "Slow one");
    once(&k, "s2", "Slow two");
    nothing_pending(&k);
    assert_eq!(
        k.overlapped(),
        0,
        "{}: a delivery went out while an earlier one's answer was late",
        K::NAME
    );
}

/// While s1's answer is late, `why` says a prompt is in flight — s1's, or
/// the one s2 waits behind (the agent may tick s1 before the answer
/// comes) — and `status` shows it.
fn in_flight_meanwhile<K: Kind>(k: &K, plan: &Path) {
    let plan = plan.display().to_string();
    let mut said = String::new();
    let line = try_wait_until(K::T, || {
        let out = k.project().run(&["why", &plan]);
        said = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = said.lines().find(|l| l.contains("in flight"))?;
        Some(line.to_string())
    });
    let Some(line) = line else {
        panic!(
            "{}: `why` never said s1 is in flight:\n{said}\n{}",
            K::NAME,
            k.daemon().log()
        );
    };
    eprintln!("{}: why says {line}", K::NAME);
    assert!(line.contains("handed to the session"), "{line}");
    let status = status_of(k.project(), &k.session());
    assert!(
        !status["in_flight"].is_null() || status["last_delivery"]["step"] == "s1",
        "{}: status shows nothing in flight while s1's answer is late: {status:#}",
        K::NAME
    );
}
