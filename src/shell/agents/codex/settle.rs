//! Prompts that cannot be judged yet. Codex hides a queued turn from both
//! the thread's queue and its history while it starts it (`dispatching`:
//! `thread_queue_processor.rs`, "dispatching queued turns are not
//! client-visible"). The thread's status says idle for the first part of
//! that, then active before the prompt shows in the history: seen here
//! with 0.171.0, idle up to ~20 ms after the prompt left the queue and
//! hidden up to ~70 ms on two loaded cores. So a prompt handed out again
//! (`Delivery::again`: reveille restarted, or a write whose answer was
//! lost) and found in neither may be starting at that very moment;
//! writing it again runs it twice (seen in CI: a reveille restarted just
//! as the turn before ended).
//!
//! Such a prompt is parked, not written. A busy thread is looked at again
//! once idle — a turn running may be that very prompt, and a prompt
//! written now would wait for the turn all the same. An idle one is looked
//! at again after [`GRACE`], unless a turn starts first (then once idle):
//! a prompt Codex was starting is a running turn well before that. Found
//! then, it is delivered (and its turn told); not found, it is written.
//! A parked prompt found in the thread at any of its status changes
//! (`started.rs`) is delivered at once.

use std::time::{Duration, Instant};

use super::sessions::Settle;
use super::worker::Worker;
use crate::core::effect::Delivery;
use crate::core::input::{Input, Undeliverable};
use crate::core::session::AgentState;

/// How long an idle thread is watched for a hidden start before a prompt
/// not found is written again: several times the longest idle part of a
/// dispatch seen here. Paid only by a prompt handed out again to an idle
/// thread, never by a first delivery.
pub const GRACE: Duration = Duration::from_millis(200);

impl Worker {
    /// Park `d` (handed out again, found nowhere) until it can be judged.
    pub(super) fn park(&mut self, d: &Delivery) {
        let busy = self.sessions.is_busy(&d.session);
        // Known (it was attached), and kept whatever: a parked prompt is
        // always answered, or its lane would wait for ever.
        let s = self.sessions.know(&d.session);
        s.parked.push(d.clone());
        s.settle = Some(match s.settle {
            Some(Settle::WhenIdle) => Settle::WhenIdle,
            _ if busy => Settle::WhenIdle,
            Some(at) => at,
            None => Settle::At(Instant::now() + GRACE),
        });
        tracing::debug!(SESSION = %d.session, "{} was handed out before and is not in the codex thread: waiting to see whether codex is starting it unseen", d.step);
    }

    /// `name`'s state changed to `state`: a turn running means waiting
    /// for idle; idle settles what waited for it.
    pub(super) fn settle_on(&mut self, name: &str, state: Option<&AgentState>) {
        let Some(s) = self.sessions.get(name) else {
            return;
        };
        match (state, s.settle) {
            (Some(AgentState::Busy(_) | AgentState::Waiting(_)), Some(Settle::At(_))) => {
                s.settle = Some(Settle::WhenIdle)
            }
            (Some(AgentState::Idle), Some(Settle::WhenIdle)) => self.settle(name),
            _ => {}
        }
    }

    /// Settle every session whose grace ended at `now` (one that went busy
    /// meanwhile waits for idle instead).
    pub(super) fn settle_due(&mut self, now: Instant) {
        for name in self.sessions.due(now) {
            if self.sessions.is_busy(&name) {
                if let Some(s) = self.sessions.get(&name) {
                    s.settle = Some(Settle::WhenIdle);
                }
            } else {
                self.settle(&name);
            }
        }
    }

    /// Look at `name`'s thread again, and deliver every parked prompt:
    /// found there, or written.
    fn settle(&mut self, name: &str) {
        let Some(s) = self.sessions.get(name) else {
            return;
        };
        s.settle = None;
        let parked = std::mem::take(&mut s.parked);
        let Some(thread) = s.thread.clone() else {
            return self.refuse_all(parked, "the codex thread is not known any more");
        };
        if let Err(why) = self.read_held(name, &thread) {
            return self.refuse_all(parked, &why);
        }
        for d in parked {
            let id = self.ids.id(d.seq);
            let input = match self.already_held(&d, &id) {
                Some(input) => input,
                None => self.queue(&d, &thread, id),
            };
            self.report(input);
        }
    }

    /// Every parked prompt of `name` the thread was just read to hold —
    /// queued, or with a turn started on it — is delivered (and its turn
    /// told), without waiting for its grace or for idle.
    pub(super) fn found_parked(&mut self, name: &str) {
        let Some(s) = self.sessions.get(name) else {
            return;
        };
        let (found, parked): (Vec<Delivery>, Vec<Delivery>) =
            std::mem::take(&mut s.parked).into_iter().partition(|d| {
                let held = s.held.get(&self.ids.id(d.seq));
                held.is_some_and(|h| h.text == d.text)
            });
        if parked.is_empty() {
            s.settle = None;
        }
        s.parked = parked;
        for d in found {
            let id = self.ids.id(d.seq);
            let input = self.already_held(&d, &id);
            self.report_all(input);
        }
    }

    /// The connection went: every parked prompt is undeliverable for now
    /// (the engine tries again when the server is back).
    pub(super) fn unpark_all(&mut self) {
        let reason = self.down.clone();
        let parked = self.sessions.unpark_all();
        self.refuse_all(parked, &reason);
    }

    /// `name`'s thread is gone (archived, deleted): its parked prompts are
    /// undeliverable, for the engine to try again (and be told why).
    pub(super) fn unpark(&mut self, name: &str, reason: &str) {
        let Some(s) = self.sessions.get(name) else {
            return;
        };
        s.settle = None;
        let parked = std::mem::take(&mut s.parked);
        self.refuse_all(parked, reason);
    }

    fn refuse_all(&self, parked: Vec<Delivery>, reason: &str) {
        for d in parked {
            self.report(Input::Undeliverable {
                session: d.session,
                seq: d.seq,
                why: Undeliverable {
                    reason: reason.to_string(),
                },
            });
        }
    }
}
