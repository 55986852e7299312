//! What the Codex backend knows of each `codex:` session the engine has
//! named: the thread it is, whether it is reachable on this connection,
//! the state last reported, and which of reveille's prompts the thread
//! holds. A session is known from the first prompt (or child) for it on,
//! so that when the app-server comes back every one of them is reported
//! again and the engine retries.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use serde_json::Value;

use crate::core::input::Input;
use crate::core::session::AgentState;
use crate::shell::agents::presence::{self, Presence};

/// One of reveille's prompts as the thread holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Its text (a reused id with another text is another prompt).
    pub text: String,
    /// A turn started on it (it is in the history, not only queued).
    pub started: bool,
    /// The engine was told (`TurnStarted`) in this run.
    pub told: bool,
}

/// One `codex:` session.
#[derive(Debug, Default)]
pub struct Session {
    /// The thread id it resolved to.
    pub thread: Option<String>,
    /// Reachable on the current connection: this server is the thread's
    /// writer, and a prompt can be queued.
    pub attached: bool,
    /// What a child inherits of it (`attach.rs`): `cwd`, `model`,
    /// `modelProvider`, and `approvalPolicy`, `sandbox` when a resume
    /// told them.
    pub settings: Value,
    /// The last turn whose failure was said in the journal.
    pub failed_told: Option<String>,
    /// At the last read, a prompt of ours was in neither the thread's
    /// queue nor its turns: Codex is starting it (`started.rs`).
    pub hidden: bool,
    /// When the thread is read again for it, and how many more times.
    pub look_again: Option<Instant>,
    pub looks_left: u32,
    /// What was last reported; `None` until something was.
    reported: Option<Presence>,
    /// reveille's prompts in the thread, by client id.
    pub held: HashMap<String, Held>,
}

impl Session {
    /// Whether a turn may have started on a prompt of ours that the engine
    /// has not been told of: the thread's turns are worth reading.
    pub fn awaits_start(&self) -> bool {
        self.held.values().any(|h| !h.started)
    }
}

/// Every known session, by the qualified id the engine uses.
#[derive(Debug, Default)]
pub struct Sessions {
    map: BTreeMap<String, Session>,
}

impl Sessions {
    /// The session `name` (`codex:<thread id or name>`), known from now on.
    pub fn know(&mut self, name: &str) -> &mut Session {
        self.map.entry(name.to_string()).or_default()
    }

    pub fn get(&mut self, name: &str) -> Option<&mut Session> {
        self.map.get_mut(name)
    }

    pub fn forget(&mut self, name: &str) -> Option<Session> {
        self.map.remove(name)
    }

    /// Every known session's name.
    pub fn names(&self) -> Vec<String> {
        self.map.keys().cloned().collect()
    }

    /// The sessions that are `thread`.
    pub fn of_thread(&self, thread: &str) -> Vec<String> {
        self.map
            .iter()
            .filter(|(_, s)| s.thread.as_deref() == Some(thread))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Record `state` for `name` (`None`: gone): the look to report (every
    /// look is told; `None` only for a session not known).
    pub fn set_state(&mut self, name: &str, state: Option<AgentState>) -> Option<Input> {
        let s = self.map.get_mut(name)?;
        Some(presence::tell(
            &mut s.reported,
            Presence::State(state),
            name,
        ))
    }

    /// The earliest instant some session's thread is to be read again.
    pub fn next_look(&self) -> Option<Instant> {
        self.map.values().filter_map(|s| s.look_again).min()
    }

    /// The sessions whose thread is to be read again at `now`.
    pub fn looks_due(&self, now: Instant) -> Vec<String> {
        let due = self
            .map
            .iter()
            .filter(|(_, s)| s.look_again.is_some_and(|at| at <= now));
        due.map(|(n, _)| n.clone()).collect()
    }

    /// `name`'s program cannot be reached (the server is down, `why`): the
    /// look to report, unless it was the last report.
    pub fn unreachable(&mut self, name: &str, why: &str) -> Option<Input> {
        let s = self.map.get_mut(name)?;
        Some(presence::tell(
            &mut s.reported,
            Presence::Unreachable(why.into()),
            name,
        ))
    }

    /// The connection is gone: nothing is attached, every session's
    /// program is not reachable.
    pub fn all_down(&mut self, why: &str) -> Vec<Input> {
        let names = self.names();
        names
            .iter()
            .filter_map(|n| {
                let s = self.map.get_mut(n)?;
                s.attached = false;
                self.unreachable(n, why)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_is_reported_and_gone_when_the_server_goes() {
        let mut s = Sessions::default();
        s.know("codex:t").thread = Some("t".into());
        s.get("codex:t").unwrap().attached = true;
        let idle = Some(AgentState::Idle);
        assert!(s.set_state("codex:t", idle.clone()).is_some());
        assert!(s.set_state("codex:t", idle).is_some(), "told again");
        assert!(s
            .set_state("codex:t", Some(AgentState::Busy("active".into())))
            .is_some());
        let down = Presence::Unreachable("down".into());
        assert_eq!(s.all_down("down"), vec![down.input("codex:t")]);
        assert!(!s.get("codex:t").unwrap().attached);
        assert_eq!(
            s.all_down("down"),
            vec![down.input("codex:t")],
            "told again"
        );
        assert_eq!(s.of_thread("t"), vec!["codex:t".to_string()]);
        // Found gone once the server is back: news.
        assert!(s.set_state("codex:t", None).is_some());
        assert_eq!(s.set_state("codex:unknown", None), None);
    }
}
