//! The requests an opencode session waits on a person for — permissions
//! asked (`permission.asked`), questions asked (`question.asked`) — until
//! each is replied to or rejected. `GET /session/status` stays `busy`
//! meanwhile: only these say the turn is stopped for a person, so a busy
//! session with one pending is shown waiting (SPEC §12). reveille never
//! replies to one.

use crate::core::session::{AgentState, Wait};

/// A session's pending requests, oldest first.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Waits(Vec<(String, Wait)>);

impl Waits {
    /// Request `request` was asked (`Some`) or answered (`None`).
    pub fn set(&mut self, request: &str, wait: Option<Wait>) {
        self.0.retain(|(id, _)| id != request);
        if let Some(wait) = wait {
            self.0.push((request.to_string(), wait));
        }
    }

    /// Every pending request, as the server lists them.
    pub fn replace(&mut self, pending: Vec<(String, Wait)>) {
        self.0 = pending;
    }

    /// `state` as shown: a running turn with a request pending waits for
    /// a person (for the oldest one). A turn that ended, or a session
    /// gone, has nothing pending any more.
    pub fn over(&mut self, state: Option<AgentState>) -> Option<AgentState> {
        match (state, self.0.first()) {
            (Some(AgentState::Busy(_) | AgentState::Waiting(_)), Some((_, wait))) => {
                Some(AgentState::Waiting(wait.clone()))
            }
            (state @ (Some(AgentState::Idle) | None), _) => {
                self.0.clear();
                state
            }
            // Its last request answered: the turn goes on.
            (Some(AgentState::Waiting(_)), None) => Some(AgentState::Busy("busy".into())),
            (state, None) => state,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_session_with_a_request_pending_waits_until_it_is_answered() {
        let mut w = Waits::default();
        let busy = || Some(AgentState::Busy("busy".into()));
        assert_eq!(w.over(busy()), busy());
        w.set("per_1", Some(Wait::approval("sed -i x f")));
        w.set("que_1", Some(Wait::question("Which?")));
        let first = Some(AgentState::Waiting(Wait::approval("sed -i x f")));
        assert_eq!(w.over(busy()), first);
        w.set("per_1", None);
        let second = Some(AgentState::Waiting(Wait::question("Which?")));
        assert_eq!(w.over(busy()), second);
        w.set("que_1", None);
        assert_eq!(w.over(second), busy());
        w.set("que_1", Some(Wait::question("Which?")));
        // The turn ended (a rejection ends it): nothing is pending.
        assert_eq!(w.over(Some(AgentState::Idle)), Some(AgentState::Idle));
        assert!(w.is_empty());
    }
}
