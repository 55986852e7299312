//! Learning that a turn started on one of reveille's prompts without being
//! subscribed to the thread. Codex tells a client that only sent
//! `initialize` nothing of a thread's turns and items (`turn/started`,
//! `item/started`, `turn/completed` go to its subscribers only, measured),
//! but it broadcasts every `thread/status/changed`. So at each change of a
//! thread that may hold a prompt of ours not yet seen starting, reveille
//! reads the thread's latest turns and queue (`attach.rs`'s `read_held`):
//! a user message carrying our id back (`clientId`) is a turn started on
//! that prompt. A turn that becomes visible only after its `active` (Codex
//! hides a starting turn for a few ms) is found at the next change — at
//! the latest when the thread goes idle again.

use serde_json::Value;

use super::worker::Worker;
use crate::core::session::AgentState;

impl Worker {
    /// `name`'s thread changed to `state`: read what it now holds of ours
    /// if that may have changed; parked prompts found there are delivered
    /// (`settle.rs`), turns started on ours are told, and a turn that
    /// failed is said in the journal.
    pub(super) fn look(&mut self, name: &str, state: Option<&AgentState>) {
        let Some(s) = self.sessions.get(name) else {
            return;
        };
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
        self.found_parked(name);
        self.tell_started(name);
        if idle {
            self.tell_failed(name, &turns);
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
