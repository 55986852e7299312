//! A slow answer: the program takes a delivery but its turn starts seconds
//! later (ollie-core's pre-turn hooks: the session shows idle meanwhile),
//! or its answer to the delivery comes seconds late (Codex, through a tap
//! on its WebSocket: the turn runs meanwhile).
//! reveille must not take the quiet for a lost prompt and send it again,
//! and must not freeze: the next step goes out once the first is ticked.

use super::{barrier, nothing_pending, once, sequential};
use crate::conformance::{wait_followed, Kind, TICKING};

pub fn run<K: Kind>() {
    let Some(k) = K::start(TICKING, &|_| {}) else {
        return;
    };
    wait_followed(k.project(), &k.session(), K::T);
    k.slow_answers()
        .unwrap_or_else(|why| panic!("{} cannot answer slowly: {why}", K::NAME));
    let plan = k.plan("slowly", &sequential(&["Slow one", "Slow two"]), "");
    k.closed(&plan, "Slow one");
    k.closed(&plan, "Slow two");
    barrier(&k, "after the slow answers");
    once(&k, "s1", "Slow one");
    once(&k, "s2", "Slow two");
    nothing_pending(&k);
}
