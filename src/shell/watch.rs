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

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::inotify::{Event, Inotify, Kind, Mask, Wd};
use crate::config::what_it_is;
use crate::core::effect::Level;

/// A filesystem where inotify sees nothing of remote changes.
fn is_remote_fs(path: &Path) -> Option<&'static str> {
    let st = nix::sys::statfs::statfs(path).ok()?;
    remote_fs_kind(&st)
}

/// The name of a filesystem where inotify sees nothing of remote changes
/// (and where a file may be a synthetic message endpoint), from its statfs.
pub fn remote_fs_kind(st: &nix::sys::statfs::Statfs) -> Option<&'static str> {
    // `__fsword_t` is i64 on x86_64 but not on every target.
    #[allow(clippy::unnecessary_cast)]
    let t = st.filesystem_type().0 as i64;
    match t {
        0x6573_5546 => Some("FUSE"),
        0x0102_1997 => Some("9P"),
        0x6969 => Some("NFS"),
        0x517B => Some("SMB"),
        0xFF53_4D42 => Some("CIFS"),
        0xFE53_4D42 => Some("SMB2"),
        _ => None,
    }
}

/// Which kind of root, which decides the files that matter under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    /// Plan files directly inside.
    Plans,
    /// One directory per session; `plan` and the enqueue file inside each.
    Sessions,
    /// A single file (the tracker's event log, a beads `issues.jsonl`),
    /// watched through its directory so replacing it is seen too.
    File,
}

/// How a root is being watched right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootMode {
    Inotify,
    /// Polled, and why (shown in status and STATUS=).
    Polled(String),
    /// Does not exist; its nearest existing ancestor is watched.
    Missing(PathBuf),
    /// Exists but is not a directory (a regular file, a pipe…): nothing
    /// under it can be watched; its parent is, for it to be replaced.
    NotADirectory(PathBuf),
}

impl RootMode {
    /// The directory watched while the root cannot be: the ancestor it
    /// is awaited in.
    fn waiting_in(&self) -> Option<&Path> {
        match self {
            RootMode::Missing(a) | RootMode::NotADirectory(a) => Some(a),
            _ => None,
        }
    }

    /// How a root coming to be watched this way is said in the journal:
    /// the level and the words. A root that does not exist yet is no
    /// fault (the README says it may not): information, once. A root that
    /// is not a directory is an error of its own.
    pub fn said(&self, path: &Path, poll: Duration) -> (Level, String) {
        let p = path.display();
        match self {
            RootMode::Inotify => (Level::Info, format!("watching {p} with inotify")),
            RootMode::Polled(why) => (Level::Warn, format!("polling {p} every {poll:?}: {why}")),
            RootMode::Missing(a) => (
                Level::Info,
                format!(
                    "{p} does not exist yet; watching {} for it to appear",
                    a.display()
                ),
            ),
            RootMode::NotADirectory(_) => (
                Level::Error,
                format!(
                    "{p} is not a directory but {}; nothing in it is watched until it is replaced by a directory",
                    what_it_is(path)
                ),
            ),
        }
    }
}

#[derive(Debug)]
struct Root {
    path: PathBuf,
    kind: RootKind,
    mode: RootMode,
}

impl Root {
    /// The directory that is watched for this root.
    fn dir(&self) -> PathBuf {
        match self.kind {
            RootKind::File => self
                .path
                .parent()
                .map_or_else(|| PathBuf::from("/"), Path::to_path_buf),
            _ => self.path.clone(),
        }
    }
}

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

