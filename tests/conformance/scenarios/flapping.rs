//! A state that flaps: a person sends three short prompts at once, so the
//! session goes busy, idle for a moment between turns, busy again — and a
//! step becomes ready meanwhile, once the first of them has begun. The step runs once, as a turn of its own
//! (never folded into a person's prompt), and once everything has ended
//! `status` shows the agent idle within one interval.

use std::time::Duration;

use super::{barrier, nothing_pending, once, sequential};
use crate::conformance::{state_of, step_needle, unix_now, Kind, TICKING};
use crate::util::{try_wait_until, wait_until};

/// What a loaded machine adds to one interval (see short_turns).
const SLACK: Duration = Duration::from_millis(1500);

pub fn run<K: Kind>() {
    let Some(k) = K::start(TICKING, &|_| {}) else {
        return;
    };
    person_prompts(&k);
    // The step becomes ready once the program has taken the person's
    // first prompt (its turn began): in the ~100 ms before a program shows
    // a prompt another client sent, nothing tells a waker it is taken (see
    // doc/TESTING.md).
    wait_until("the person's first turn to begin", K::T, || {
        k.turns("quick question 1").into_iter().next()
    });
    step_among_them(&k);
}

/// A person sends three short prompts at once.
pub fn person_prompts<K: Kind>(k: &K) {
    let quick: Vec<String> = (1..=3).map(|i| format!("quick question {i}")).collect();
    k.person_prompts(&quick)
        .unwrap_or_else(|why| panic!("{} has no state to flap: {why}", K::NAME));
}

/// A step becomes ready now: it runs once, as its own turn, and `status`
/// shows the agent idle within one interval of the last turn's end.
pub fn step_among_them<K: Kind>(k: &K) {
    let interval = k
        .interval()
        .unwrap_or_else(|why| panic!("{} has no observed state: {why}", K::NAME));
    let session = k.session();
    let plan = k.plan("flapping", &sequential(&["Flap step"]), "");
    k.closed(&plan, "Flap step");
    let needle = step_needle("s1", "Flap step");
    let step = k.turns(&needle);
    assert!(
        step.iter().all(|t| !t.prompt.contains("quick question")),
        "{}: the step was folded into a person's prompt: {step:?}",
        K::NAME
    );
    let ended = wait_until("every turn to have ended", K::T, || {
        let mut all = k.turns("quick question");
        all.extend(k.turns(&needle));
        let ends: Option<Vec<f64>> = all.iter().map(|t| t.ended).collect();
        ends?.into_iter().reduce(f64::max)
    });
    let idle = try_wait_until(interval + SLACK, || {
        (state_of(k.project(), &session).as_deref() == Some("idle")).then(unix_now)
    });
    assert!(
        idle.is_some(),
        "{}: status shows {:?} {interval:?} + {SLACK:?} after the last turn ended\n{}",
        K::NAME,
        state_of(k.project(), &session),
        k.daemon().log()
    );
    eprintln!(
        "{}: idle in status {:.2} s after the last turn ended",
        K::NAME,
        idle.unwrap() - ended
    );
    barrier(k, "after the flapping");
    once(k, "s1", "Flap step");
    nothing_pending(k);
}
