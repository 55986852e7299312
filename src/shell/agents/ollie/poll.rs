//! The worker that reads an ollie-9p session tree's `idx`: a thread of its
//! own that owns the tree's state ([`SessionTree`]) and speaks in inputs.
//!
//! Why a thread: the tree is a 9pfuse mount, often over TCP, and when the
//! link is cut every FUSE request on it hangs until the link heals. Were
//! the event loop to read `idx` itself, a cut would freeze the whole
//! daemon (and under systemd starve its watchdog). Here a read stuck in
//! the kernel blocks only this thread; the next poll waits for it, so two
//! reads are never in flight.
//!
//! What it sees goes to the loop as it sees it: every look at a session
//! as `Input::Observed` and every changed session checklist as
//! `Input::Changed`, through the backends' [`Reports`]; and what only the
//! loop can judge (the tree found, a read made or failed, which sessions
//! it listed for the children the engine knows) as [`TreeNews`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::tree::{SessionTree, TreeChange};
use crate::core::input::{Change, Input, Observation, Observer, Seen, UNLISTED};
use crate::shell::backend::Reports;

/// What the loop hears of the worker besides its looks, tagged with the
/// worker's generation (a reload starts a new worker; an old one's news
/// still in the channel is ignored).
#[derive(Debug)]
pub struct TreeNews {
    pub generation: u64,
    pub what: News,
}

#[derive(Debug)]
pub enum News {
    /// The sessions root is an ollie-9p tree (it has an `idx`).
    Found,
    /// One read of `idx` made (what it listed went to the engine:
    /// `Input::IndexRead`).
    Read,
    /// `idx` could not be read, in words.
    Failed(String),
}

/// The session checklists the worker read and found changed, by path,
/// until the loop reads them: the loop's read of one (`Effect::Read`) then
/// costs no request to a mount that may hang.
#[derive(Debug, Clone, Default)]
pub struct Checklists(Arc<Mutex<BTreeMap<PathBuf, Vec<u8>>>>);

impl Checklists {
    /// The content read of `path`, once.
    pub fn take(&self, path: &Path) -> Option<Vec<u8>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(path)
    }

    fn put(&self, read: BTreeMap<PathBuf, Vec<u8>>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(read);
    }

    /// Forget what was not taken (read later, it is read afresh).
    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// What the worker is set to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeSettings {
    /// For the journal.
    pub project: String,
    pub dir: PathBuf,
    pub every: Duration,
    pub session_plans: bool,
}

/// The running worker; dropping it stops it (at once when it is waiting
/// for its next poll; after its read returns when stuck in one).
pub struct TreePoller {
    pub settings: TreeSettings,
    pub checklists: Checklists,
    /// Whether to poll now: only while the sessions root is a polled mount
    /// (local trees have no states to read). Set by the loop.
    wanted: Arc<AtomicBool>,
    /// Wakes the worker when it is wanted again (a first poll at once);
    /// dropped, it stops it.
    wake: std_mpsc::Sender<()>,
}

impl TreePoller {
    /// Start the worker `generation` for `settings`.
    pub fn start(
        settings: TreeSettings,
        generation: u64,
        reports: Reports,
        news: UnboundedSender<TreeNews>,
    ) -> TreePoller {
        let wanted = Arc::new(AtomicBool::new(false));
        let (wake, woken) = std_mpsc::channel();
        let checklists = Checklists::default();
        let worker = Worker {
            checklists: checklists.clone(),
            settings: settings.clone(),
            wanted: wanted.clone(),
            woken,
            reports,
            news,
            generation,
        };
        std::thread::Builder::new()
            .name("idx-poll".into())
            .spawn(move || worker.run())
            .expect("cannot start the idx poll thread");
        TreePoller {
            settings,
            checklists,
            wanted,
            wake,
        }
    }

    /// Poll from now on, or not.
    pub fn want(&self, on: bool) {
        if !self.wanted.swap(on, Ordering::Relaxed) && on {
            let _ = self.wake.send(());
        }
    }
}

struct Worker {
    settings: TreeSettings,
    checklists: Checklists,
    wanted: Arc<AtomicBool>,
    woken: std_mpsc::Receiver<()>,
    reports: Reports,
    news: UnboundedSender<TreeNews>,
    generation: u64,
}

