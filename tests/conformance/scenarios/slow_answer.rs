//! A slow answer: the program takes a delivery but its answer comes
//! seconds later — ollie-core's pre-turn hooks (the session shows idle
//! meanwhile), or an answer to opencode's `prompt_async` held on the way
//! (its turn runs meanwhile, and ticks the step). reveille must not take
//! the quiet for a lost prompt and send it again, must not send the
//! session's next prompt while the first is unanswered, and must not
//! freeze: the next step goes out once the first is ticked.

use std::path::Path;

use super::{barrier, nothing_pending, once, sequential};
use crate::conformance::{step_needle, wait_followed, Kind, TICKING};
use crate::util::try_wait_until;

pub fn run<K: Kind>() {
    let Some(k) = K::start(TICKING, &|_| {}) else {
        return;
    };
    wait_followed(k.project(), &k.session(), K::T);
    k.slow_answers()
        .unwrap_or_else(|why| panic!("{} cannot answer slowly: {why}", K::NAME));
    let plan = k.plan("slowly", &sequential(&["Slow one", "Slow two"]), "");
    in_flight(&k, &plan);
    k.closed(&plan, "Slow one");
    k.closed(&plan, "Slow two");
    barrier(&k, "after the slow answers");
    once(&k, "s1", "Slow one");
    once(&k, "s2", "Slow two");
    not_meanwhile(&k);
    nothing_pending(&k);
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

/// Where the wire is seen: while the first write is unanswered, `why`
/// says its prompt is in flight — not only that it is pending.
fn in_flight<K: Kind>(k: &K, plan: &Path) {
    let one = step_needle("s1", "Slow one");
    if k.writes(&one).is_none() {
        return;
    }
    let plan = plan.display().to_string();
    let mut said = String::new();
    let unanswered = || {
        k.writes(&one)
            .is_some_and(|w| w.iter().any(|(_, answered)| answered.is_none()))
    };
    let seen = try_wait_until(K::T, || {
        let out = k.project().run(&["why", &plan]);
        said = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = said.lines().find(|l| l.contains("pending in the outbox"))?;
        (line.contains("in flight") && unanswered()).then_some(())
    });
    assert!(
        seen.is_some(),
        "{}: `why` never said s1 is in flight while its write was unanswered:\n{said}",
        K::NAME
    );
}
