//! What a backend last told the engine of one session — its state, gone,
//! or its program unreachable. Every look is told, changed or not: the
//! engine owns what a session is and keeps the newest look, so a follower
//! that filtered by its own last report could leave the engine holding a
//! state another observer told it (a delivery's busy) for ever.

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

    /// Whether it was busy (running a turn, or halfway through one and
    /// waiting for a person).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            Presence::State(Some(AgentState::Busy(_) | AgentState::Waiting(_)))
        )
    }
}

/// Tell `now` (`last` keeps it, for what the backend decides by it): the
/// input to send.
pub fn tell(last: &mut Option<Presence>, now: Presence, session: &str) -> Input {
    let input = now.input(session);
    *last = Some(now);
    input
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down() -> Presence {
        Presence::Unreachable("the server at :1 does not answer".into())
    }

    #[test]
    fn every_look_is_told_and_kept_as_the_last() {
        let mut last = None;
        let idle = Presence::State(Some(AgentState::Idle));
        let told = tell(&mut last, idle.clone(), "s");
        assert_eq!(told, idle.input("s"));
        assert_eq!(tell(&mut last, idle.clone(), "s"), told, "told again");
        assert_eq!(tell(&mut last, down(), "s"), down().input("s"));
        assert_eq!(last, Some(down()));
    }
}
