//! A slow answer: the program takes a delivery but its turn starts seconds
//! later (ollie-core's pre-turn hooks: the session shows idle meanwhile),
//! or its answer to the delivery comes seconds late (Codex, through a tap
//! on its WebSocket: the turn runs meanwhile).
//! reveille must not take the quiet for a lost prompt and send it again,
//! and must not freeze: the next step goes out once the first is ticked.
//! While an answer is late, `why` and `status` say the prompt is in flight,
//! and nothing else goes to the session: where the wire is seen (opencode,
//! through its proxy), the session's next prompt is written only after the
//! first one's answer came back, though the agent had run the first.

use std::path::Path;

use super::{barrier, nothing_pending, once, sequential};
use crate::conformance::{status_of, step_needle, wait_followed, Kind, Slow, TICKING};
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
    not_meanwhile(&k);
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

/// Where the wire is seen: each step was written once, and the second
/// only after the answer to the first came back — though the agent had
/// run the first, and so made the second ready, before that.
fn not_meanwhile<K: Kind>(k: &K) {
    let (one, two) = (step_needle("s1", "Slow one"), step_needle("s2", "Slow two"));
    let (Some(first), Some(second)) = (k.writes(&one), k.writes(&two)) else {
        return;
    };
    assert_eq!(first.len(), 1, "{}: s1 written {first:?}", K::NAME);
    assert_eq!(second.len(), 1, "{}: s2 written {second:?}", K::NAME);
    let answered = first[0].1.expect("the first write was answered");
    let ran = k.turns(&one).remove(0);
    let ended = ran.ended.expect("the turn on s1 ended");
    assert!(
        ended < answered,
        "{}: the turn on s1 ended {:.2} s after its write was answered: the answer was not slow enough to prove anything",
        K::NAME,
        ended - answered
    );
    assert!(
        second[0].0 >= answered,
        "{}: s2 was written {:.2} s before the answer to s1 came back\n{}",
        K::NAME,
        answered - second[0].0,
        k.daemon().log()
    );
}
