//! Turns shorter than the kind's observation interval: the agent is woken,
//! runs a short turn and leaves its step open. `status` must show it idle
//! within one interval of the turn's end (never busy for ever because the
//! busy it saw was the last change it noticed), and the reminder comes.

use std::time::Duration;

use super::{once, sequential};
use crate::conformance::{state_of, toml, unix_now, Kind, LEFT_OPEN, REMINDER};
use crate::util::{try_wait_until, wait_until};

/// The idle time before a reminder (the smallest reveille accepts).
const AFTER_MS: u64 = 1000;
/// What a loaded two-core machine adds to one interval: `status` is a
/// process of its own, and the views are written every 200 ms.
const SLACK: Duration = Duration::from_millis(1500);

pub fn run<K: Kind>() {
    let tune = |p: &mut crate::util::project::Project| {
        p.set("sessions", "remind_after_ms", &AFTER_MS.to_string());
        p.set("sessions", "remind_max", "1");
        p.set("prompt", "remind_template", &toml(REMINDER));
    };
    let Some(k) = K::start(LEFT_OPEN, &tune) else {
        return;
    };
    let interval = k
        .interval()
        .unwrap_or_else(|why| panic!("{} has no observed state: {why}", K::NAME));
    let session = k.session();
    k.plan("short", &sequential(&["Left open"]), "");
    let needle = crate::conformance::step_needle("s1", "Left open");
    let ended = wait_until("the step's turn to end", K::T, || {
        k.turns(&needle).into_iter().next()?.ended
    });
    let turn = k.turns(&needle).remove(0);
    eprintln!(
        "{}: the turn lasted {:.2} s; the observation interval is {interval:?}",
        K::NAME,
        ended - turn.started
    );
    let idle = try_wait_until(interval + SLACK, || {
        (state_of(k.project(), &session).as_deref() == Some("idle")).then(unix_now)
    });
    let Some(idle) = idle else {
        panic!(
            "{}: status still shows {:?} {interval:?} + {SLACK:?} after the turn ended\n{}",
            K::NAME,
            state_of(k.project(), &session),
            k.daemon().log()
        );
    };
    eprintln!(
        "{}: status showed it idle {:.2} s after the turn ended",
        K::NAME,
        idle - ended
    );
    let reminder = "Reminder 1 of 1: s1 Left open";
    wait_until("the reminder's turn", K::T, || {
        k.turns(reminder).into_iter().next()
    });
    once(&k, "s1", "Left open");
    assert_eq!(
        k.turns(reminder).len(),
        1,
        "{}: the reminder went out more than once\n{}",
        K::NAME,
        k.daemon().log()
    );
}
