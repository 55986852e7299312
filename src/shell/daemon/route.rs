//! What an inotify event is about: [`route`] is the pure routing of a
//! watched path to the part of the daemon it concerns — a plan, a
//! session's enqueue file, the tracker's log, the beads file, a new
//! session directory — and `Daemon::on_seen` acts on the answer.

use std::path::{Path, PathBuf};

use crate::core::input::{Change, Input};
use crate::shell::watch::Seen;

use super::world::beads_read;
use super::Daemon;

/// What a watched event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Route {
    /// Changes may have been missed (the kernel's queue overflowed).
    Rescan,
    /// A new directory under the sessions root: its checklist and its
    /// reader may already be there.
    SessionDir { session: String, plan: PathBuf },
    /// A session's enqueue file was opened: a reader may have arrived.
    ReaderOpened(String),
    /// A session's enqueue file appeared or was written.
    EnqueueFile(String),
    /// The tracker's event log changed.
    EventLog,
    /// The beads `issues.jsonl` was written whole (closed or renamed in).
    Beads,
    /// A file under a plan root changed.
    Plan(PathBuf, Change),
    /// Nothing the daemon acts on.
    Nothing,
}

/// The configured paths routing looks at.
pub(super) struct Paths<'a> {
    pub(super) sessions_dir: &'a Path,
    /// The enqueue file's name inside a session directory.
    pub(super) enqueue: &'a str,
    pub(super) events: Option<&'a Path>,
    pub(super) beads: Option<&'a Path>,
}

impl Paths<'_> {
    /// The session whose enqueue file `path` is.
    fn enqueue_session(&self, path: &Path) -> Option<String> {
        if path.file_name()? != self.enqueue {
            return None;
        }
        let dir = path.parent()?;
        (dir.parent()? == self.sessions_dir)
            .then(|| dir.file_name()?.to_str().map(str::to_string))
            .flatten()
    }
}

/// Where `seen` goes.
pub(super) fn route(seen: Seen, paths: &Paths) -> Route {
    let (path, change) = match seen {
        Seen::Rescan => return Route::Rescan,
        Seen::DirCreated(p) => {
            let session = p.file_name().and_then(|n| n.to_str());
            return match session {
                Some(s) if p.parent() == Some(paths.sessions_dir) => Route::SessionDir {
                    session: s.to_string(),
                    plan: p.join("plan"),
                },
                _ => Route::Nothing,
            };
        }
        Seen::Opened(p) => {
            return paths
                .enqueue_session(&p)
                .map_or(Route::Nothing, Route::ReaderOpened)
        }
        Seen::Closed(p) => (p, Change::Closed),
        Seen::MovedIn(p) => (p, Change::Appeared),
        Seen::Modified(p) => (p, Change::Modified),
        Seen::Gone(p) => (p, Change::Gone),
    };
    if let Some(session) = paths.enqueue_session(&path) {
        return match change {
            Change::Gone => Route::Nothing,
            _ => Route::EnqueueFile(session),
        };
    }
    if paths.events == Some(path.as_path()) {
        return match change {
            Change::Gone => Route::Nothing,
            _ => Route::EventLog,
        };
    }
    if paths.beads == Some(path.as_path()) {
        // An export rewrites the file whole: read it once it is closed or
        // renamed into place, not mid-write.
        return match change {
            Change::Closed | Change::Appeared => Route::Beads,
            _ => Route::Nothing,
        };
    }
    Route::Plan(path, change)
}

impl Daemon {
    /// An awaited root that has come to be without an inotify event (a
    /// mount): watched from now on, said, and everything rescanned.
    pub(super) fn recheck_awaited_roots(&mut self) {
        if !self.watching.watch.recheck_awaited() {
            return;
        }
        for (path, mode) in self.watching.watch.take_changes() {
            self.log_mode(&path, &mode);
        }
        self.rescan();
    }

