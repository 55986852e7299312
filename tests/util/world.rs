//! A temp-dir world for running the real daemon against hostile input: plan,
//! session and tracker roots, a state directory, and an `outside` sentinel
//! directory that nothing may touch. Every entry the test itself creates
//! inside the roots goes through `World` (or `World::made`), so at the end
//! `assert_contained` can tell that the daemon created nothing — inside
//! the roots or outside them — and changed nothing outside the roots and
//! its state directory.
//!
//! ```text
//! <tmp>/plans            project.plan_dir
//! <tmp>/sessions         sessions.dir
//! <tmp>/beads            events.beads_root; <tmp>/beads/events is the log
//! <tmp>/issues.jsonl     beads.issues_jsonl (only when enabled)
//! <tmp>/state            state.dir
//! <tmp>/outside          sentinel: a dir, a regular `fifo.in`, a FIFO
//! <tmp>/harness          the config file and the daemon's stderr
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::wait_until;

/// How long any single condition may take before a test fails.
pub const WAIT: Duration = Duration::from_secs(15);

/// The session every world's `good` plans are routed to.
pub const GOOD: &str = "good";

/// A fresh plan file name: `20260101T093000_<uid>--<slug>__todo.md`.
pub fn plan_name(uid: u32, slug: &str) -> String {
    format!("20260101T093000_{uid:08x}--{slug}__todo.md")
}

