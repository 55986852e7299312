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

use super::config::{EngineConfig, Now};
use super::ledger::Ledger;
use super::timers::{Timer, Timers};
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

    /// The session's tree reported its state (`None`: no longer listed).
    /// A session that appears or goes idle has its pending prompts retried
    /// at once: it can take them now.
    pub(super) fn on_state(
        &mut self,
        now: Now,
        session: String,
        state: Option<AgentState>,
        config: &EngineConfig,
        ledger: &mut Ledger,
        timers: &mut Timers,
    ) {
        let release = Timer::Release(session.clone());
        let Some(state) = state else {
            // Gone: nothing of its queue will run; its prompts wait in the
            // outbox for it to come back.
            self.observed.remove(&session);
            timers.cancel(&release);
            ledger.release(&session);
            return;
        };
        if ledger.is_held(&session) {
            if state.is_idle() {
                timers.set_once(release, now + config.idle_settle);
            } else {
                timers.cancel(&release);
            }
        }
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

    /// A prompt was Submitted while the agent was busy: it waits in the
    /// agent's own queue. ollie-core runs a chain of turns — the running
    /// one, then each queued item — under one lock, showing `idle` for a
    /// moment between two of them; a Submit that lands in such a gap is
    /// not queued but waits for the lock, and so runs after everything
    /// queued meanwhile. So the session's next prompt is held until the
    /// agent has looked idle for `idle_settle` without a turn starting:
    /// its chain is over, and a Submit then starts a turn at once.
    pub(super) fn on_queued(
        &mut self,
        now: Now,
        session: &str,
        config: &EngineConfig,
        ledger: &mut Ledger,
        timers: &mut Timers,
    ) {
        let Some(seen) = self.observed.get(session) else {
            return;
        };
        ledger.hold(session);
        // Already seen idle again (the turn ended before this outcome
        // came back): no state change may follow, so start the wait now.
        if seen.state.is_idle() {
            timers.set_once(
                Timer::Release(session.to_string()),
                now + config.idle_settle,
            );
        }
    }

    /// Every observed session.
    pub(super) fn observed(&self) -> &BTreeMap<String, Observed> {
        &self.observed
    }
}
