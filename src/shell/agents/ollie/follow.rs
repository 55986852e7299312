//! The loop's hold on the `idx` worker (`poll`): which worker is the
//! current one (a reload that changes what it follows starts another, and
//! the old one's news is ignored from then on), whether it should poll,
//! and whether its last read failed (said once). What the news means for
//! the rest of the daemon (the watcher, the children the engine knows) is
//! the loop's to act on.

use tokio::sync::mpsc;

use super::poll::{Checklists, News, TreeNews, TreePoller, TreeSettings};
use crate::shell::backend::Reports;

/// The current `idx` worker and what the loop knows of it.
pub struct Follower {
    /// The worker, once started.
    poller: Option<TreePoller>,
    /// Which worker is the current one (its news is heeded).
    generation: u64,
    /// Where the workers send their news.
    news: mpsc::UnboundedSender<TreeNews>,
    /// Whether the last read of the tree's `idx` failed (said once).
    failing: bool,
}

impl Follower {
    /// No worker yet, and the receiver of the news of those started.
    pub fn new() -> (Follower, mpsc::UnboundedReceiver<TreeNews>) {
        let (news, rx) = mpsc::unbounded_channel();
        let follower = Follower {
            poller: None,
            generation: 0,
            news,
            failing: false,
        };
        (follower, rx)
    }

    /// Start the worker, or a new one when the settings it follows
    /// changed (a reload). True when one was started.
    pub fn follow(&mut self, settings: TreeSettings, reports: &Reports) -> bool {
        if self.poller.as_ref().is_some_and(|t| t.settings == settings) {
            return false;
        }
        self.generation += 1;
        self.failing = false;
        self.poller = Some(TreePoller::start(
            settings,
            self.generation,
            reports.clone(),
            self.news.clone(),
        ));
        true
    }

    /// Tell the worker whether to poll.
    pub fn want(&self, polled: bool) {
        if let Some(poller) = &self.poller {
            poller.want(polled);
        }
    }

    /// The session checklists the worker read, when it runs.
    pub fn checklists(&self) -> Option<&Checklists> {
        self.poller.as_ref().map(|t| &t.checklists)
    }

    /// The news of the current worker (`None`: an older one's), with
    /// whether it ends (`Read`) or begins (`Failed`) a failing streak,
    /// so that each is said once.
    pub fn heed(&mut self, news: TreeNews) -> Option<(News, bool)> {
        if news.generation != self.generation {
            return None;
        }
        let turned = match &news.what {
            News::Found => false,
            News::Read => std::mem::replace(&mut self.failing, false),
            News::Failed(_) => !std::mem::replace(&mut self.failing, true),
        };
        Some((news.what, turned))
    }
}
