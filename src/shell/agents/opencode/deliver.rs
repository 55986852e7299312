//! One prompt to one opencode session, on the backend's own thread.
//!
//! opencode's `prompt_async` on a busy session does not wait for the turn
//! to end: the text is stored at once, and the running turn's next model
//! call (after a tool result) already carries it — merged into a turn that
//! is not its own. So a prompt goes only to an **idle** session, checked
//! right before the post. In order:
//!
//! 1. a prompt already delivered in this run is delivered again, not sent;
//! 2. the session's record, once (is the server there, is the session on
//!    it, which directory is it in);
//! 3. reveille's previous prompt there has finished its turn;
//! 4. no other opencode process may be running the session (`owner`);
//! 5. on the first delivery to the session in this run: a copy of this
//!    prompt (our `messageID` tag) already in the transcript means it
//!    reached the agent before reveille restarted — delivered, not sent
//!    again;
//! 6. the session is idle (`GET /session/status` of its directory);
//! 7. `prompt_async` with our `messageID`.
//!
//! What it saw is reported as evidence, and the engine's one rule
//! (`core::taken`) decides: a check that found the session busy (3, 6) is
//! `Evidence::Busy`, after a look at the state seen — the prompt waits for
//! the idle; a call that reached nothing is `Evidence::Refused` — retried;
//! a post answered 204 is `Evidence::Sent`, not delivered: a message
//! stored while the session starts another client's turn can be left
//! unrun. Its answer (its turn) tells `Delivered`; else the engine asks,
//! after opencode's `record` window, for a look at the session's messages
//! (`look.rs`). A post that broke midway (the request went out, no answer
//! came back) is `Evidence::Unsure`: it may have been taken, so it is
//! looked for the same way — never posted again on a doubt.

use std::sync::Arc;

use super::api::{Api, ApiError, MessageInfo};
use super::followed::{Guard, Shared};
use super::{message_id, owner};
use crate::core::effect::Delivery;
use crate::core::input::{Evidence, Input, Reached};
use crate::shell::agents::remote::link::Why;

/// How far back the transcript is searched for a copy of a prompt sent
/// before a restart: the prompt in flight when reveille stopped, and the
/// turn the agent ran on it.
pub const LOOK_BACK: usize = 100;

/// Delivers prompts to the sessions of one server.
pub struct Courier {
    pub api: Api,
    pub project: String,
    pub shared: Arc<Shared>,
}

/// What became of a delivery that wrote or found its prompt.
enum Done {
    /// Posted now.
    Posted,
    /// Delivered before in this run: not sent again.
    Again,
    /// Found in the transcript as message `id`, sent before; `answered`:
    /// its turn started.
    Found { id: String, answered: bool },
}

impl Courier {
    /// Deliver `d` to the bare session `id`, and report what was seen.
    pub fn deliver(&self, d: &Delivery, id: &str) {
        self.shared.lock().learn(id);
        let outcome = self.attempt(d, id);
        let mut f = self.shared.lock();
        if let Ok(Done::Found { id: message, .. }) = &outcome {
            tracing::info!(project = %self.project, session = %d.session, step = %d.step, "{} reached {} before reveille restarted (its message {message} is in the transcript): not sent again", d.step, d.session);
        }
        match outcome {
            Ok(Done::Found { answered: true, .. }) => {
                f.outcome(id, delivered(d));
                f.turn_started(id, d.seq);
            }
            // Posted: whether it was taken, its answer tells, or else the
            // engine's look (`look.rs`) after opencode's `record` window.
            Ok(Done::Posted) => f.sent(id, d.seq, evidence(d, Evidence::Sent)),
            Ok(Done::Again | Done::Found { .. }) => f.outcome(id, delivered(d)),
            // Broke midway: it may be there, and an answer to it tells as
            // for one sent.
            Err(unsure @ Evidence::Unsure(_)) => f.sent(id, d.seq, evidence(d, unsure)),
            Err(seen) => f.outcome(id, evidence(d, seen)),
        }
    }