/// Create a named pipe.
pub fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(
        rc,
        0,
        "mkfifo {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

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

static UID: AtomicU32 = AtomicU32::new(0x7000_0000);

/// A plan uid no other plan in this test process has.
pub fn fresh_uid() -> u32 {
    UID.fetch_add(1, Ordering::SeqCst)
}

/// The test's world: roots, state directory, sentinel, configuration.
pub struct World {
    /// Kept on disk when `REVEILLE_KEEP_TMP` is set.
    tmp: Option<tempfile::TempDir>,
    pub root: PathBuf,
    pub plans: PathBuf,
    pub sessions: PathBuf,
    pub beads: PathBuf,
    pub events: PathBuf,
    pub issues: PathBuf,
    pub state: PathBuf,
    pub outside: PathBuf,
    pub harness: PathBuf,
    /// Extra configuration lines per section, over the world's defaults.
    sections: BTreeMap<String, Vec<String>>,
    /// Paths under the roots the test created (the daemon may create none).
    made: BTreeSet<PathBuf>,
    /// The snapshot of everything outside roots, state and harness.
    outside_before: Option<BTreeMap<PathBuf, Entry>>,
    /// The roots' entries when the daemon started.
    roots_before: BTreeSet<PathBuf>,
}

impl World {
    pub fn new() -> World {
        let tmp = tempfile::Builder::new()
            .prefix("reveille-hostile-")
            .tempdir()
            .unwrap();
        let root = tmp.path().to_path_buf();
        let w = World {
            plans: root.join("plans"),
            sessions: root.join("sessions"),
            beads: root.join("beads"),
            events: root.join("beads").join("events"),
            issues: root.join("issues.jsonl"),
            state: root.join("state"),
            outside: root.join("outside"),
            harness: root.join("harness"),
            root,
            tmp: Some(tmp),
            sections: BTreeMap::new(),
            made: BTreeSet::new(),
            outside_before: None,
            roots_before: BTreeSet::new(),
        };
        for d in [&w.plans, &w.sessions, &w.beads, &w.outside, &w.harness] {
            fs::create_dir_all(d).unwrap();
        }
        // Bait: what a climbing session id or mount name would hit.
        fs::write(w.outside.join("fifo.in"), "").unwrap();
        mkfifo(&w.outside.join("pipe"));
        fs::create_dir_all(w.outside.join("s")).unwrap();
        fs::write(w.outside.join("s").join("fifo.in"), "").unwrap();
        fs::write(w.outside.join("ready"), "bd-out\topen\t0\t-\t-\toutside\n").unwrap();
        w
    }

    /// Set `key = value` (value as TOML) in `[section]`.
    pub fn set(&mut self, section: &str, key: &str, value: &str) -> &mut World {
        self.sections
            .entry(section.to_string())
            .or_default()
            .push(format!("{key} = {value}"));
        self
    }

    /// The configuration file the daemon runs with.
    pub fn config_text(&self) -> String {
        let q = |p: &Path| format!("{:?}", p.display().to_string());
        let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut put = |s: &str, l: String| sections.entry(s.to_string()).or_default().push(l);
        put("project", "name = \"proj\"".into());
        put("project", format!("plan_dir = {}", q(&self.plans)));
        put("project", "settle_ms = 20".into());
        put("sessions", format!("dir = {}", q(&self.sessions)));
        put("sessions", "retry_initial_ms = 20".into());
        put("sessions", "retry_max_ms = 200".into());
        put("events", format!("path = {}", q(&self.events)));
        put("events", format!("beads_root = {}", q(&self.beads)));
        put("events", "poll_interval_ms = 50".into());
        // A fake local tree has no `mtab`: its one mount is named.
        put("events", "mounts = [\"proj\"]".into());
        put("state", format!("dir = {}", q(&self.state)));
        put("log", "target = \"stderr\"".into());
        put("log", "level = \"info\"".into());
        for (s, lines) in &self.sections {
            for l in lines {
                // A key set by the test replaces the world's default.
                let key = l.split('=').next().unwrap().trim().to_string();
                let v = sections.entry(s.clone()).or_default();
                v.retain(|old| old.split('=').next().unwrap().trim() != key);
                v.push(l.clone());
            }
        }
        let mut text = String::new();
        // Sub-tables (`events.assignees`) after their parents.
        for (s, lines) in &sections {
            text.push_str(&format!("[{s}]\n"));
            for l in lines {
                text.push_str(l);
                text.push('\n');
            }
        }
        text
    }

    pub fn config_path(&self) -> PathBuf {
        self.harness.join("reveille.toml")
    }

    /// Write the configuration and start `reveille run`; wait until it is
    /// ready. Takes the "before" snapshots.
    pub fn start(&mut self) -> Running {
        let d = self.spawn();
        d.wait_log("the daemon to be ready", "ready: ");
        d
    }

    /// Start without waiting for readiness.
    pub fn spawn(&mut self) -> Running {
        fs::write(self.config_path(), self.config_text()).unwrap();
        if self.outside_before.is_none() {
            self.outside_before = Some(self.outside_tree());
            self.roots_before = self.roots_tree().into_keys().collect();
        }
        let log = self.harness.join(format!("daemon-{}.log", fresh_uid()));
        let err = File::create(&log).unwrap();
        let child = super::launch::command()
            .arg("run")
            .arg("--config")
            .arg(self.config_path())
            .env("HOME", &self.outside)
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap();
        Running {
            child: Some(child),
            log,
        }
    }

    fn outside_tree(&self) -> BTreeMap<PathBuf, Entry> {
        let skip: Vec<&Path> = vec![
            &self.plans,
            &self.sessions,
            &self.beads,
            &self.issues,
            &self.state,
            &self.harness,
        ];
        tree(&self.root, &skip)
    }

    fn roots_tree(&self) -> BTreeMap<PathBuf, Entry> {
        let mut t = tree(&self.plans, &[]);
        t.extend(tree(&self.sessions, &[]));
        t.extend(tree(&self.beads, &[]));
        t
    }

    /// Record that the test created `path` (and its parents) under a root.
    pub fn made(&mut self, path: &Path) {
        let mut p = path.to_path_buf();
        loop {
            self.made.insert(p.clone());
            if !p.pop() || p == self.root {
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
        let p = self.plans.join(name);
        fs::write(&p, text).unwrap();
        self.made(&p);
        p
    }

    /// A session directory with a named pipe as its enqueue file, read
    /// non-blocking by the returned reader.
    pub fn fifo_session(&mut self, id: &str) -> FifoReader {
        let dir = self.sessions.join(id);
        fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo.in");
        mkfifo(&fifo);
        self.made(&fifo);
        FifoReader::open(&fifo)
    }

    /// A session directory without an enqueue file.
    pub fn session_dir(&mut self, id: &str) -> PathBuf {
        let dir = self.sessions.join(id);
        fs::create_dir_all(&dir).unwrap();
        self.made(&dir);
        dir
    }

    /// Append raw bytes to the tracker's event log.
    pub fn append_events(&mut self, bytes: &[u8]) {
        let mut f = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.events)
            .unwrap();
        f.write_all(bytes).unwrap();
        let events = self.events.clone();
        self.made(&events);
    }

    /// The daemon still works: a new plan routed to the `good` session (a
    /// FIFO read by `good`) wakes it with its first step.
    pub fn assert_alive(&mut self, good: &mut FifoReader) {
        let uid = fresh_uid();
        let title = format!("alive check {uid:x}");
        self.write_plan(
            &plan_name(uid, "alive"),
            format!("# Still alive\n<!-- session: {GOOD} -->\n\n- [ ] {title}\n- [ ] after it\n"),
        );
        good.wait_for(&title);
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if std::env::var_os("REVEILLE_KEEP_TMP").is_some() {
            if let Some(t) = self.tmp.take() {
                eprintln!("keeping {}", t.keep().display());
            }
        }
    }
}

/// A running `reveille run`, killed on drop.
pub struct Running {
    child: Option<Child>,
    pub log: PathBuf,
}

impl Running {
    /// Everything the daemon wrote to stderr so far.
    pub fn log_text(&self) -> String {
        String::from_utf8_lossy(&fs::read(&self.log).unwrap_or_default()).into_owned()
    }

    /// Wait for a log line containing `needle`; returns that line.
    pub fn wait_log(&self, what: &str, needle: &str) -> String {
        wait_until(what, WAIT, || {
            if self.exited() {
                panic!(
                    "daemon exited while waiting for {what}:\n{}",
                    self.log_text()
                );
            }
            self.log_text()
                .lines()
                .find(|l| l.contains(needle))
                .map(str::to_string)
        })
    }

    /// Lines containing `needle`.
    pub fn lines_with(&self, needle: &str) -> Vec<String> {
        self.log_text()
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_string)
            .collect()
    }

    /// How many log lines contain `needle`.
    pub fn count(&self, needle: &str) -> usize {
        self.lines_with(needle).len()
    }

    /// Whether the daemon process has exited (a zombie or gone).
    pub fn exited(&self) -> bool {
        // `try_wait` needs `&mut`; /proc shows a zombie without reaping it.
        let Some(child) = self.child.as_ref() else {
            return true;
        };
        match fs::read_to_string(format!("/proc/{}/stat", child.id())) {
            Ok(s) => s
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z')),
            Err(_) => true,
        }
    }

    /// The daemon is running and has logged no panic.
    pub fn assert_running(&self) {
        assert!(!self.exited(), "daemon exited:\n{}", self.log_text());
        assert!(!self.log_text().contains("panicked"), "{}", self.log_text());
    }

    /// SIGTERM, then wait for the exit (it must drain and exit 0).
    pub fn stop(mut self) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > WAIT {
                let _ = child.kill();
                panic!("daemon did not stop on SIGTERM:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The reading end of a session FIFO, opened read-write and non-blocking so
/// the daemon always sees a reader and the test never blocks. Prompts are
/// NUL-separated (`auto` framing on a named pipe).
pub struct FifoReader {
    file: File,
    buf: Vec<u8>,
}

impl FifoReader {
    pub fn open(path: &Path) -> FifoReader {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .unwrap();
        FifoReader {
            file,
            buf: Vec::new(),
        }
    }

    fn drain(&mut self) {
        let mut chunk = [0u8; 65536];
        loop {
            match self.file.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => panic!("reading the FIFO: {e}"),
            }
        }
    }

    /// Every complete prompt received so far.
    pub fn prompts(&mut self) -> Vec<String> {
        self.drain();
        let mut parts: Vec<&[u8]> = self.buf.split(|&b| b == 0).collect();
        parts.pop(); // after the last NUL: incomplete or empty
        parts
            .into_iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    /// Wait for a prompt containing `needle`.
    pub fn wait_for(&mut self, needle: &str) -> String {
        wait_until(&format!("a prompt containing {needle:?}"), WAIT, || {
            self.prompts().into_iter().find(|p| p.contains(needle))
        })
    }
}