/// A file fingerprint for polling. Nanosecond mtime, since whole seconds
/// miss two writes within one second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    if !m.is_file() {
        return None;
    }
    let mtime_ns = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128);
    Some(Fingerprint {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime_ns,
    })
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
    /// its `idx` (`shell::sessions`) instead: listing every session
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
                    RootMode::Missing(_) | RootMode::NotADirectory(_),
                ) if root.starts_with(p) => {
                    self.setup(i);
                    changed = true;
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

    /// Every plan-relevant file under every existing root.
    pub fn list(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for root in &self.roots {
            if root.mode.waiting_in().is_some() {
                continue;
            }
            match root.kind {
                RootKind::Plans => out.extend(list_files(&root.path)),
                RootKind::Sessions if self.session_plans => out.extend(session_plans(&root.path)),
                RootKind::Sessions | RootKind::File => {}
            }
        }
        out
    }

    /// One poll of the polled roots: what changed since the last poll.
    pub fn poll(&mut self) -> Vec<Seen> {
        let mut now: BTreeMap<PathBuf, Fingerprint> = BTreeMap::new();
        for root in &self.roots {
            if !matches!(root.mode, RootMode::Polled(_)) {
                continue;
            }
            let files: Vec<PathBuf> = match root.kind {
                RootKind::Plans => list_files(&root.path),
                RootKind::Sessions if self.sessions_indexed => Vec::new(),
                RootKind::Sessions => list_dirs(&root.path)
                    .into_iter()
                    .flat_map(|d| [d.join("plan"), d.join(&self.enqueue)])
                    .collect(),
                RootKind::File => vec![root.path.clone()],
            };
            for f in files {
                if let Some(fp) = fingerprint(&f) {
                    now.insert(f, fp);
                }
            }
        }
        let mut seen = Vec::new();
        for (path, fp) in &now {
            match self.polled.get(path) {
                Some(old) if old == fp => {}
                Some(_) => seen.push(Seen::Closed(path.clone())),
                None => seen.push(Seen::MovedIn(path.clone())),
            }
        }
        for path in self.polled.keys() {
            if !now.contains_key(path) {
                seen.push(Seen::Gone(path.clone()));
            }
        }
        self.polled = now;
        seen
    }
}

/// Every plan-relevant file: the files of the plan directory and, when
/// enabled, `<sessions_dir>/<id>/plan`. Missing directories list as empty.
pub fn list_plans(plan_dir: &Path, sessions_dir: &Path, with_session_plans: bool) -> Vec<PathBuf> {
    let mut out = list_files(plan_dir);
    if with_session_plans {
        out.extend(session_plans(sessions_dir));
    }
    out
}

fn session_plans(sessions_dir: &Path) -> Vec<PathBuf> {
    list_dirs(sessions_dir)
        .into_iter()
        .map(|d| d.join("plan"))
        .filter(|p| p.is_file())
        .collect()
}

fn list_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect()
}

