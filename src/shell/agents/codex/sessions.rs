//! What the Codex backend knows of each `codex:` session the engine has
//! named: the thread it is, whether this connection is subscribed to it,
//! the state last reported, and which of reveille's prompts the thread
//! holds. A session is known from the first prompt (or child) for it on,
//! so that when the app-server comes back every one of them is reported
//! again and the engine retries.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::core::input::Input;
use crate::core::session::AgentState;

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
    /// Resumed on the current connection: its turns' notifications come
    /// here. (A thread with no turn yet can be attached, not subscribed.)
    pub subscribed: bool,
    /// What `thread/resume` said of it, for a child's settings: `cwd`,
    /// `model`, `modelProvider`, `approvalPolicy`, `sandbox`.
    pub resumed: Value,
    /// The state last reported; `None` until one was.
    reported: Option<Option<AgentState>>,
    /// reveille's prompts in the thread, by client id.
    pub held: HashMap<String, Held>,
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

    /// Record `state` for `name`: the `SessionState` to report when it
    /// differs from the last one reported.
    pub fn set_state(&mut self, name: &str, state: Option<AgentState>) -> Option<Input> {
        let s = self.map.get_mut(name)?;
        if s.reported.as_ref() == Some(&state) {
            return None;
        }
        s.reported = Some(state.clone());
        Some(Input::SessionState {
            session: name.to_string(),
            state,
        })
    }

    /// The connection is gone: nothing is attached, every session's
    /// program is not reachable.
    pub fn all_down(&mut self) -> Vec<Input> {
        let names = self.names();
        names
            .iter()
            .filter_map(|n| {
                let s = self.map.get_mut(n)?;
                s.attached = false;
                s.subscribed = false;
                self.set_state(n, None)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_reported_once_per_change_and_gone_when_the_server_goes() {
        let mut s = Sessions::default();
        s.know("codex:t").thread = Some("t".into());
        s.get("codex:t").unwrap().attached = true;
        let idle = Some(AgentState::Idle);
        assert!(s.set_state("codex:t", idle.clone()).is_some());
        assert_eq!(s.set_state("codex:t", idle), None);
        assert!(s
            .set_state("codex:t", Some(AgentState::Busy("active".into())))
            .is_some());
        assert_eq!(
            s.all_down(),
            vec![Input::SessionState {
                session: "codex:t".into(),
                state: None
            }]
        );
        assert!(!s.get("codex:t").unwrap().attached);
        assert_eq!(s.all_down(), vec![]);
        assert_eq!(s.of_thread("t"), vec!["codex:t".to_string()]);
        assert_eq!(s.set_state("codex:unknown", None), None);
    }
}
