//! Sessions: what a session is — the one owner of it. Every observer of
//! every kind (ollie-9p's `idx`, a delivery's own reads, an agent
//! program's events, a registry) reports every look here as one
//! `Input::Observed`; the newest look wins, whoever made it, and no
//! observer keeps a view of its own that could filter what reaches here.
//! Status, reminders, delivery and fan-out all read it here.
//!
//! A session gives signs of life too — its enqueue file opened or created
//! (a reader may be there). A lane backing off retries at once on either.

use std::collections::BTreeMap;

use super::config::Now;
use super::ledger::Ledger;
use super::observed::{Absent, Observed};
use super::timers::Timers;
use crate::core::input::{Observation, Observer, Seen};
use crate::core::session::AgentState;

/// What a look changed, for the engine to act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Look {
    /// Older than the newest look at the session: nothing.
    Stale,
    /// Seen in the state it was known in: nothing changes.
    Same,
    /// Seen in a state it was not known in (or seen for the first time).
    Changed,
    /// Seen gone (`true`: news — it was not known gone for this reason).
    Gone(bool),
    /// Its program cannot be reached (`true`: news).
    Unreachable(bool),
}

/// How long a session last seen gone or unreachable, with nothing pending
/// for it, keeps its reason and its newest look (so a late look older
/// than the gone one is still known as stale).
const ABSENT_KEPT: Now = Now::from_secs(600);

/// What is known of the sessions.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    /// Sessions seen in a state, by id. A session that is not here has no
    /// observable state (a named pipe), or was last seen gone.
    observed: BTreeMap<String, Observed>,
    /// Sessions last seen gone or unreachable.
    absent: BTreeMap<String, Absent>,
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

    /// One look at a session. The newest look wins: one older than what is
    /// known changes nothing. A session that appears, comes back or goes
    /// idle has its pending prompts retried at once: it can take them now.
    pub(super) fn on_observed(
        &mut self,
        now: Now,
        look: Observation,
        ledger: &mut Ledger,
        timers: &mut Timers,
    ) -> Look {
        // A look is never from the future: a clock that went back in a
        // worker is read as now.
        let at = look.at.min(now);
        if self.newest(&look.session).is_some_and(|newest| at < newest) {
            return Look::Stale;
        }
        let session = look.session;
        let (unreachable, why) = match look.seen {
            Seen::State(state) => {
                self.absent.remove(&session);
                let idle = state.is_idle();
                match self.observed.get_mut(&session) {
                    Some(o) if o.state == state => {
                        (o.at, o.by) = (at, look.by);
                        return Look::Same;
                    }
                    known => {
                        let appeared = known.is_none();
                        let seen = Observed {
                            state,
                            since: at,
                            at,
                            by: look.by,
                        };
                        self.observed.insert(session.clone(), seen);
                        if appeared || idle {
                            ledger.poke(now, session, timers);
                        }
                    }
                }
                return Look::Changed;
            }
            Seen::Gone(why) => (false, why),
            Seen::Unreachable(why) => (true, why),
        };
        // Gone or unreachable: nothing of its queue will run; its prompts
        // wait in the outbox for it to come back.
        self.observed.remove(&session);
        let news = self
            .absent
            .get(&session)
            .is_none_or(|a| a.unreachable != unreachable || a.why != why);
        let absent = Absent {
            unreachable,
            why,
            at,
            by: look.by,
        };
        self.absent.insert(session, absent);
        self.absent
            .retain(|s, a| a.at + ABSENT_KEPT > now || ledger.outbox().len_of(s) > 0);
        if unreachable {
            Look::Unreachable(news)
        } else {
            Look::Gone(news)
        }
    }

    /// The newest look at `session`, whatever it saw.
    fn newest(&self, session: &str) -> Option<Now> {
        match self.observed.get(session) {
            Some(o) => Some(o.at),
            None => self.absent.get(session).map(|a| a.at),
        }
    }

    /// A prompt handed out at `handed` reached an idle agent that folds
    /// later prompts into the turn it starts (`Kind::waits_for_idle`): it
    /// is busy from now on, as far as its lane is concerned, until a newer
    /// look says it is idle — unless a look made since the hand-out says
    /// what it is (a prompt found taken by a look after its turn ended:
    /// marking that idle session busy would hold its next prompt for
    /// ever, as no observer speaks of an idle session again).
    pub(super) fn prompted(&mut self, now: Now, session: &str, step: &str, handed: Option<Now>) {
        let Some(handed) = handed else {
            return;
        };
        if let Some(o) = self.observed.get_mut(session) {
            if o.state.is_idle() && o.at <= handed {
                o.state = AgentState::Busy(format!("starting a turn on {step}"));
                (o.since, o.at, o.by) = (now, now, Observer::Delivery);
            }
        }
    }

    /// Every observed session.
    pub(super) fn observed(&self) -> &BTreeMap<String, Observed> {
        &self.observed
    }

    /// Every session last seen gone or unreachable, with why.
    pub(super) fn absent(&self) -> &BTreeMap<String, Absent> {
        &self.absent
    }
}