    /// Act on one watched event.
    pub(super) fn on_seen(&mut self, seen: Seen) {
        let reshaped = self.watching.watch.on_dir_event(&seen);
        // A root that changed how it is watched (a new session directory
        // past the watch limit, a root deleted or appearing) says so.
        for (path, mode) in self.watching.watch.take_changes() {
            self.log_mode(&path, &mode);
        }
        if reshaped {
            self.rescan();
        }
        let s = &self.settings;
        let paths = Paths {
            sessions_dir: &s.sessions.dir,
            enqueue: &s.sessions.enqueue,
            events: s.events.path.as_deref(),
            beads: s.beads.issues_jsonl.as_deref(),
        };
        match route(seen, &paths) {
            Route::Rescan => {
                tracing::warn!(project = %self.settings.project.name, "inotify lost events (its queue overflowed); rescanning so nothing is missed");
                self.rescan();
            }
            Route::SessionDir { session, plan } => {
                self.feed(Input::Changed {
                    path: plan,
                    change: Change::Appeared,
                });
                self.feed(Input::SessionActivity { session });
            }
            // A reader's open matters only to a lane backing off after a
            // failed write (whether or not a prompt waits in it right now:
            // one may be announced a moment later); most opens are the
            // daemon's own deliveries echoing back.
            Route::ReaderOpened(session) if self.engine.backing_off(&session) => {
                self.feed(Input::SessionActivity { session })
            }
            Route::EnqueueFile(session) => self.feed(Input::SessionActivity { session }),
            Route::EventLog => self.read_events(),
            Route::Beads => {
                if let Some((read, now_unix)) = beads_read(&self.settings) {
                    self.feed(Input::BeadsRead { read, now_unix });
                }
            }
            Route::Plan(path, change) => self.feed(Input::Changed { path, change }),
            Route::ReaderOpened(_) | Route::Nothing => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> Paths<'static> {
        Paths {
            sessions_dir: Path::new("/s"),
            enqueue: "fifo.in",
            events: Some(Path::new("/b/events")),
            beads: Some(Path::new("/p/.beads/issues.jsonl")),
        }
    }

    #[test]
    fn every_event_goes_where_its_path_says() {
        let p = PathBuf::from;
        let plan = "/pl/20260101T000000_0a1b2c3d--x__todo.md";
        let table: Vec<(Seen, Route)> = vec![
            (Seen::Rescan, Route::Rescan),
            (
                Seen::DirCreated(p("/s/agent")),
                Route::SessionDir {
                    session: "agent".into(),
                    plan: p("/s/agent/plan"),
                },
            ),
            (Seen::DirCreated(p("/pl/sub")), Route::Nothing),
            (
                Seen::Opened(p("/s/agent/fifo.in")),
                Route::ReaderOpened("agent".into()),
            ),
            (Seen::Opened(p("/s/agent/other")), Route::Nothing),
            (
                Seen::Closed(p("/s/agent/fifo.in")),
                Route::EnqueueFile("agent".into()),
            ),
            (
                Seen::MovedIn(p("/s/agent/fifo.in")),
                Route::EnqueueFile("agent".into()),
            ),
            (Seen::Gone(p("/s/agent/fifo.in")), Route::Nothing),
            // Another session root's file of the same name is not ours.
            (
                Seen::Closed(p("/t/agent/fifo.in")),
                Route::Plan(p("/t/agent/fifo.in"), Change::Closed),
            ),
            (Seen::Modified(p("/b/events")), Route::EventLog),
            (Seen::Gone(p("/b/events")), Route::Nothing),
            (Seen::Closed(p("/p/.beads/issues.jsonl")), Route::Beads),
            (Seen::MovedIn(p("/p/.beads/issues.jsonl")), Route::Beads),
            (Seen::Modified(p("/p/.beads/issues.jsonl")), Route::Nothing),
            (Seen::Closed(p(plan)), Route::Plan(p(plan), Change::Closed)),
            (
                Seen::MovedIn(p(plan)),
                Route::Plan(p(plan), Change::Appeared),
            ),
            (
                Seen::Modified(p(plan)),
                Route::Plan(p(plan), Change::Modified),
            ),
            (Seen::Gone(p(plan)), Route::Plan(p(plan), Change::Gone)),
            (
                Seen::Closed(p("/s/agent/plan")),
                Route::Plan(p("/s/agent/plan"), Change::Closed),
            ),
        ];
        for (seen, want) in table {
            let shown = format!("{seen:?}");
            assert_eq!(route(seen, &paths()), want, "{shown}");
        }
    }
}
