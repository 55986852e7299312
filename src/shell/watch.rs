//! Watching the plan roots: inotify (`shell::inotify`, on the loop's own
//! thread) where it works,
//! polling `(dev, ino, size, mtime_ns)` where it cannot — FUSE/9P/NFS mounts
//! (detected with statfs) and roots that hit the inotify watch limit.
//!
//! Roots are watched as directories, never as files, so editor saves
//! (truncate-and-write, write-temp-then-rename) are seen. A root that does not
//! exist yet is waited for by watching its nearest existing ancestor; a root
//! that is deleted goes back to that state. If the kernel's event queue
//! overflows, the loop rescans everything.
//!
//! Here: the watcher and what an inotify event means to the loop. Beside
//! it: the roots and how each is watched (`root.rs`), polling
//! (`poll.rs`) and listing what is under them (`list.rs`).

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::inotify::{Event, Inotify, Kind, Mask, Wd};

/// Something the watcher saw, in the loop's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Closed after writing.
    Closed(PathBuf),
    /// Renamed into place.
    MovedIn(PathBuf),
    /// Created, or modified without a close (settle before reading).
    Modified(PathBuf),
    /// Deleted or renamed away.
    Gone(PathBuf),
    /// Opened (a FIFO reader may have arrived).
    Opened(PathBuf),
    /// A directory appeared (a new session directory, a root reappearing).
    DirCreated(PathBuf),
    /// Changes may have been missed: rescan everything.
    Rescan,
}

/// Why a root is polled once inotify has no watches left.
const WATCH_LIMIT: &str = "inotify watch limit reached (fs.inotify.max_user_watches)";

/// The watcher: inotify plus polled roots.
pub struct Watch {
    ino: Inotify,
    roots: Vec<Root>,
    /// Directories currently inotify-watched (roots, session dirs,
    /// ancestors), with their watch and the events asked for.
    watched: BTreeMap<PathBuf, (Wd, Mask)>,
    /// The same, by watch descriptor, to name what an event is about.
    dirs: HashMap<Wd, PathBuf>,
    /// Fingerprints of files under polled roots.
    polled: BTreeMap<PathBuf, Fingerprint>,
    /// The enqueue file name, whose opening means a reader may be there.
    enqueue: OsString,
    /// Bumped whenever a root changes how it is watched.
    generation: usize,
    /// Roots that changed how they are watched, not yet logged.
    changes: Vec<(PathBuf, RootMode)>,
    session_plans: bool,
    /// A polled sessions root that is an ollie-9p tree is followed through
    /// its `idx` (`agents::ollie::tree`) instead: listing every session
    /// directory and stat-ing its files on each poll costs requests to the
    /// 9P server per session, and synthetic files' metadata does not move.
    sessions_indexed: bool,
}

/// What the event loop waits on: the inotify instance becoming readable.
pub struct WatchEvents {
    pub fd: AsyncFd<OwnedFd>,
}

/// What the loop needs to hear of one inotify event in directory `dir`,
/// if anything. Of an enqueue file only its appearing and its opening
/// matter (a reader may have arrived): its modifications and closes are the
/// daemon's own prompt writes echoing back.
fn map_event(dir: &Path, e: &Event<'_>, enqueue: &OsStr) -> Option<Seen> {
    let Some(name) = e.name else {
        return match e.kind {
            Kind::Overflow => Some(Seen::Rescan),
            Kind::SelfGone => Some(Seen::Gone(dir.to_path_buf())),
            _ => None,
        };
    };
    let is_enqueue = !e.is_dir && name == enqueue;
    let wrap: fn(PathBuf) -> Seen = match e.kind {
        Kind::ClosedWrite | Kind::Modified if is_enqueue => return None,
        Kind::Opened if is_enqueue => Seen::Opened,
        Kind::Opened => return None,
        Kind::ClosedWrite => Seen::Closed,
        Kind::Created if e.is_dir => Seen::DirCreated,
        // A created file is still being written: settle, or wait for its close.
        Kind::Created | Kind::Modified => Seen::Modified,
        Kind::MovedTo => Seen::MovedIn,
        Kind::MovedFrom | Kind::Deleted => Seen::Gone,
        Kind::Overflow => return Some(Seen::Rescan),
        Kind::SelfGone | Kind::Ignored | Kind::Other => return None,
    };
    Some(wrap(dir.join(name)))
}

