//! Learning that a turn started on one of reveille's prompts without being
//! subscribed to the thread. Codex tells a client that only sent
//! `initialize` nothing of a thread's turns and items (`turn/started`,
//! `item/started`, `turn/completed` go to its subscribers only, measured),
//! but it broadcasts every `thread/status/changed`. So at each change of a
//! thread that may hold a prompt of ours not yet seen starting, reveille
//! reads the thread's latest turns and queue (`attach.rs`'s `read_held`):
//! a user message carrying our id back (`clientId`) is a turn started on
//! that prompt.
//!
//! Codex hides a prompt while it starts its turn (`dispatching`: in
//! neither the queue nor the turns, ~30 ms, up to ~70 ms on two loaded
//! cores), and the status that tells of the turn comes in that moment. A
//! read that finds a prompt of ours in neither looks again [`AGAIN`] later,
//! at most [`LOOKS`] times after each status change: the turn is seen
//! starting a few ms after it became visible, not only when it ends.
//!
//! `AGAIN` and its `Instant`s pace observation only — when the thread is
//! read, never whether a prompt was taken: such a read can find no more
//! than a turn started on a prompt already delivered (`TurnStarted`, for
//! the journal and the reminders). Whether a prompt was taken is the
//! engine's (`core::taken`), with Codex's hidden dispatch as its window.

use std::time::{Duration, Instant};

use serde_json::Value;

/// How soon a prompt Codex is starting is looked for again.
pub const AGAIN: Duration = Duration::from_millis(20);
/// How many times, after one status change: 2 s, well past the longest
/// dispatch seen; after that the next status change looks again.
pub const LOOKS: u32 = 100;

use super::worker::Worker;
use crate::core::session::AgentState;

impl Worker {
    /// `name`'s thread changed to `state`: read what it now holds of ours
    /// if that may have changed; turns started on ours are told, and a
    /// turn that failed is said in the journal.
    pub(super) fn look(&mut self, name: &str, state: Option<&AgentState>) {
        let Some(s) = self.sessions.get(name) else {
            return;
        };
        s.looks_left = LOOKS;
        self.read_again(name, state);
    }

    /// `name`'s thread was just read: if Codex is starting a prompt of
    /// ours, it is read again soon, as after a status change.
    pub(super) fn look_soon(&mut self, name: &str) {
        if let Some(s) = self.sessions.get(name).filter(|s| s.hidden) {
            s.looks_left = LOOKS - 1;
            s.look_again = Some(Instant::now() + AGAIN);
        }
    }

    /// Read `name`'s thread again where it was due.
    pub(super) fn looks_due(&mut self, now: Instant) {
        for name in self.sessions.looks_due(now) {
            if let Some(s) = self.sessions.get(&name) {
                s.look_again = None;
            }
            self.read_again(&name, None);
        }
    }

    fn read_again(&mut self, name: &str, state: Option<&AgentState>) {
        let Some(s) = self.sessions.get(name) else {
            return;
        };
        s.look_again = None;
        let idle = matches!(state, Some(AgentState::Idle));
        let Some(thread) = s.thread.clone().filter(|_| s.attached) else {
            return;
        };
        if !s.awaits_start() && !idle {
            return;
        }
        let turns = match self.read_held(name, &thread) {
            Ok(turns) => turns,
            Err(why) => {
                tracing::debug!(SESSION = %name, "could not read the codex thread: {why}");
                return;
            }
        };
        self.tell_started(name);
        if idle {
            self.tell_failed(name, &turns);
        }
        if let Some(s) = self.sessions.get(name) {
            if s.hidden && s.looks_left > 0 {
                s.looks_left -= 1;
                s.look_again = Some(Instant::now() + AGAIN);
            }
        }
    }

    /// No input says "the turn failed": the journal does, once per turn, so
    /// a person sees why the agent did not act (the reminder of the open
    /// step comes later, as for any idle agent).
    fn tell_failed(&mut self, name: &str, turns: &Value) {
        let newest = &turns["data"][0];
        if newest["status"] != "failed" {
            return;
        }
        let Some(id) = newest["id"].as_str() else {
            return;
        };
        let Some(s) = self.sessions.get(name) else {
            return;
        };
        if s.failed_told.as_deref() == Some(id) {
            return;
        }
        s.failed_told = Some(id.to_string());
        let error = newest["error"]["message"]
            .as_str()
            .unwrap_or("no reason given");
        tracing::warn!(SESSION = %name, "codex turn failed: {error}");
    }
}