    /// The delivery, or what stopped it.
    fn attempt(&self, d: &Delivery, id: &str) -> Result<Done, Evidence> {
        let began = std::time::Instant::now();
        if self.shared.lock().guard(id, d.seq) == Guard::Taken {
            return Ok(Done::Again);
        }
        let refused = Evidence::Refused;
        let directory = self.directory(id).map_err(refused)?;
        self.previous_turn_over(id, d.seq, &directory)?;
        if self.api.server.is_local() {
            owner::check(self.api.server.port(), self.api.server.url(), &directory)
                .map_err(refused)?;
        }
        if self.shared.lock().must_look(id) {
            let copy = self
                .find_copy(id, d.seq)
                .map_err(|e| refused(self.failed(id, e)))?;
            self.shared.lock().looked(id);
            if let Some((id, answered)) = copy {
                return Ok(Done::Found { id, answered });
            }
        }
        let before = self.shared.lock().mark(id);
        let state = self
            .api
            .state(id, &directory)
            .map_err(|e| refused(self.failed(id, e)))?;
        match self.shared.lock().polled(id, Some(state), before) {
            Some(state) if state.is_idle() => {}
            Some(state) => {
                return Err(Evidence::Busy(format!(
                    "busy: waits for the running turn to end ({state})"
                )))
            }
            None => {
                return Err(refused(format!(
                    "session {id} was deleted, or its server's event stream broke, meanwhile"
                )))
            }
        }
        // Where a wake-up's time goes, for whoever measures it.
        tracing::debug!(project = %self.project, session = %d.session, "posting seq {} to {id}: checks took {:?}", d.seq, began.elapsed());
        self.post(d, id)
    }

    /// The session's directory: its status lives there. Read from its
    /// record once; a session deleted since is caught by `prompt_async`.
    pub(super) fn directory(&self, id: &str) -> Result<String, String> {
        if let Some(d) = self.shared.lock().directory(id) {
            return Ok(d);
        }
        let info = self.api.session(id).map_err(|e| self.failed(id, e))?;
        self.shared.lock().set_directory(id, &info.directory);
        Ok(info.directory)
    }

    /// `Err` while the turn on reveille's previous prompt to `id` runs; a
    /// turn that ended unseen (the event stream was down) is noticed here.
    fn previous_turn_over(&self, id: &str, seq: u64, directory: &str) -> Result<(), Evidence> {
        let Guard::Running(previous) = self.shared.lock().guard(id, seq) else {
            return Ok(());
        };
        let before = self.shared.lock().mark(id);
        let state = self
            .api
            .state(id, directory)
            .map_err(|e| Evidence::Refused(self.failed(id, e)))?;
        let mut f = self.shared.lock();
        f.polled(id, Some(state), before);
        if f.guard(id, seq) == Guard::Free {
            return Ok(());
        }
        Err(Evidence::Busy(format!(
            "busy: waits for the turn on reveille's previous prompt ({previous}) to end"
        )))
    }

    /// Get ready to deliver to `id`, which the engine has work for: its
    /// last messages are read now, off the wake path (on a loaded machine
    /// the server's first read of a transcript took 600 ms), for the first
    /// delivery's look. A prompt of a reveille killed mid-post that the
    /// server stores after this read is missed by it: the window is the
    /// milliseconds between `prompt_async`'s answer and its store.
    pub fn prepare(&self, id: &str) {
        if !self.shared.lock().must_look(id) {
            return;
        }
        if let Ok(messages) = self.api.messages(id, LOOK_BACK) {
            self.shared.lock().keep_snapshot(id, messages);
        }
    }

    /// A copy of prompt `seq` in the transcript: its id, and whether it
    /// was answered.
    fn find_copy(&self, id: &str, seq: u64) -> Result<Option<(String, bool)>, ApiError> {
        let tag = message_id::tag(&self.project, seq);
        let kept = self.shared.lock().take_snapshot(id);
        let messages = match kept {
            Some(messages) => messages,
            None => self.api.messages(id, LOOK_BACK)?,
        };
        Ok(copy_in(&messages, &tag))
    }

