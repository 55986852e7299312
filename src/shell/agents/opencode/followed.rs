//! The opencode sessions reveille follows on one server — every session it
//! was asked to deliver to or made as a child — with what it last reported
//! of each and the prompt of reveille's that each is running. The event
//! follower and the courier both update it (behind one mutex, so their
//! reports reach the engine in the order they were decided), and it alone
//! turns what they learn into `Input`s, each under the name the engine
//! knows the session by (a child's is the engine's, not opencode's id:
//! `names`):
//!
//! - `report`: every state seen, as a look (`Input::Observed`), changed
//!   or not — the engine keeps the newest look and decides by it;
//! - `posted`: reveille's prompt there — the evidence of its taking (its
//!   answer: delivered, and the turn started, once each) and what it holds
//!   back (a second prompt while its turn runs).
//!
//! Nothing here reads a clock: how long a prompt may go unanswered is the
//! engine's `record` window (`core::confirm::OPENCODE_RECORD`), and which
//! state holds is the engine's newest look.

mod posted;
mod report;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

pub use self::posted::{Guard, Posted};
pub use self::report::Mark;
use super::api::MessageInfo;
use super::waits::Waits;
use crate::core::input::Input;
use crate::core::session::Kind;
use crate::shell::agents::presence::Presence;
use crate::shell::backend::Reports;

/// One followed session.
#[derive(Debug, Default)]
struct Session {
    /// The engine's name for it when that is not `opencode:<its id>` (a
    /// child reveille made).
    name: Option<String>,
    /// Its working directory, once its record was read.
    directory: Option<String>,
    /// What was last reported (`None`: nothing yet).
    reported: Option<Presence>,
    /// How many states the event stream gave for it: a state read by a
    /// call is stale if the stream spoke while the call was under way.
    streamed: u64,
    /// The state as last seen, before tool detail is added.
    busy_with_tool: Option<String>,
    /// The requests it waits on a person for.
    waits: Waits,
    /// Reveille's prompt it runs or is about to run.
    posted: Option<Posted>,
    /// Its transcript was searched for a copy of a prompt in this run:
    /// later deliveries need not look for one sent before a restart (only
    /// the first prompt of a session's outbox can have been in flight when
    /// reveille stopped).
    looked: bool,
    /// Its last messages, read when it was first followed (before any
    /// delivery): where the first delivery looks for a copy sent before a
    /// restart, so that no read of the transcript is on the wake path.
    snapshot: Option<Vec<MessageInfo>>,
    /// The last [`KEPT`] seqs reported delivered in this run: delivered
    /// again without a second post.
    delivered: Vec<u64>,
}

/// How many delivered seqs are remembered per session (the engine repeats
/// only the prompt in flight; a few suffice).
const KEPT: usize = 64;

/// [`Followed`] shared by the event follower and the courier.
pub struct Shared {
    followed: Mutex<Followed>,
}

impl Shared {
    pub fn new(reports: Reports) -> Shared {
        Shared {
            followed: Mutex::new(Followed::new(reports)),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, Followed> {
        // A panic while holding it leaves nothing half-done that matters
        // more than going on.
        self.followed.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Every followed session of one server.
pub struct Followed {
    reports: Reports,
    sessions: HashMap<String, Session>,
}

impl Followed {
    pub fn new(reports: Reports) -> Followed {
        Followed {
            reports,
            sessions: HashMap::new(),
        }
    }

    pub fn send(&self, input: Input) {
        // The loop has stopped when nobody receives: nothing to tell.
        let _ = self.reports.send(input);
    }

    /// Start following session `id` (a bare opencode id).
    pub fn learn(&mut self, id: &str) {
        self.sessions.entry(id.to_string()).or_default();
    }

    pub fn forget(&mut self, id: &str) {
        self.sessions.remove(id);
    }

    /// The engine calls followed session `id` `name` (a child).
    pub fn call(&mut self, id: &str, name: &str) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.name = Some(name.to_string());
        }
    }

    /// The id of the followed session the engine calls `name`.
    pub fn find(&self, name: &str) -> Option<String> {
        self.sessions
            .iter()
            .find(|(_, s)| s.name.as_deref() == Some(name))
            .map(|(id, _)| id.clone())
    }

    /// Whether `id` is followed and its state was reported.
    pub fn reported(&self, id: &str) -> bool {
        self.sessions.get(id).is_some_and(|s| s.reported.is_some())
    }

    /// What the engine calls session `id`.
    fn engine_name(&self, id: &str) -> String {
        match self.sessions.get(id).and_then(|s| s.name.clone()) {
            Some(name) => name,
            None => Kind::Opencode.qualify(id),
        }
    }

    /// Every followed session, with its directory when known.
    pub fn ids(&self) -> Vec<(String, Option<String>)> {
        self.sessions
            .iter()
            .map(|(id, s)| (id.clone(), s.directory.clone()))
            .collect()
    }

    pub fn directory(&self, id: &str) -> Option<String> {
        self.sessions.get(id)?.directory.clone()
    }

    pub fn set_directory(&mut self, id: &str, directory: &str) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.directory = Some(directory.to_string());
        }
    }

    /// Whether a delivery to `id` must first look for a copy of its prompt
    /// already in the transcript: the first of this run (one may have been
    /// posted before reveille restarted).
    pub fn must_look(&self, id: &str) -> bool {
        self.sessions.get(id).is_none_or(|s| !s.looked)
    }

    /// The transcript of `id` was searched for a copy (found or not).
    pub fn looked(&mut self, id: &str) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.looked = true;
        }
    }

    /// Keep `messages`, the session's last ones, for its first delivery's
    /// look (unless one looked already).
    pub fn keep_snapshot(&mut self, id: &str, messages: Vec<MessageInfo>) {
        if let Some(s) = self.sessions.get_mut(id).filter(|s| !s.looked) {
            s.snapshot = Some(messages);
        }
    }

    /// The messages kept for a look, once.
    pub fn take_snapshot(&mut self, id: &str) -> Option<Vec<MessageInfo>> {
        self.sessions.get_mut(id)?.snapshot.take()
    }
}

#[cfg(test)]
mod tests;
