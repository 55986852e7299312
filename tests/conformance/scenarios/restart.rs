//! The agent's program stopped (killed, as a crash) and started again on
//! the same session: a step that became ready while it was down waits in
//! the outbox and is delivered once it is back — not lost, not twice.

use super::{barrier, nothing_pending, once, sequential};
use crate::conformance::{Kind, TICKING};
use crate::util::wait_until;

pub fn run<K: Kind>() {
    let Some(mut k) = K::start(TICKING, &|_| {}) else {
        return;
    };
    let before = k.plan("before", &sequential(&["Before the stop"]), "");
    k.closed(&before, "Before the stop");
    k.stop_program()
        .unwrap_or_else(|why| panic!("{} cannot be restarted: {why}", K::NAME));
    let plan = k.plan("while down", &sequential(&["While down"]), "");
    let session = k.session();
    wait_until("the step to wait in the outbox", K::T, || {
        let pending = k.project().pending(&session);
        pending.iter().any(|s| s == "s1").then_some(())
    });
    k.start_program();
    k.closed(&plan, "While down");
    barrier(&k, "after the restart");
    once(&k, "s1", "Before the stop");
    once(&k, "s1", "While down");
    nothing_pending(&k);
}
