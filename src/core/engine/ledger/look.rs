//! Looking for a prompt in the agent's own record rather than writing it
//! again. A prompt written into an agent whose record will tell whether it
//! took it (`Evidence::Sent`, Claude Code's inbox and transcript): its
//! lane waits for the record for the kind's `record` window
//! (`core::confirm`), on the engine's timer (`Timer::Look`); the record
//! telling first (`Delivered`, `Undeliverable`) ends the wait; else the
//! backend is asked to look for it there (`Effect::Look`), never to write
//! it, and answers with what it found. A prompt found absent from an
//! agent that may hide one it starts (Codex) is looked for again after
//! the kind's `hidden` window, or once the agent is idle, as the one rule
//! (`core::taken`) says. A look that could not tell
//! (`Evidence::Unsure`) is answered the same way: another look after the
//! window, never a send, and never "delivered" because the session is
//! still there (`core::taken::settled_by_look`).

use std::collections::BTreeMap;
use std::time::Duration;

use super::super::config::Now;
use super::super::observed::Observed;
use super::super::timers::{Timer, Timers};
use super::Ledger;
use crate::core::effect::{Effect, Level, Log};
use crate::core::input::{Evidence, Undeliverable};
use crate::core::session::Kind;
use crate::core::taken::{self, Known, Verdict};

/// Whether `session`'s newest look finds it busy (a turn running, or one
/// waiting for a person).
pub(in crate::core::engine) fn busy(observed: &BTreeMap<String, Observed>, session: &str) -> bool {
    observed.get(session).is_some_and(|o| !o.state.is_idle())
}

impl Ledger {
    /// The one rule's verdict on `evidence` of prompt `seq`, with what the
    /// lane knows of its absences and whether the session is busy; a first
    /// absence from an idle agent is kept.
    pub(in crate::core::engine) fn judge(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        evidence: Evidence,
        observed: &BTreeMap<String, Observed>,
    ) -> Verdict {
        let busy = busy(observed, session);
        let absence = matches!(evidence, Evidence::NotRecorded(_));
        let known = Known {
            absent_for: self.lanes.absent_for(now, session, seq),
            busy,
        };
        let verdict = taken::judge(Kind::of(session).0, evidence, known);
        if absence && matches!(verdict, Verdict::LookAfter(_)) {
            self.lanes.absent(now, session, seq);
        }
        verdict
    }

    /// Prompt `seq`, being written, was sent into the agent: looked for in
    /// its record after `window`, unless the record tells first.
    pub(in crate::core::engine) fn await_record(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        window: Duration,
        timers: &mut Timers,
    ) {
        if self.lanes.is_writing(session, seq) {
            timers.set(Timer::Look(session.to_string(), seq), now + window);
        }
    }

    /// The look at prompt `seq` came due: asked for if it is still being
    /// written (no outcome came meanwhile). Made even while the session is
    /// busy: a prompt whose turn runs is found at once (a look finding it
    /// nowhere then waits for idle: `Verdict::LookWhenIdle`).
    pub(in crate::core::engine) fn look_due(&mut self, session: &str, seq: u64) -> Option<Effect> {
        if !self.lanes.is_writing(session, seq) {
            return None;
        }
        self.look(session, seq)
    }

    /// Prompt `seq`'s look waits for the session to be seen idle.
    pub(in crate::core::engine) fn look_when_idle(&mut self, session: &str, seq: u64) {
        self.lanes.look_when_idle(session, seq);
    }

    /// `session` was seen no longer busy (idle, gone, unreachable): the
    /// look that waited for it.
    pub(in crate::core::engine) fn idle_look(&mut self, session: &str) -> Option<Effect> {
        let seq = self.lanes.idle_look(session)?;
        self.look(session, seq)
    }

    fn look(&self, session: &str, seq: u64) -> Option<Effect> {
        let p = self
            .memory
            .outbox
            .get(session)?
            .iter()
            .find(|p| p.seq == seq)?;
        Some(Effect::Look(self.delivery(session.to_string(), p, true)))
    }

    /// Looks proved prompt `seq` not taken (`why`): it is written again at
    /// once, as a first delivery, and the journal says why.
    pub(in crate::core::engine) fn on_not_taken(
        &mut self,
        session: &str,
        seq: u64,
        why: &Undeliverable,
        fx: &mut Vec<Effect>,
    ) {
        if !self.lanes.not_taken(session, seq) {
            return;
        }
        let Some(p) = self.pending(session, seq) else {
            return;
        };
        let log = Log::new(
            Level::Info,
            format!(
                "session {session} did not take {} ({}); it is sent again",
                p.step, why.reason
            ),
        )
        .plan(&p.source)
        .step(&p.step)
        .session(session);
        fx.push(Effect::Log(log));
    }
}

impl Ledger {
    /// Whether prompt `seq`, being written to a session whose record will
    /// tell, was taken could not be told (`why`): said once per prompt,
    /// never sent again on that, and looked for in the record after
    /// `window` — each time, as a look that failed is looked at again.
    pub(in crate::core::engine) fn on_doubt_record(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        (why, window): (&str, Duration),
        timers: &mut Timers,
        fx: &mut Vec<Effect>,
    ) {
        let then = format!("it is looked for in the agent's record in {window:?}");
        self.on_doubt(now, session, seq, (why, &then), fx);
        self.await_record(now, session, seq, window, timers);
    }
}
