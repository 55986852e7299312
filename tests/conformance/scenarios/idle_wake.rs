//! An idle wake: each step's prompt reaches the agent once, the agent
//! ticks it, and the plan goes on to the next step.

use super::{barrier, nothing_pending, once, sequential};
use crate::conformance::{Kind, TICKING};

pub fn run<K: Kind>() {
    let Some(k) = K::start(TICKING, &|_| {}) else {
        return;
    };
    let plan = k.plan("wake", &sequential(&["Wake one", "Wake two"]), "");
    k.closed(&plan, "Wake one");
    k.closed(&plan, "Wake two");
    barrier(&k, "after the wake");
    once(&k, "s1", "Wake one");
    once(&k, "s2", "Wake two");
    nothing_pending(&k);
}
