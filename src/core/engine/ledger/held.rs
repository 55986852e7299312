//! A prompt refused because its session runs a turn that would take it
//! in (`Evidence::Busy`, judged `Verdict::WaitIdle` for a kind that takes
//! a prompt only while idle: opencode's). Nothing was written. The
//! backend reported the busy state it saw as a look of its own, so the
//! session's newest look holds the prompt back and its idle sends it
//! (`Lanes::next`, `may_take_now`) — no backoff, and no failure to warn
//! of: the journal says once that it waits for the idle (`say_held`).

use super::super::config::Now;
use super::Ledger;
use crate::core::effect::Effect;
use crate::core::input::Undeliverable;

impl Ledger {
    /// Prompt `seq` of `session` was refused for a running turn.
    pub(in crate::core::engine) fn on_busy(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        why: Undeliverable,
        fx: &mut Vec<Effect>,
    ) {
        if self.withdraw_unwanted(session, seq, fx) {
            return;
        }
        let about = self
            .pending(session, seq)
            .map(|p| (p.step.clone(), p.source.clone()));
        self.lanes.held_busy(now, session, seq, about, &why.reason);
    }
}
