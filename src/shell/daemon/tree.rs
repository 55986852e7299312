//! The ollie-9p session tree followed: one read of its `idx` per state
//! poll, and the session states and checklist changes it shows fed to the
//! engine.

use crate::core::input::{Change, Input};
use crate::core::record::ChildState;
use crate::shell::sessions::{SessionTree, TreeChange};

use super::Daemon;

impl Daemon {
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
        match tree.poll(
            self.settings.sessions.session_plans,
            std::time::SystemTime::now(),
        ) {
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
                    && !tree.sessions().contains_key(*id)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for session in gone {
            self.feed(Input::SessionState {
                session,
                state: None,
            });
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
            TreeChange::Appeared(session) => {
                let state = self
                    .tree
                    .as_ref()
                    .and_then(|t| t.sessions().get(&session))
                    .map(|o| o.state.clone());
                let parent = parent_of(self, &session);
                tracing::debug!(project = %project, session = %session, parent = parent.as_deref(), "session {session} appeared");
                self.feed(Input::SessionState { session, state });
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
                self.feed(Input::SessionState {
                    session,
                    state: None,
                });
            }
            TreeChange::State { session, from, to } => {
                let parent = parent_of(self, &session);
                tracing::debug!(project = %project, session = %session, parent = parent.as_deref(), "session {session}: {from} → {to}");
                self.feed(Input::SessionState {
                    session,
                    state: Some(to),
                });
            }
            TreeChange::PlanChanged(path) => self.feed(Input::Changed {
                path,
                change: Change::Closed,
            }),
        }
    }
}
