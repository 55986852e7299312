//! A prompt written into an agent whose own record will tell whether it
//! took it (`Evidence::Sent`, Claude Code's inbox and transcript): its
//! lane waits for the record for the kind's `record` window
//! (`core::confirm`), on the engine's timer (`Timer::Look`); the record
//! telling first (`Delivered`, `Undeliverable`) ends the wait; else the
//! backend is asked to look for it there (`Effect::Look`), never to write
//! it, and answers with what it found. A look that could not tell
//! (`Evidence::Unsure`) is answered the same way: another look after the
//! window, never a send, and never "delivered" because the session is
//! still there (`core::taken::settled_by_look`).

use std::time::Duration;

use super::super::config::Now;
use super::super::timers::{Timer, Timers};
use super::Ledger;
use crate::core::effect::{Effect, Level, Log};

impl Ledger {
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
    /// written (no outcome came meanwhile).
    pub(in crate::core::engine) fn look_due(&self, session: &str, seq: u64) -> Option<Effect> {
        if !self.lanes.is_writing(session, seq) {
            return None;
        }
        let p = self
            .memory
            .outbox
            .get(session)?
            .iter()
            .find(|p| p.seq == seq)?;
        Some(Effect::Look(self.delivery(session.to_string(), p, true)))
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
        let news = self.lanes.doubt(now, session, seq);
        if let Some(p) = self.pending(session, seq).filter(|_| news) {
            let log = Log::new(
                Level::Info,
                format!(
                    "could not tell whether session {session} took {} ({why}); it is not sent again: it is looked for in the agent's record in {window:?}",
                    p.step
                ),
            )
            .plan(&p.source)
            .step(&p.step)
            .session(session);
            fx.push(Effect::Log(log));
        }
        self.await_record(now, session, seq, window, timers);
    }
}
