//! Sessions: what the engine knows of each agent session beyond its
//! outbox.
//!
//! A session gives signs of life — its enqueue file opened or created (a
//! reader may be there) — and, for an ollie-9p tree, an observed state:
//! idle or busy, since when, or gone. A lane backing off retries at once on
//! either. This is the part where reminders for work announced and not
//! taken up, and a session's children, live too, each with its own inputs
//! and timers, so that they do not spread over plans, tasks and lanes.

use std::collections::BTreeMap;

use super::config::Now;
use super::ledger::Ledger;
use super::timers::Timers;
use crate::core::session::AgentState;

/// A session's observed state, and since when (engine time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub state: AgentState,
    pub since: Now,
}

/// What is known of the sessions.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    /// Sessions whose state is observed (an ollie-9p tree), by id. A
    /// session that is not here has no observable state (a named pipe), or
    /// is not listed (gone).
    observed: BTreeMap<String, Observed>,
}

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

    /// The session's agent reported its state (`None`: gone, or its
    /// program not running). A session that appears or goes idle has its
    /// pending prompts retried at once: it can take them now.
    pub(super) fn on_state(
        &mut self,
        now: Now,
        session: String,
        state: Option<AgentState>,
        ledger: &mut Ledger,
        timers: &mut Timers,
    ) {
        let Some(state) = state else {
            // Gone: nothing of its queue will run; its prompts wait in the
            // outbox for it to come back.
            self.observed.remove(&session);
            return;
        };
        let appeared = !self.observed.contains_key(&session);
        let changed = self.observed.get(&session).is_none_or(|o| o.state != state);
        if !changed {
            return;
        }
        let idle = state.is_idle();
        self.observed
            .insert(session.clone(), Observed { state, since: now });
        if appeared || idle {
            ledger.poke(now, session, timers);
        }
    }

    /// A prompt reached an idle agent that folds later prompts into the
    /// turn it starts (`Kind::waits_for_idle`): it is busy from now on, as
    /// far as its lane is concerned, until it says it is idle again.
    pub(super) fn prompted(&mut self, now: Now, session: &str, step: &str) {
        if let Some(o) = self.observed.get_mut(session) {
            if o.state.is_idle() {
                o.state = AgentState::Busy(format!("starting a turn on {step}"));
                o.since = now;
            }
        }
    }

    /// Every observed session.
    pub(super) fn observed(&self) -> &BTreeMap<String, Observed> {
        &self.observed
    }
}
