//! The hostile tests' containment check, on top of the one daemon harness
//! (`util::project`, `util::daemon`): an `outside` sentinel directory that
//! nothing may touch, and a record of every entry the test itself creates
//! inside the roots (through `World`, or `World::made`), so that at the end
//! `assert_contained` can tell that the daemon created nothing — inside the
//! roots or outside them — and changed nothing outside the roots and its
//! state directory.
//!
//! ```text
//! <tmp>/pl, s, state, beads, harness   the project (`util::project`)
//! <tmp>/issues.jsonl     beads.issues_jsonl (only when enabled)
//! <tmp>/outside          sentinel: a dir, a regular `fifo.in`, a FIFO
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::ops::{Deref, DerefMut};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::util::daemon::Daemon;
use crate::util::fifo::{mkfifo, Reader};
use crate::util::plans::{fresh_uid, plan_name};
use crate::util::project::Project;

/// How long any single condition may take before a test fails.
pub const WAIT: Duration = Duration::from_secs(15);

/// The session every world's `good` plans are routed to.
pub const GOOD: &str = "good";

/// One filesystem entry as a snapshot sees it (symlinks not followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    kind: &'static str,
    len: u64,
    mtime_ns: i128,
    mode: u32,
    target: Option<PathBuf>,
}

/// Every entry under `root`, keyed by path, `skip` subtrees left out.
pub fn tree(root: &Path, skip: &[&Path]) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        if skip.iter().any(|s| p.starts_with(s)) {
            continue;
        }
        let Ok(m) = fs::symlink_metadata(&p) else {
            continue;
        };
        let ft = m.file_type();
        let kind = if ft.is_symlink() {
            "symlink"
        } else if ft.is_dir() {
            "dir"
        } else if ft.is_file() {
            "file"
        } else {
            "other"
        };
        out.insert(
            p.clone(),
            Entry {
                kind,
                len: if ft.is_dir() { 0 } else { m.len() },
                // A directory's own mtime changes with its entries, which are
                // compared one by one (and the state dir is created in the
                // temp dir's root).
                mtime_ns: if ft.is_dir() {
                    0
                } else {
                    i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())
                },
                mode: m.mode(),
                target: fs::read_link(&p).ok(),
            },
        );
        if ft.is_dir() {
            if let Ok(rd) = fs::read_dir(&p) {
                stack.extend(rd.filter_map(Result::ok).map(|e| e.path()));
            }
        }
    }
    out
}

/// Entries that differ between two snapshots, for a readable failure.
pub fn diff(before: &BTreeMap<PathBuf, Entry>, after: &BTreeMap<PathBuf, Entry>) -> Vec<String> {
    let mut out = Vec::new();
    for (p, e) in after {
        match before.get(p) {
            None => out.push(format!("created {} ({})", p.display(), e.kind)),
            Some(b) if b != e => out.push(format!("changed {}: {b:?} -> {e:?}", p.display())),
            _ => {}
        }
    }
    for p in before.keys() {
        if !after.contains_key(p) {
            out.push(format!("removed {}", p.display()));
        }
    }
    out
}

/// A project with a tracker, the sentinel and the containment record.
pub struct World {
    p: Project,
    pub issues: PathBuf,
    pub outside: PathBuf,
    /// Paths under the roots the test created (the daemon may create none).
    made: BTreeSet<PathBuf>,
    /// The snapshot of everything outside roots, state and harness.
    outside_before: Option<BTreeMap<PathBuf, Entry>>,
    /// The roots' entries when the daemon started.
    roots_before: BTreeSet<PathBuf>,
}

impl Deref for World {
    type Target = Project;
    fn deref(&self) -> &Project {
        &self.p
    }
}

impl DerefMut for World {
    fn deref_mut(&mut self) -> &mut Project {
        &mut self.p
    }
}

impl World {
    /// A project named `proj` with quick settling, retries and polling,
    /// logging at info level, its daemons' HOME the sentinel.
    pub fn new() -> World {
        let mut p = Project::with_tracker("proj");
        p.configure(|c| {
            c.num("project", "settle_ms", 20)
                .num("sessions", "retry_initial_ms", 20)
                .num("sessions", "retry_max_ms", 200)
                .num("events", "poll_interval_ms", 50)
                .log("stderr", "info");
        });
        let outside = p.root.join("outside");
        p.env.push(("HOME".into(), outside.display().to_string()));
        let w = World {
            issues: p.root.join("issues.jsonl"),
            outside,
            p,
            made: BTreeSet::new(),
            outside_before: None,
            roots_before: BTreeSet::new(),
        };
        fs::create_dir_all(&w.outside).unwrap();
        // Bait: what a climbing session id or mount name would hit.
        fs::write(w.outside.join("fifo.in"), "").unwrap();
        mkfifo(&w.outside.join("pipe"));
        fs::create_dir_all(w.outside.join("s")).unwrap();
        fs::write(w.outside.join("s").join("fifo.in"), "").unwrap();
        fs::write(w.outside.join("ready"), "bd-out\topen\t0\t-\t-\toutside\n").unwrap();
        w
    }

