//! What a backend last told the engine of one session — its state, gone,
//! or its program unreachable — so that each change is told once, and a
//! session found gone after its program was unreachable is told gone: the
//! two are different news (a child keeps its step while its program is
//! away, and hands it back when it is gone).

use crate::core::input::{Input, Observation, Observer, Seen};
use crate::core::session::AgentState;

/// The last thing told of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presence {
    /// Its state (`None`: gone).
    State(Option<AgentState>),
    /// Its program does not answer: why, with the address and the error.
    Unreachable(String),
}

impl Presence {
    /// The input that tells it, for `session` as the engine names it.
    pub fn input(&self, session: &str) -> Input {
        let seen = match self {
            Presence::State(Some(state)) => Seen::State(state.clone()),
            Presence::State(None) => Seen::Gone("no such session on its server".into()),
            Presence::Unreachable(why) => Seen::Unreachable(why.clone()),
        };
        Input::Observed(Observation::new(
            session.to_string(),
            seen,
            Observer::Events,
        ))
    }

    /// Whether it was idle.
    pub fn is_idle(&self) -> bool {
        matches!(self, Presence::State(Some(AgentState::Idle)))
    }

    /// Whether it was busy (running a turn).
    pub fn is_busy(&self) -> bool {
        matches!(self, Presence::State(Some(AgentState::Busy(_))))
    }
}

/// Tell `now` unless it is what was told last (`last`, updated): the input
/// to send, if any.
pub fn tell(last: &mut Option<Presence>, now: Presence, session: &str) -> Option<Input> {
    if last.as_ref() == Some(&now) {
        return None;
    }
    let input = now.input(session);
    *last = Some(now);
    Some(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down() -> Presence {
        Presence::Unreachable("the server at :1 does not answer".into())
    }

    #[test]
    fn each_change_is_told_once_and_gone_after_unreachable_is_news() {
        let mut last = None;
        let idle = Presence::State(Some(AgentState::Idle));
        assert!(tell(&mut last, idle.clone(), "s").is_some());
        assert_eq!(tell(&mut last, idle, "s"), None);
        assert_eq!(tell(&mut last, down(), "s"), Some(down().input("s")));
        assert_eq!(tell(&mut last, down(), "s"), None);
        assert_eq!(
            tell(&mut last, Presence::State(None), "s"),
            Some(Presence::State(None).input("s"))
        );
    }
}
