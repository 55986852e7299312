//! The ollie-9p session tree followed: one read of its `idx` per state
//! poll, and the session states and checklist changes it shows fed to the
//! engine.

use crate::core::input::{Change, Input, Observation, Observer, Seen};
use crate::core::record::ChildState;
use crate::shell::sessions::{SessionTree, TreeChange};

use super::Daemon;

/// Why a session `idx` no longer lists is gone.
const UNLISTED: &str = "no longer listed in the session index (killed, or renamed)";

impl Daemon {
    /// One look at a session in `idx`, made now.
    fn look(&mut self, session: String, seen: Seen) {
        let at = self.now();
        let look = Observation {
            session,
            seen,
            by: Observer::Index,
            at,
        };
        self.feed(Input::Observed(look));
    }

    /// One read of the ollie-9p session tree's `idx` (recognised the first
    /// time it is there), and what follows from it.
    pub(super) fn poll_sessions(&mut self) {
        let project = self.settings.project.name.clone();
        if self.tree.is_none() {
            self.tree = SessionTree::detect(&self.settings.sessions.dir);
            let Some(_) = &self.tree else { return };
            tracing::info!(project = %project, "following ollie-9p session states through {} every {:?}", self.settings.sessions.dir.join("idx").display(), self.settings.sessions.state_poll);
            self.watch.index_sessions(true);
        }
        let Some(tree) = self.tree.as_mut() else {
            return;
        };
        match tree.poll(self.settings.sessions.session_plans) {
            Ok(changes) => {
                if self.tree_failing {
                    self.tree_failing = false;
                    tracing::info!(project = %project, "session states readable again");
                }
                for change in changes {
                    self.on_tree_change(change);
                }
                self.children_unlisted();
            }
            Err(e) => {
                if !self.tree_failing {
                    self.tree_failing = true;
                    tracing::warn!(project = %project, "cannot read {}: {e}; session states unknown until it can be read", self.settings.sessions.dir.join("idx").display());
                }
            }
        }
    }

    /// A child confirmed (seen in `idx` by its create) and missing from a
    /// later read of `idx` is gone, even if no poll ever listed it — one
    /// killed within a poll of its creation would otherwise never be seen
    /// to go, and its step never handed back.
    pub(super) fn children_unlisted(&mut self) {
        let Some(tree) = &self.tree else { return };
        let gone: Vec<String> = self
            .engine
            .memory()
            .children
            .iter()
            .filter(|(id, c)| {
                matches!(c.state, ChildState::Working | ChildState::Done)
                    && !tree.listed().contains_key(*id)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for session in gone {
            self.look(session, Seen::Gone(UNLISTED.into()));
        }
    }

    pub(super) fn on_tree_change(&mut self, change: TreeChange) {
        let project = self.settings.project.name.clone();
        // A child reveille made names its parent (`PARENT=`).
        let parent_of = |d: &Daemon, session: &str| {
            d.engine
                .memory()
                .children
                .get(session)
                .map(|c| c.parent.clone())
        };
        match change {
            TreeChange::Listed {
                session,
                state,
                new,
                from,
            } => {
                let parent = parent_of(self, &session);
                if new {
                    tracing::debug!(project = %project, session = %session, parent = parent.as_deref(), "session {session} appeared ({state})");
                } else if let Some(from) = from {
                    tracing::debug!(project = %project, session = %session, parent = parent.as_deref(), "session {session}: {from} → {state}");
                }
                self.look(session, Seen::State(state));
            }
            TreeChange::Gone(session) => {
                let pending = self
                    .engine
                    .memory()
                    .outbox
                    .get(&session)
                    .map_or(0, |q| q.len());
                let parent = parent_of(self, &session);
                tracing::info!(project = %project, session = %session, parent = parent.as_deref(), "session {session} is gone (killed, or renamed); {pending} undelivered prompt(s) kept in its outbox");
                self.look(session, Seen::Gone(UNLISTED.into()));
            }
            TreeChange::PlanChanged(path) => self.feed(Input::Changed {
                path,
                change: Change::Closed,
            }),
        }
    }
}
