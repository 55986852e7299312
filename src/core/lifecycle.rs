//! The per-plan state machine: Todo → Wip → Done | Abandoned.
//!
//! The file-name suffix is what agents change; the engine turns each observed
//! suffix into one of the named transitions below. A `Lifecycle` cannot be
//! set directly, so every move is one of these rules and each rule is
//! table-tested.

use serde::Serialize;

use super::name::FileState;

/// Where a plan is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lifecycle {
    Todo,
    Wip,
    Done,
    Abandoned,
}

/// The named transitions; the only way a `Lifecycle` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// `__todo` → `__wip`: work began.
    Start,
    /// `__todo`/`__wip` → `__done`: the goal is realised.
    Finish,
    /// `__todo`/`__wip` → `__abandoned`, or the file was deleted.
    Abandon,
    /// `__wip` → `__todo`: put back on the shelf.
    Shelve,
    /// `__done`/`__abandoned` → `__todo`/`__wip`: revived by a rename back.
    Reopen(Lifecycle),
}

impl Lifecycle {
    /// The state a plan is first seen in, from its file name.
    pub fn first_seen(state: FileState) -> Lifecycle {
        match state {
            FileState::Todo => Lifecycle::Todo,
            FileState::Wip => Lifecycle::Wip,
            FileState::Done => Lifecycle::Done,
            FileState::Abandoned => Lifecycle::Abandoned,
        }
    }

    /// Done and Abandoned plans wake no one.
    pub fn is_live(self) -> bool {
        matches!(self, Lifecycle::Todo | Lifecycle::Wip)
    }

    /// The transition that moves `self` to the state a renamed file shows,
    /// or `None` when the name shows the state the plan is already in.
    pub fn transition_to(self, state: FileState) -> Option<Transition> {
        use Lifecycle::*;
        let target = Lifecycle::first_seen(state);
        match (self, target) {
            // Same state, or one ended state to the other: nothing to do,
            // the plan wakes no one either way.
            (Todo, Todo) | (Wip, Wip) | (Done | Abandoned, Done | Abandoned) => None,
            (Todo, Wip) => Some(Transition::Start),
            (Todo | Wip, Done) => Some(Transition::Finish),
            (Todo | Wip, Abandoned) => Some(Transition::Abandon),
            (Wip, Todo) => Some(Transition::Shelve),
            (Done | Abandoned, to) => Some(Transition::Reopen(to)),
        }
    }

    /// Apply a transition. Returns `None` when the transition does not apply
    /// to this state (the caller logs it and keeps the state).
    pub fn apply(self, t: Transition) -> Option<Lifecycle> {
        use Lifecycle::*;
        match (self, t) {
            (Todo, Transition::Start) => Some(Wip),
            (Todo | Wip, Transition::Finish) => Some(Done),
            (Todo | Wip, Transition::Abandon) => Some(Abandoned),
            (Wip, Transition::Shelve) => Some(Todo),
            (Done | Abandoned, Transition::Reopen(to @ (Todo | Wip))) => Some(to),
            _ => None,
        }
    }
}

impl Transition {
    /// The word the journal uses for this transition.
    pub fn name(self) -> &'static str {
        match self {
            Transition::Start => "start",
            Transition::Finish => "finish",
            Transition::Abandon => "abandon",
            Transition::Shelve => "shelve",
            Transition::Reopen(_) => "reopen",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Lifecycle::*;
    use super::*;

    #[test]
    fn transition_table() {
        let table = [
            (Todo, Transition::Start, Some(Wip)),
            (Todo, Transition::Finish, Some(Done)),
            (Wip, Transition::Finish, Some(Done)),
            (Todo, Transition::Abandon, Some(Abandoned)),
            (Wip, Transition::Abandon, Some(Abandoned)),
            (Wip, Transition::Shelve, Some(Todo)),
            (Done, Transition::Reopen(Wip), Some(Wip)),
            (Abandoned, Transition::Reopen(Todo), Some(Todo)),
            // Illegal moves keep the state.
            (Wip, Transition::Start, None),
            (Done, Transition::Finish, None),
            (Done, Transition::Abandon, None),
            (Todo, Transition::Shelve, None),
            (Wip, Transition::Reopen(Todo), None),
            (Done, Transition::Reopen(Done), None),
        ];
        for (from, t, to) in table {
            assert_eq!(from.apply(t), to, "{from:?} --{t:?}-->");
        }
    }

    #[test]
    fn renames_map_to_named_transitions() {
        assert_eq!(Todo.transition_to(FileState::Wip), Some(Transition::Start));
        assert_eq!(Wip.transition_to(FileState::Done), Some(Transition::Finish));
        assert_eq!(Wip.transition_to(FileState::Wip), None);
        assert_eq!(
            Done.transition_to(FileState::Wip),
            Some(Transition::Reopen(Wip))
        );
        // Every transition a rename produces is legal from its state.
        for from in [Todo, Wip, Done, Abandoned] {
            for to in [
                FileState::Todo,
                FileState::Wip,
                FileState::Done,
                FileState::Abandoned,
            ] {
                if let Some(t) = from.transition_to(to) {
                    assert_eq!(from.apply(t), Some(Lifecycle::first_seen(to)));
                }
            }
        }
        assert!(Wip.is_live() && Todo.is_live() && !Done.is_live() && !Abandoned.is_live());
    }
}
