//! A busy queue: a step ready while a person's turn runs goes out as its
//! own turn once that turn has ended — not folded into it, not lost.

use super::{nothing_pending, once, sequential};
use crate::conformance::{step_needle, unix_now, Kind, TICKING};
use crate::util::wait_until;

/// The person's prompt: three seconds of model time.
const PERSON: &str = "a person's long question delay=3";

pub fn run<K: Kind>() {
    let Some(k) = K::start(TICKING, &|_| {}) else {
        return;
    };
    k.person_turn(PERSON)
        .unwrap_or_else(|why| panic!("{} has no busy queue: {why}", K::NAME));
    let written = unix_now();
    let plan = k.plan("while busy", &sequential(&["Busy step"]), "");
    k.closed(&plan, "Busy step");
    let person = wait_until("the person's turn to have ended", K::T, || {
        let turn = k.turns("long question").into_iter().next()?;
        turn.ended
    });
    assert!(
        written < person,
        "the plan was written after the person's turn ended: the test proves nothing"
    );
    let step = k.turns(&step_needle("s1", "Busy step")).remove(0);
    // Both are the model's stamps, taken on two threads: the next turn's
    // start may be stamped a hair before the last one's end.
    assert!(
        step.started >= person - 0.05,
        "{}: the step's turn began {:.3} s before the person's turn ended (folded into it)\n{}",
        K::NAME,
        person - step.started,
        k.daemon().log()
    );
    once(&k, "s1", "Busy step");
    nothing_pending(&k);
}
