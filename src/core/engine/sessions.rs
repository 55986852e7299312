//! Sessions: what the engine knows of each agent session beyond its
//! outbox.
//!
//! Today that is only the sign of life a session gives when its enqueue
//! file is opened or created (a reader may be there: a lane backing off
//! retries at once). This is the part where per-session observed state
//! (busy, idle, gone), reminders for work announced and not taken up, and
//! a session's children will live, each with its own inputs and timers,
//! so that they do not spread over plans, tasks and lanes.

use super::config::Now;
use super::ledger::Ledger;
use super::timers::Timers;

/// What is known of the sessions.
#[derive(Debug, Default)]
pub(super) struct Sessions {}

impl Sessions {
    /// The session's enqueue file was created or opened.
    pub(super) fn on_activity(
        &mut self,
        now: Now,
        session: String,
        ledger: &mut Ledger,
        timers: &mut Timers,
    ) {
        ledger.poke(now, session, timers);
    }
}
