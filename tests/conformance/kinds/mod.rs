//! One driver per kind of session: how the suite starts its agent, makes a
//! person's turn, injects a fault — or why it cannot.

pub mod claude;
pub mod codex;
pub mod ollie;
pub mod ollie_double;
pub mod opencode;
pub mod pipe;

use std::path::Path;
use std::time::Duration;

use crate::conformance::Seen;
use crate::util::fakemodel::FakeModel;
use crate::util::wait_until;

/// The turns the fake model began on a prompt containing `needle`: each
/// turn's first request, ended when its answer was fully written (the
/// scenarios that time a turn make it one request long).
pub fn model_turns(model: &FakeModel, needle: &str) -> Vec<Seen> {
    model
        .turns_on(needle)
        .into_iter()
        .map(|r| Seen {
            started: super::unix_of(r.at),
            ended: r.done.map(super::unix_of),
            prompt: r.last_user,
        })
        .collect()
}

/// Wait until the agent ticked `title` in `plan`.
pub fn wait_ticked(plan: &Path, title: &str, t: Duration) {
    wait_until(&format!("the agent to tick {title:?}"), t, || {
        crate::realollie::ticked(plan, title).then_some(())
    });
}
