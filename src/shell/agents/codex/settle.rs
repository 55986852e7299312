//! Prompts that cannot be judged yet: while a session is `unsure` (a turn
//! was running when reveille first attached to it — at its start, perhaps
//! right after a crash), a prompt found neither in
//! the thread's queue nor in its history may be one Codex is starting at
//! that very moment — it hides a queued turn from both while it dispatches
//! it, ~30 ms at the end of the turn before it (seen here with 0.171.0;
//! `thread_queue_processor.rs`: "dispatching queued turns are not
//! client-visible"). Sending it again then runs it twice (seen: a reveille
//! killed -9 just after queueing a step behind a running turn, restarted
//! as that turn ended). So it is parked, and settled once the thread is
//! idle: its history read again, then found there (delivered, started)
//! or sent.

use super::worker::Worker;
use crate::core::effect::Delivery;
use crate::core::input::{Input, Undeliverable};

impl Worker {
    /// Park `d` when its session is unsure; whether it was parked.
    pub(super) fn park(&mut self, d: &Delivery) -> bool {
        let Some(s) = self.sessions.get(&d.session) else {
            return false;
        };
        if !s.unsure {
            return false;
        }
        s.parked.push(d.clone());
        tracing::debug!(SESSION = %d.session, "{} waits for the running turn of the codex thread to end: one of reveille's prompts may be starting in it", d.step);
        true
    }

    /// `name`'s thread is idle: what it holds of reveille's is read again,
    /// and every parked prompt is delivered — found there, or sent.
    pub(super) fn settle(&mut self, name: &str) {
        let Some(s) = self.sessions.get(name) else {
            return;
        };
        if !s.unsure {
            return;
        }
        s.unsure = false;
        let parked = std::mem::take(&mut s.parked);
        let thread = s.thread.clone();
        if let Some(thread) = thread {
            if let Err(why) = self.read_held(name, &thread) {
                tracing::warn!(SESSION = %name, "cannot read the codex thread's history: {why}");
            }
        }
        for d in parked {
            let input = self.deliver(&d);
            self.report_all(input);
        }
    }

    /// The connection went: every parked prompt is undeliverable for now
    /// (the engine tries again when the server is back).
    pub(super) fn unpark_all(&mut self) {
        let reason = self.down.clone();
        for d in self.sessions.unpark_all() {
            self.refuse_parked(d, &reason);
        }
    }

    /// `name`'s thread is gone (archived, deleted): its parked prompts are
    /// undeliverable, for the engine to try again (and be told why).
    pub(super) fn unpark(&mut self, name: &str, reason: &str) {
        let parked = match self.sessions.get(name) {
            Some(s) => {
                s.unsure = false;
                std::mem::take(&mut s.parked)
            }
            None => return,
        };
        for d in parked {
            self.refuse_parked(d, reason);
        }
    }

    fn refuse_parked(&self, d: Delivery, reason: &str) {
        self.report(Input::Undeliverable {
            session: d.session,
            seq: d.seq,
            why: Undeliverable {
                reason: reason.to_string(),
            },
        });
    }
}
