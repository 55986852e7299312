//! A confirmation read that fails: the read that would tell whether the
//! agent took a prompt fails once (as the real program's can). The prompt
//! had been taken; "could not tell" is answered by looking again, never by
//! sending again — the step reaches the agent once.

use super::{barrier, nothing_pending, once, sequential};
use crate::conformance::{step_needle, wait_followed, Kind, TICKING};

pub fn run<K: Kind>() {
    let Some(k) = K::start(TICKING, &|_| {}) else {
        return;
    };
    wait_followed(k.project(), &k.session(), K::T);
    k.fail_confirmation()
        .unwrap_or_else(|why| panic!("{} has no fault to inject: {why}", K::NAME));
    let plan = k.plan("once", &sequential(&["Run me once"]), "");
    k.closed(&plan, "Run me once");
    barrier(&k, "after the doubt");
    once(&k, "s1", "Run me once");
    // Where the wire is seen: written once, too (a second copy a program
    // stores and never runs would not show as a turn).
    if let Some(writes) = k.writes(&step_needle("s1", "Run me once")) {
        assert_eq!(writes.len(), 1, "{}: s1 written {writes:?}", K::NAME);
    }
    // The fault was met: the test is not about a read that never failed.
    let doubt = format!("could not tell whether session {} took s1", k.session());
    assert_eq!(
        k.daemon().log_count(&doubt),
        1,
        "{}: reveille never met the failed read\n{}",
        K::NAME,
        k.daemon().log()
    );
    nothing_pending(&k);
}