impl Watch {
    /// An inotify instance and no roots yet (`add_root`).
    pub fn new(enqueue: &str, session_plans: bool) -> io::Result<Watch> {
        Ok(Watch {
            ino: Inotify::new()?,
            roots: Vec::new(),
            watched: BTreeMap::new(),
            dirs: HashMap::new(),
            polled: BTreeMap::new(),
            enqueue: enqueue.into(),
            generation: 0,
            changes: Vec::new(),
            session_plans,
            sessions_indexed: false,
        })
    }

    /// What the loop waits on (inside a tokio runtime).
    pub fn events(&self) -> io::Result<WatchEvents> {
        let dup = self.ino.try_clone_fd()?;
        // SAFETY: an `OwnedFd` stays open, and is the same descriptor,
        // for as long as the `AsyncFd` owns it.
        let fd = unsafe { AsyncFd::register_with_interest(dup, Interest::READABLE)? };
        Ok(WatchEvents { fd })
    }

    /// One read of what inotify queued, appended to `out` in the loop's
    /// terms. Returns false when nothing was queued (drained).
    pub fn read(&mut self, out: &mut Vec<Seen>) -> io::Result<bool> {
        let Watch {
            ino,
            watched,
            dirs,
            enqueue,
            ..
        } = self;
        ino.read(|e| {
            if e.kind == Kind::Overflow {
                return out.push(Seen::Rescan);
            }
            let Some(dir) = dirs.get(&e.wd) else { return };
            if e.kind == Kind::Ignored {
                // The kernel dropped the watch (its directory went away).
                if watched.get(dir).is_some_and(|(wd, _)| *wd == e.wd) {
                    watched.remove(dir);
                }
                dirs.remove(&e.wd);
                return;
            }
            out.extend(map_event(dir, &e, enqueue));
        })
    }

    /// Watch a root (plan directory or sessions directory).
    pub fn add_root(&mut self, path: &Path, kind: RootKind) {
        self.roots.push(Root {
            path: path.to_path_buf(),
            kind,
            mode: RootMode::Missing(PathBuf::new()),
        });
        let i = self.roots.len() - 1;
        self.setup(i);
    }

    fn watch_dir(&mut self, dir: &Path, mask: Mask) -> io::Result<()> {
        let mask = match self.watched.get(dir) {
            Some((_, had)) if had.covers(mask) => return Ok(()),
            Some((_, had)) => had.union(mask),
            None => mask,
        };
        let wd = self.ino.add(dir, mask)?;
        self.watched.insert(dir.to_path_buf(), (wd, mask));
        self.dirs.insert(wd, dir.to_path_buf());
        Ok(())
    }

    fn unwatch_dir(&mut self, dir: &Path) {
        if let Some((wd, _)) = self.watched.remove(dir) {
            self.dirs.remove(&wd);
            self.ino.remove(wd);
        }
    }

