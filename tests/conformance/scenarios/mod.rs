//! The scenarios, each generic over a [`super::Kind`]; `cells` runs each
//! on every kind it applies to.

pub mod busy_queue;
pub mod failed_confirmation;
pub mod flapping;
pub mod idle_wake;
pub mod prompt_race;
pub mod restart;
pub mod short_turns;
pub mod slow_answer;
pub mod waiting_reason;

use super::{step_needle, Kind};
use crate::util::plans::Step;
use crate::util::wait_until;

/// A plan of one step, after everything before it: once its step is
/// closed, anything reveille would have sent again before it has arrived
/// (one session's prompts go out in order).
pub fn barrier<K: Kind>(k: &K, label: &str) {
    let title = format!("{label} barrier");
    let plan = k.plan(label, &[Step::new(&title)], "");
    k.closed(&plan, &title);
}

/// Step `id` titled `title` began exactly one turn.
pub fn once<K: Kind>(k: &K, id: &str, title: &str) {
    let needle = step_needle(id, title);
    let turns = k.turns(&needle);
    assert_eq!(
        turns.len(),
        1,
        "{}: {needle:?} began {} turns: {turns:?}\n{}",
        K::NAME,
        turns.len(),
        k.daemon().log()
    );
}

/// Wait until nothing waits in the session's outbox.
pub fn nothing_pending<K: Kind>(k: &K) {
    let session = k.session();
    wait_until(&format!("{session}'s outbox to empty"), K::T, || {
        k.project().pending(&session).is_empty().then_some(())
    });
}

/// `steps` titled `titles`, each after the one before.
pub fn sequential(titles: &[&str]) -> Vec<Step> {
    titles.iter().map(|t| Step::new(t)).collect()
}
