//! Watching the plan roots: inotify (through `notify`) where it works,
//! polling `(dev, ino, size, mtime_ns)` where it cannot — FUSE/9P/NFS mounts
//! (detected with statfs) and roots that hit the inotify watch limit.
//!
//! Roots are watched as directories, never as files, so editor saves
//! (truncate-and-write, write-temp-then-rename) are seen. A root that does not
//! exist yet is waited for by watching its nearest existing ancestor; a root
//! that is deleted goes back to that state. The notify thread hands events to
//! the event loop through a bounded channel; if it is ever full, nothing is
//! dropped silently: a flag is raised and the loop rescans everything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RenameMode};
use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::{mpsc, Notify};

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

/// The watcher: inotify plus polled roots.
pub struct Watch {
    inner: notify::INotifyWatcher,
    roots: Vec<Root>,
    /// Directories currently inotify-watched (roots, session dirs, ancestors).
    watched: BTreeSet<PathBuf>,
    /// Fingerprints of files under polled roots.
    polled: BTreeMap<PathBuf, Fingerprint>,
    /// The enqueue file name, whose opening means a reader may be there.
    enqueue: String,
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

/// The receiving side the event loop selects on.
pub struct WatchEvents {
    pub rx: mpsc::Receiver<Seen>,
    /// Raised when the channel was full and an event could not be queued.
    pub overflowed: Arc<AtomicBool>,
    /// Notified along with `overflowed`.
    pub wake: Arc<Notify>,
}

/// What the loop needs to hear of one notify event. `enqueue` is the
/// enqueue file name: of all opens, only those of enqueue files matter (a
/// reader may have arrived). Every other open — above all the daemon's own
/// reads of plan files — is dropped here, on the notify thread, so a rescan
/// of 10,000 plans does not flood the channel with its own echoes (which
/// would overflow it and cause another rescan, forever).
///
/// At most one `Seen` per event, returned without allocating: this runs on
/// the notify thread for every inotify event, most of them dropped here.
fn map_event(mut event: notify::Event, enqueue: &str) -> Option<Seen> {
    if event.need_rescan() {
        return Some(Seen::Rescan);
    }
    let is_enqueue = event
        .paths
        .first()
        .is_some_and(|p| p.file_name().is_some_and(|n| n == enqueue));
    // Of an enqueue file, only its appearing and its opening matter (a
    // reader may have arrived); its modifications and closes are mostly the
    // daemon's own prompt writes echoing back, one loop turn each.
    let wrap: fn(PathBuf) -> Seen = match event.kind {
        EventKind::Access(AccessKind::Close(_)) | EventKind::Modify(ModifyKind::Data(_))
            if is_enqueue =>
        {
            return None
        }
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => Seen::Closed,
        EventKind::Access(AccessKind::Open(_)) if is_enqueue => Seen::Opened,
        EventKind::Access(_) => return None,
        EventKind::Create(CreateKind::Folder) => Seen::DirCreated,
        // A created file is still being written: settle, or wait for its close.
        EventKind::Create(_) => Seen::Modified,
        EventKind::Modify(ModifyKind::Name(RenameMode::To)) => Seen::MovedIn,
        EventKind::Modify(ModifyKind::Name(RenameMode::From)) => Seen::Gone,
        // notify also reports the pair; its halves were already reported.
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => return None,
        EventKind::Modify(ModifyKind::Metadata(_)) => return None,
        EventKind::Modify(_) => Seen::Modified,
        EventKind::Remove(_) => Seen::Gone,
        EventKind::Any | EventKind::Other => return None,
    };
    // The event is ours: its path moves into the `Seen`, no copy.
    (!event.paths.is_empty()).then(|| wrap(event.paths.swap_remove(0)))
}

impl Watch {
    /// Start the inotify thread. Roots are added with `add_root`.
    pub fn new(
        enqueue: &str,
        session_plans: bool,
        capacity: usize,
    ) -> Result<(Watch, WatchEvents), notify::Error> {
        let (tx, rx) = mpsc::channel(capacity);
        let overflowed = Arc::new(AtomicBool::new(false));
        let wake = Arc::new(Notify::new());
        let (flag, waker) = (overflowed.clone(), wake.clone());
        let name = enqueue.to_string();
        let inner = notify::INotifyWatcher::new(
            move |res: notify::Result<notify::Event>| {
                let seen = match res {
                    Ok(event) => map_event(event, &name),
                    // An error from the inotify thread (read failure, watch
                    // limit while adding a new directory): rescan to be safe.
                    Err(_) => Some(Seen::Rescan),
                };
                if let Some(s) = seen {
                    if tx.try_send(s).is_err() {
                        flag.store(true, Ordering::SeqCst);
                        waker.notify_one();
                    }
                }
            },
            notify::Config::default(),
        )?;
        Ok((
            Watch {
                inner,
                roots: Vec::new(),
                watched: BTreeSet::new(),
                polled: BTreeMap::new(),
                enqueue: enqueue.to_string(),
                generation: 0,
                changes: Vec::new(),
                session_plans,
                sessions_indexed: false,
            },
            WatchEvents {
                rx,
                overflowed,
                wake,
            },
        ))
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

    fn watch_dir(&mut self, dir: &Path) -> Result<(), notify::Error> {
        if self.watched.contains(dir) {
            return Ok(());
        }
        self.inner.watch(dir, RecursiveMode::NonRecursive)?;
        self.watched.insert(dir.to_path_buf());
        Ok(())
    }

    fn unwatch_dir(&mut self, dir: &Path) {
        if self.watched.remove(dir) {
            let _ = self.inner.unwatch(dir);
        }
    }

    /// Decide (again) how root `i` is watched.
    fn setup(&mut self, i: usize) {
        let path = self.roots[i].dir();
        if let RootMode::Missing(ancestor) = &self.roots[i].mode {
            let ancestor = ancestor.clone();
            if !ancestor.as_os_str().is_empty() && !self.is_needed(&ancestor, i) {
                self.unwatch_dir(&ancestor);
            }
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
            let _ = self.watch_dir(&ancestor);
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
        let mut dirs = vec![path.clone()];
        if self.roots[i].kind == RootKind::Sessions {
            dirs.extend(list_dirs(&path));
        }
        for dir in dirs {
            if let Err(e) = self.watch_dir(&dir) {
                let why = match e.kind {
                    notify::ErrorKind::MaxFilesWatch => {
                        "inotify watch limit reached (fs.inotify.max_user_watches)".to_string()
                    }
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
                    || matches!(&r.mode, RootMode::Missing(a) if a == dir)
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
        let mut changed = false;
        for i in 0..self.roots.len() {
            let root = self.roots[i].dir();
            match (seen, self.roots[i].mode.clone()) {
                (Seen::DirCreated(p) | Seen::MovedIn(p), RootMode::Missing(_))
                    if root.starts_with(p) =>
                {
                    self.setup(i);
                    changed = true;
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
                    if self.watch_dir(p).is_err() {
                        self.set_mode(
                            i,
                            RootMode::Polled(
                                "inotify watch limit reached (fs.inotify.max_user_watches)".into(),
                            ),
                        );
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

    /// The session whose enqueue file this is, if it is one.
    pub fn enqueue_session(&self, path: &Path) -> Option<String> {
        if path.file_name()?.to_str()? != self.enqueue {
            return None;
        }
        let dir = path.parent()?;
        let sessions = dir.parent()?;
        self.roots
            .iter()
            .any(|r| r.kind == RootKind::Sessions && r.path == sessions)
            .then(|| dir.file_name()?.to_str().map(str::to_string))
            .flatten()
    }

    /// Every plan-relevant file under every existing root.
    pub fn list(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for root in &self.roots {
            if matches!(root.mode, RootMode::Missing(_)) {
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
pub const DEFAULT_POLL: Duration = Duration::from_millis(250);

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Everything the watcher queues within `wait`.
    fn collect(events: &mut WatchEvents, wait: Duration) -> Vec<Seen> {
        let until = Instant::now() + wait;
        let mut out = Vec::new();
        while Instant::now() < until {
            match events.rx.try_recv() {
                Ok(s) => out.push(s),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        out
    }

    /// Regression: the daemon's own reads of plan files queued one `Opened`
    /// each; a scan of more plans than the channel holds overflowed it, and
    /// the rescan that followed did it again, forever (found by the wake
    /// benchmark at 10,000 plans).
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
        let (mut watch, mut events) = Watch::new("fifo.in", true, 64).unwrap();
        watch.add_root(&plans, RootKind::Plans);
        watch.add_root(&sessions, RootKind::Sessions);
        for _ in 0..100 {
            std::fs::read(&plan).unwrap();
        }
        assert_eq!(collect(&mut events, Duration::from_millis(200)), vec![]);
        assert!(!events.overflowed.load(Ordering::SeqCst));
        std::fs::File::open(&enqueue).unwrap();
        let seen = collect(&mut events, Duration::from_millis(200));
        assert!(seen.contains(&Seen::Opened(enqueue.clone())), "{seen:?}");
    }
}