fn list_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// The default poll interval when a configuration gives none.
pub const DEFAULT_POLL: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything inotify queued so far: events are queued by the system
    /// call that causes them, so nothing needs waiting for.
    fn drain(watch: &mut Watch) -> Vec<Seen> {
        let mut out = Vec::new();
        while watch.read(&mut out).unwrap() {}
        out
    }

    /// Regression: the daemon's own reads of plan files queued one `Opened`
    /// each; a scan of more plans than the queue holds overflowed it, and
    /// the rescan that followed did it again, forever (found by the wake
    /// benchmark at 10,000 plans). Plan directories are not watched for
    /// opens at all now.
    #[test]
    fn reading_a_plan_queues_nothing_but_opening_an_enqueue_file_does() {
        let tmp = tempfile::tempdir().unwrap();
        let plans = tmp.path().join("pl");
        let sessions = tmp.path().join("s");
        std::fs::create_dir_all(&plans).unwrap();
        std::fs::create_dir_all(sessions.join("a")).unwrap();
        let plan = plans.join("20260101T000000_00000001--x__wip.md");
        std::fs::write(&plan, "# G\n- [ ] one\n").unwrap();
        let enqueue = sessions.join("a/fifo.in");
        std::fs::write(&enqueue, "").unwrap();
        let mut watch = Watch::new("fifo.in", true).unwrap();
        watch.add_root(&plans, RootKind::Plans);
        watch.add_root(&sessions, RootKind::Sessions);
        for _ in 0..100 {
            std::fs::read(&plan).unwrap();
        }
        assert_eq!(drain(&mut watch), vec![]);
        std::fs::File::open(&enqueue).unwrap();
        assert_eq!(drain(&mut watch), vec![Seen::Opened(enqueue.clone())]);
        // The daemon's own prompt write: nothing but the open.
        std::fs::write(&enqueue, "prompt").unwrap();
        assert_eq!(drain(&mut watch), vec![Seen::Opened(enqueue)]);
    }

    #[test]
    fn a_task_complete_rewrite_is_seen_as_modified_then_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let plan = tmp.path().join("20260101T000000_00000001--x__wip.md");
        std::fs::write(&plan, "# G\n- [ ] one\n").unwrap();
        let mut watch = Watch::new("fifo.in", true).unwrap();
        watch.add_root(tmp.path(), RootKind::Plans);
        std::fs::write(&plan, "# G\n- [x] one\n").unwrap();
        let seen = drain(&mut watch);
        assert_eq!(seen.last(), Some(&Seen::Closed(plan.clone())), "{seen:?}");
        assert!(seen[..seen.len() - 1]
            .iter()
            .all(|s| *s == Seen::Modified(plan.clone())));
        let moved = tmp.path().join("20260101T000000_00000001--x__done.md");
        std::fs::rename(&plan, &moved).unwrap();
        assert_eq!(
            drain(&mut watch),
            vec![Seen::Gone(plan), Seen::MovedIn(moved)]
        );
    }

    /// Regression: `mkdir -p` of a missing root reported it missing once
    /// per level created (a WARN each); it is one change now, and the
    /// next is the root being watched.
    #[test]
    fn a_missing_root_is_reported_once_however_deep() {
        let tmp = tempfile::tempdir().unwrap();
        let plans = tmp.path().join("a/b/pl");
        let mut watch = Watch::new("fifo.in", true).unwrap();
        watch.add_root(&plans, RootKind::Plans);
        let changes = watch.take_changes();
        assert_eq!(
            changes,
            vec![(plans.clone(), RootMode::Missing(tmp.path().into()))]
        );
        assert_eq!(changes[0].1.said(&plans, DEFAULT_POLL).0, Level::Info);
        for level in ["a", "a/b", "a/b/pl"] {
            std::fs::create_dir(tmp.path().join(level)).unwrap();
            for s in drain(&mut watch) {
                watch.on_dir_event(&s);
            }
        }
        assert_eq!(watch.take_changes(), vec![(plans, RootMode::Inotify)]);
    }

    /// A root that is a regular file is not "missing": its own mode, an
    /// error; replaced by a directory, it is watched.
    #[test]
    fn a_root_that_is_a_file_is_not_a_directory_until_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let plans = tmp.path().join("pl");
        std::fs::write(&plans, "oops").unwrap();
        let mut watch = Watch::new("fifo.in", true).unwrap();
        watch.add_root(&plans, RootKind::Plans);
        let mode = watch.modes()[0].1.clone();
        assert_eq!(mode, RootMode::NotADirectory(tmp.path().into()));
        let (level, words) = mode.said(&plans, DEFAULT_POLL);
        assert_eq!(level, Level::Error);
        assert!(
            words.contains("is not a directory but a regular file"),
            "{words}"
        );
        assert!(watch.list().is_empty());
        std::fs::remove_file(&plans).unwrap();
        std::fs::create_dir(&plans).unwrap();
        for s in drain(&mut watch) {
            watch.on_dir_event(&s);
        }
        assert_eq!(watch.modes()[0].1, RootMode::Inotify);
    }

    /// A root deleted goes back to waiting in its parent, and is watched
    /// again when it comes back; so is a session directory that appears.
    #[test]
    fn roots_and_session_directories_come_and_go() {
        let tmp = tempfile::tempdir().unwrap();
        let plans = tmp.path().join("pl");
        let sessions = tmp.path().join("s");
        std::fs::create_dir_all(&plans).unwrap();
        std::fs::create_dir_all(&sessions).unwrap();
        let mut watch = Watch::new("fifo.in", true).unwrap();
        watch.add_root(&plans, RootKind::Plans);
        watch.add_root(&sessions, RootKind::Sessions);
        std::fs::create_dir(sessions.join("a")).unwrap();
        let seen = drain(&mut watch);
        assert_eq!(seen, vec![Seen::DirCreated(sessions.join("a"))]);
        assert!(watch.on_dir_event(&seen[0]));
        std::fs::write(sessions.join("a/plan"), "- [ ] x\n").unwrap();
        assert!(drain(&mut watch).contains(&Seen::Closed(sessions.join("a/plan"))));

        std::fs::remove_dir(&plans).unwrap();
        let seen = drain(&mut watch);
        assert!(seen.contains(&Seen::Gone(plans.clone())), "{seen:?}");
        for s in &seen {
            watch.on_dir_event(s);
        }
        assert_eq!(
            watch.modes()[0].1,
            RootMode::Missing(tmp.path().to_path_buf())
        );
        std::fs::create_dir(&plans).unwrap();
        let seen = drain(&mut watch);
        assert!(seen.iter().any(|s| watch.on_dir_event(s)), "{seen:?}");
        assert_eq!(watch.modes()[0].1, RootMode::Inotify);
        let plan = plans.join("20260101T000000_00000001--x__todo.md");
        std::fs::write(&plan, "- [ ] x\n").unwrap();
        assert!(drain(&mut watch).contains(&Seen::Closed(plan)));
    }
}