impl Worker {
    fn run(self) {
        let mut tree: Option<SessionTree> = None;
        loop {
            if self.wanted.load(Ordering::Relaxed) && !self.poll(&mut tree) {
                return;
            }
            // The wait ends early when the poller is wanted again, and
            // for good when it is dropped.
            match self.woken.recv_timeout(self.settings.every) {
                Ok(()) | Err(std_mpsc::RecvTimeoutError::Timeout) => {}
                Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// One poll; false once nobody listens.
    fn poll(&self, tree: &mut Option<SessionTree>) -> bool {
        if tree.is_none() {
            *tree = SessionTree::detect(&self.settings.dir);
            if tree.is_none() {
                return true;
            }
            if !self.tell(News::Found) {
                return false;
            }
        }
        let Some(tree) = tree.as_mut() else {
            return true;
        };
        let begun_unix_ms = crate::shell::wall::unix_ms();
        match tree.poll(self.settings.session_plans) {
            Ok(changes) => {
                // Before the inputs that make the loop read them.
                self.checklists.put(tree.take_checklists());
                for change in changes {
                    let input = input_of(&self.settings.project, change);
                    if self.reports.send(input).is_err() {
                        return false;
                    }
                }
                let listed = tree.listed().keys().cloned().collect();
                let read = Input::IndexRead {
                    begun_unix_ms,
                    listed,
                };
                self.reports.send(read).is_ok() && self.tell(News::Read)
            }
            Err(e) => self.tell(News::Failed(e)),
        }
    }

    fn tell(&self, what: News) -> bool {
        let generation = self.generation;
        self.news.send(TreeNews { generation, what }).is_ok()
    }
}

/// A change the tree showed, as the engine hears it (a look is stamped
/// when sent, which is when it was seen).
fn input_of(project: &str, change: TreeChange) -> Input {
    let look = |session: String, seen: Seen| {
        Input::Observed(Observation {
            session,
            seen,
            by: Observer::Index,
            at: Duration::ZERO,
        })
    };
    match change {
        TreeChange::Listed {
            session,
            state,
            new,
            from,
        } => {
            if new {
                tracing::debug!(project = %project, session = %session, "session {session} appeared ({state})");
            } else if let Some(from) = from {
                tracing::debug!(project = %project, session = %session, "session {session}: {from} → {state}");
            }
            look(session, Seen::State(state))
        }
        TreeChange::Gone(session) => {
            tracing::info!(project = %project, session = %session, "session {session} is gone (killed, or renamed); undelivered prompts stay in its outbox");
            look(session, Seen::Gone(UNLISTED.into()))
        }
        TreeChange::PlanChanged(path) => Input::Changed {
            path,
            change: Change::Closed,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worker, once wanted, finds the tree, tells every listed
    /// session's state as a look, hands over a new checklist's bytes
    /// before the input that makes the loop read it, and says which
    /// sessions the read listed.
    #[test]
    fn a_wanted_worker_finds_the_tree_and_speaks_in_inputs() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("idx"), "a\tidle\t/src\tb\tm\n").unwrap();
        std::fs::create_dir(t.path().join("a")).unwrap();
        std::fs::write(t.path().join("a/plan"), "# g\n- [ ] x\n").unwrap();
        let (reports, mut inputs) = Reports::channel();
        let (news_tx, mut news) = tokio::sync::mpsc::unbounded_channel();
        let settings = TreeSettings {
            project: "p".into(),
            dir: t.path().to_path_buf(),
            every: Duration::from_secs(3600),
            session_plans: true,
        };
        let poller = TreePoller::start(settings, 7, reports, news_tx);
        poller.want(true);
        let found = news.blocking_recv().unwrap();
        assert!(matches!(
            found,
            TreeNews {
                generation: 7,
                what: News::Found
            }
        ));
        let look = inputs.blocking_recv().unwrap();
        assert!(
            matches!(&look, Input::Observed(o) if o.session == "a" && o.seen.state().is_some_and(|s| s.is_idle())),
            "{look:?}"
        );
        let plan = t.path().join("a/plan");
        let changed = inputs.blocking_recv().unwrap();
        assert!(matches!(&changed, Input::Changed { path, .. } if *path == plan));
        assert_eq!(poller.checklists.take(&plan).unwrap(), b"# g\n- [ ] x\n");
        assert!(poller.checklists.take(&plan).is_none(), "taken once");
        let read = inputs.blocking_recv().unwrap();
        assert!(
            matches!(&read, Input::IndexRead { listed, .. } if listed.iter().eq(["a"])),
            "{read:?}"
        );
        let said = news.blocking_recv().unwrap().what;
        assert!(matches!(said, News::Read), "{said:?}");
        // Dropped, it stops (its wait ends at once) and its channel
        // closes; a wake that raced its first look may have made one more.
        drop(poller);
        while let Some(more) = news.blocking_recv() {
            assert!(matches!(more.what, News::Read), "{more:?}");
        }
    }
}