    /// Post the prompt: sent (204), not known (the exchange broke after
    /// the request went out, or the server answered an error it may have
    /// taken the prompt with), or refused (nothing reached the server).
    fn post(&self, d: &Delivery, id: &str) -> Result<Done, Evidence> {
        let message = message_id::new_id(&self.project, d.seq);
        self.shared.lock().posted(id, d.seq, &message);
        match self.api.prompt(id, &message, &d.text) {
            Ok(()) => {
                tracing::debug!(project = %self.project, session = %d.session, "posted seq {} to {id} as {message}", d.seq);
                Ok(Done::Posted)
            }
            Err(e @ ApiError::Failed(_)) => Err(Evidence::Unsure(format!(
                "posting it as {message} broke midway: {}",
                self.failed(id, e)
            ))),
            Err(e) => {
                self.shared.lock().unpost(id, &message);
                Err(Evidence::Refused(self.failed(id, e)))
            }
        }
    }

    /// The words for a failed call; a server that is not there, or a
    /// session not on it, is also the session's state (`None`).
    pub(super) fn failed(&self, id: &str, e: ApiError) -> String {
        match &e {
            ApiError::Unreachable(link) => {
                self.shared.lock().unreachable(id, &e.to_string());
                match link.why {
                    Why::NoConnection(_) if self.api.server.is_local() => format!(
                        "{e}: start it with `opencode --port {port}` or `opencode serve --port {port}`",
                        port = self.api.server.port()
                    ),
                    _ => e.to_string(),
                }
            }
            ApiError::NoSession(_) => {
                self.shared.lock().state(id, None);
                e.to_string()
            }
            ApiError::Failed(_) => e.to_string(),
        }
    }
}

/// A copy of the prompt tagged `tag` among `messages`: its id, and
/// whether it was answered (an assistant message whose parent it is). A
/// prompt posted again after its first copy was left unrun has several
/// copies: an answered one, else the newest.
pub(super) fn copy_in(messages: &[MessageInfo], tag: &str) -> Option<(String, bool)> {
    let answered = |id: &str| {
        messages
            .iter()
            .any(|m| m.role == "assistant" && m.parent.as_deref() == Some(id))
    };
    let copies = messages
        .iter()
        .filter(|m| m.role == "user" && message_id::carries(&m.id, tag));
    let mut newest = None;
    for copy in copies {
        if answered(&copy.id) {
            return Some((copy.id.clone(), true));
        }
        newest = Some(copy.id.clone());
    }
    newest.map(|id| (id, false))
}

pub(super) fn evidence(d: &Delivery, evidence: Evidence) -> Input {
    Input::Evidence {
        session: d.session.clone(),
        seq: d.seq,
        evidence,
    }
}

fn delivered(d: &Delivery) -> Input {
    Input::Delivered {
        session: d.session.clone(),
        seq: d.seq,
        reached: Reached::Accepted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: String, role: &str, parent: Option<&str>) -> MessageInfo {
        MessageInfo {
            id,
            role: role.into(),
            parent: parent.map(str::to_string),
        }
    }

    #[test]
    fn of_a_prompt_posted_twice_the_answered_copy_counts_else_the_newest() {
        let tag = message_id::tag("it", 4);
        let (first, second) = (message_id::new_id("it", 4), message_id::new_id("it", 4));
        let other = message_id::new_id("it", 5);
        let mut messages = vec![
            message(first.clone(), "user", None),
            message(other.clone(), "user", None),
            message("msg_a".into(), "assistant", Some(&other)),
            message(second.clone(), "user", None),
        ];
        assert_eq!(copy_in(&messages, &tag), Some((second.clone(), false)));
        messages.push(message("msg_b".into(), "assistant", Some(&second)));
        assert_eq!(copy_in(&messages, &tag), Some((second, true)));
        messages.pop();
        messages.push(message("msg_c".into(), "assistant", Some(&first)));
        assert_eq!(copy_in(&messages, &tag), Some((first, true)));
        assert_eq!(copy_in(&messages, &message_id::tag("it", 6)), None);
    }
}
