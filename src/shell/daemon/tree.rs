//! The ollie-9p session tree followed: its `idx` is read by a worker
//! thread of its own (`agents::ollie::poll`, held through
//! `agents::ollie::follow`), whose looks reach the engine as inputs; here
//! the loop acts on the rest of its news: the watcher stops listing a
//! found tree, and whether `idx` can be read is said in the journal.

use crate::shell::agents::ollie::poll::{News, TreeNews, TreeSettings};

use super::Daemon;

impl Daemon {
    /// What the settings ask of the tree's worker.
    fn tree_settings(&self) -> TreeSettings {
        TreeSettings {
            project: self.settings.project.name.clone(),
            dir: self.settings.sessions.dir.clone(),
            every: self.settings.sessions.state_poll,
            session_plans: self.settings.sessions.session_plans,
        }
    }

    /// Start the worker, or a new one when the settings it follows
    /// changed (a reload): the old one's news is ignored from then on.
    pub(super) fn follow_tree(&mut self) {
        let settings = self.tree_settings();
        let reports = &self.agents.backends.reports;
        if self.agents.tree.follow(settings, reports) {
            self.watching.watch.index_sessions(false);
        }
    }

    /// Tell the worker whether to poll: only while the sessions root is a
    /// polled mount (an ollie-9p tree); local ones have no states to read.
    /// Deliveries are told the same: they open a polled root off the loop.
    pub(super) fn want_tree(&mut self) {
        let polled = self
            .watching
            .watch
            .sessions_polled(&self.settings.sessions.dir);
        self.agents.backends.root_polled(polled);
        self.agents.tree.want(polled);
    }

    /// What the tree's worker said besides its looks.
    pub(super) fn on_tree_news(&mut self, news: TreeNews) {
        let Some((what, turned)) = self.agents.tree.heed(news) else {
            return;
        };
        let project = self.settings.project.name.clone();
        let idx = self.settings.sessions.dir.join("idx");
        match what {
            News::Found => {
                tracing::info!(project = %project, "following ollie-9p session states through {} every {:?}", idx.display(), self.settings.sessions.state_poll);
                self.watching.watch.index_sessions(true);
            }
            News::Read => {
                if turned {
                    tracing::info!(project = %project, "session states readable again");
                }
                // A checklist whose read the engine put off is read
                // afresh when it comes to it.
                if let Some(checklists) = self.agents.tree.checklists() {
                    checklists.clear();
                }
            }
            News::Failed(e) => {
                if turned {
                    tracing::warn!(project = %project, "cannot read {}: {e}; session states unknown until it can be read", idx.display());
                }
            }
        }
    }
}