    /// Decide (again) how root `i` is watched.
    fn setup(&mut self, i: usize) {
        let path = self.roots[i].dir();
        if let Some(ancestor) = self.roots[i].mode.waiting_in() {
            let ancestor = ancestor.to_path_buf();
            if !ancestor.as_os_str().is_empty() && !self.is_needed(&ancestor, i) {
                self.unwatch_dir(&ancestor);
            }
        }
        if path.exists() && !path.is_dir() {
            // Its parent exists: watched for the name being replaced.
            let parent = path
                .parent()
                .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
            let _ = self.watch_dir(&parent, Mask::ANCESTOR);
            self.set_mode(i, RootMode::NotADirectory(parent));
            return;
        }
        if !path.is_dir() {
            // Wait for it: watch the nearest existing ancestor.
            let mut ancestor = path.parent().map(Path::to_path_buf);
            while let Some(a) = &ancestor {
                if a.is_dir() {
                    break;
                }
                if a.exists() {
                    // A file in the way: nothing beneath it can appear.
                    let parent = a
                        .parent()
                        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
                    let _ = self.watch_dir(&parent, Mask::ANCESTOR);
                    let blocker = a.clone();
                    self.set_mode(i, RootMode::BeneathNonDirectory { blocker, parent });
                    return;
                }
                ancestor = a.parent().map(Path::to_path_buf);
            }
            let ancestor = ancestor.unwrap_or_else(|| PathBuf::from("/"));
            let _ = self.watch_dir(&ancestor, Mask::ANCESTOR);
            self.set_mode(i, RootMode::Missing(ancestor));
            return;
        }
        if let Some(fs) = is_remote_fs(&path) {
            self.set_mode(
                i,
                RootMode::Polled(format!("{fs} filesystem, inotify sees no remote changes")),
            );
            return;
        }
        let mut dirs = Vec::new();
        if self.roots[i].kind == RootKind::Sessions {
            // The root only for sessions appearing and going; each session
            // directory for its files.
            dirs.push((path.clone(), Mask::ANCESTOR));
            dirs.extend(list_dirs(&path).into_iter().map(|d| (d, Mask::SESSION)));
        } else {
            dirs.push((path.clone(), Mask::FILES));
        }
        for (dir, mask) in dirs {
            if let Err(e) = self.watch_dir(&dir, mask) {
                let why = match e.raw_os_error() {
                    Some(libc::ENOSPC) => WATCH_LIMIT.to_string(),
                    _ => format!("inotify failed: {e}"),
                };
                self.set_mode(i, RootMode::Polled(why));
                return;
            }
        }
        self.set_mode(i, RootMode::Inotify);
    }

    /// Change how root `i` is watched, remembering the change for the log.
    fn set_mode(&mut self, i: usize, mode: RootMode) {
        // Waiting in a nearer ancestor is the same wait: `mkdir -p` of a
        // missing root is one "does not exist yet", not one per level.
        // (An empty ancestor is a root not set up yet, or just gone.)
        if let (RootMode::Missing(old), RootMode::Missing(_)) = (&self.roots[i].mode, &mode) {
            if !old.as_os_str().is_empty() {
                self.roots[i].mode = mode;
                return;
            }
        }
        if self.roots[i].mode != mode {
            self.generation += 1;
            self.changes
                .push((self.roots[i].path.clone(), mode.clone()));
            self.roots[i].mode = mode;
        }
    }

    /// The roots whose way of being watched changed since the last call.
    pub fn take_changes(&mut self) -> Vec<(PathBuf, RootMode)> {
        std::mem::take(&mut self.changes)
    }

    fn is_needed(&self, dir: &Path, except: usize) -> bool {
        self.roots.iter().enumerate().any(|(j, r)| {
            j != except
                && (r.dir() == dir
                    || r.mode.waiting_in() == Some(dir)
                    || (r.kind == RootKind::Sessions && dir.parent() == Some(r.path.as_path())))
        })
    }

    /// Changes whenever a root changes how it is watched.
    pub fn generation(&self) -> usize {
        self.generation
    }

    /// How each root is watched, for status.
    pub fn modes(&self) -> Vec<(PathBuf, RootMode)> {
        self.roots
            .iter()
            .map(|r| (r.path.clone(), r.mode.clone()))
            .collect()
    }

    /// Whether any root needs the poll timer.
    pub fn polling(&self) -> bool {
        self.roots.iter().any(|r| {
            matches!(r.mode, RootMode::Polled(_))
                && !(r.kind == RootKind::Sessions && self.sessions_indexed)
        })
    }

    /// Whether the root at `path` is polled (on a FUSE/9P mount, or past
    /// the watch limit).
    pub fn is_polled(&self, path: &Path) -> bool {
        self.roots
            .iter()
            .any(|r| r.path == path && matches!(r.mode, RootMode::Polled(_)))
    }

    /// Whether the sessions root `dir` is polled (a FUSE/9P mount).
    pub fn sessions_polled(&self, dir: &Path) -> bool {
        self.roots.iter().any(|r| {
            r.kind == RootKind::Sessions && r.path == dir && matches!(r.mode, RootMode::Polled(_))
        })
    }