    /// Start `reveille run` and wait until it is ready. The first start
    /// takes the "before" snapshots.
    pub fn start(&mut self) -> Daemon {
        let d = self.spawn();
        d.wait_ready(WAIT);
        d
    }

    /// Start without waiting for readiness.
    pub fn spawn(&mut self) -> Daemon {
        if self.outside_before.is_none() {
            self.outside_before = Some(self.outside_tree());
            self.roots_before = self.roots_tree().into_keys().collect();
        }
        Daemon::spawn(&self.p)
    }

    fn outside_tree(&self) -> BTreeMap<PathBuf, Entry> {
        let p = &self.p;
        let skip: Vec<&Path> = vec![
            &p.plan_dir,
            &p.sessions_dir,
            &p.beads,
            &self.issues,
            &p.state_dir,
            &p.harness,
        ];
        tree(&p.root, &skip)
    }

    fn roots_tree(&self) -> BTreeMap<PathBuf, Entry> {
        let mut t = tree(&self.p.plan_dir, &[]);
        t.extend(tree(&self.p.sessions_dir, &[]));
        t.extend(tree(&self.p.beads, &[]));
        t
    }

    /// Record that the test created `path` (and its parents) under a root.
    pub fn made(&mut self, path: &Path) {
        let mut p = path.to_path_buf();
        loop {
            self.made.insert(p.clone());
            if !p.pop() || p == self.p.root {
                break;
            }
        }
    }

    /// The daemon changed nothing outside its roots and state directory,
    /// and created nothing inside the roots.
    pub fn assert_contained(&self) {
        let before = self.outside_before.as_ref().expect("daemon never started");
        let changes = diff(before, &self.outside_tree());
        assert!(
            changes.is_empty(),
            "written outside the roots: {changes:#?}"
        );
        let strays: Vec<PathBuf> = self
            .roots_tree()
            .into_keys()
            .filter(|p| !self.roots_before.contains(p) && !self.made.contains(p))
            .collect();
        assert!(strays.is_empty(), "created inside the roots: {strays:#?}");
        for p in ["/etc/fifo.in", "/fifo.in", "/etc/ready"] {
            assert!(!Path::new(p).exists(), "{p} exists");
        }
        let outside = fs::read(self.outside.join("fifo.in")).unwrap();
        assert!(outside.is_empty(), "the bait fifo.in outside was written");
    }

    /// Write a plan file (open, truncate, write, close) under the plan dir.
    pub fn write_plan(&mut self, name: &str, text: impl AsRef<[u8]>) -> PathBuf {
        let p = self.p.plan_dir.join(name);
        fs::write(&p, text).unwrap();
        self.made(&p);
        p
    }

    /// A session directory with a named pipe as its enqueue file, and a
    /// reader on it.
    pub fn fifo_session(&mut self, id: &str) -> Reader {
        let fifo = self.p.session(id);
        self.made(&fifo);
        Reader::open(&fifo)
    }

    /// A session directory without an enqueue file.
    pub fn session_dir(&mut self, id: &str) -> PathBuf {
        let dir = self.p.session_dir(id);
        self.made(&dir);
        dir
    }

    /// Append raw bytes to the tracker's event log.
    pub fn append_events(&mut self, bytes: &[u8]) {
        self.p.append_events(bytes);
        let events = self.p.events.clone();
        self.made(&events);
    }

    /// The daemon still works: a new plan routed to the `good` session (a
    /// FIFO read by `good`) wakes it with its first step.
    pub fn assert_alive(&mut self, good: &Reader) {
        let uid = fresh_uid();
        let title = format!("alive check {uid:x}");
        self.write_plan(
            &plan_name(uid, "alive"),
            format!("# Still alive\n<!-- session: {GOOD} -->\n\n- [ ] {title}\n- [ ] after it\n"),
        );
        good.wait_for(&title, WAIT);
    }
}