    /// Whether a root is waited for (it does not exist, or is not a
    /// directory): see [`Watch::recheck_awaited`].
    pub fn awaiting(&self) -> bool {
        self.roots.iter().any(|r| r.mode.waiting_in().is_some())
    }

    /// Look again at every awaited root: one that is a directory now is
    /// set up (watched or polled). A mount appearing on an empty directory
    /// (9pfuse mounting an ollie-9p tree again after its connection
    /// ended) makes no inotify event in the ancestor a missing root is
    /// waited in, so only a look finds it. True when a root changed how
    /// it is watched (rescan then).
    pub fn recheck_awaited(&mut self) -> bool {
        let mut changed = false;
        for i in 0..self.roots.len() {
            if self.roots[i].mode.waiting_in().is_some() && self.roots[i].dir().is_dir() {
                self.setup(i);
                changed = true;
            }
        }
        changed
    }

    /// Follow the polled sessions root through its `idx` from now on (see
    /// `sessions_indexed`), or not.
    pub fn index_sessions(&mut self, on: bool) {
        self.sessions_indexed = on;
    }

    /// React to directory-level events: roots appearing or vanishing, new
    /// session directories. Returns true when the roots changed shape and
    /// everything should be rescanned.
    pub fn on_dir_event(&mut self, seen: &Seen) -> bool {
        // A file written or opened never changes which directories are
        // watched; only names appearing or going can.
        if !matches!(seen, Seen::DirCreated(_) | Seen::MovedIn(_) | Seen::Gone(_)) {
            return false;
        }
        let mut changed = false;
        for i in 0..self.roots.len() {
            let root = self.roots[i].dir();
            match (seen, self.roots[i].mode.clone()) {
                (
                    Seen::DirCreated(p) | Seen::MovedIn(p),
                    RootMode::Missing(_)
                    | RootMode::NotADirectory(_)
                    | RootMode::BeneathNonDirectory { .. },
                ) if root.starts_with(p) => {
                    self.setup(i);
                    changed = true;
                }
                // The file in the way of a root beneath it went away.
                (Seen::Gone(p), RootMode::BeneathNonDirectory { blocker, .. }) if blocker == *p => {
                    self.setup(i);
                }
                // The file in the way went away: wait for the directory.
                (Seen::Gone(p), RootMode::NotADirectory(_)) if root == *p => {
                    self.setup(i);
                }
                // The ancestor a missing root waited in went away too: wait
                // in the nearest one left.
                (Seen::Gone(p), RootMode::Missing(a)) if a.starts_with(p) => {
                    self.setup(i);
                }
                (Seen::Gone(p), RootMode::Inotify | RootMode::Polled(_)) if root.starts_with(p) => {
                    self.unwatch_dir(&root);
                    self.roots[i].mode = RootMode::Missing(PathBuf::new());
                    self.setup(i);
                    changed = true;
                }
                (Seen::DirCreated(p) | Seen::MovedIn(p), RootMode::Inotify)
                    if self.roots[i].kind == RootKind::Sessions
                        && p.parent() == Some(root.as_path()) =>
                {
                    if self.watch_dir(p, Mask::SESSION).is_err() {
                        self.set_mode(i, RootMode::Polled(WATCH_LIMIT.into()));
                    }
                    changed = true;
                }
                (Seen::Gone(p), RootMode::Inotify)
                    if self.roots[i].kind == RootKind::Sessions
                        && p.parent() == Some(root.as_path()) =>
                {
                    self.unwatch_dir(p);
                }
                _ => {}
            }
        }
        changed
    }
}

/// The default poll interval when a configuration gives none.
pub const DEFAULT_POLL: Duration = Duration::from_millis(100);

mod list;
mod poll;
mod root;
#[cfg(test)]
mod tests;

use list::list_dirs;
pub use list::list_plans;
use poll::Fingerprint;
use root::{is_remote_fs, Root};
pub use root::{remote_fs_kind, RootKind, RootMode};
