//! A rig for the reliability tests: the real `reveille` binary run against a
//! temp dir (plans, sessions, tracker files, state), restarted and killed at
//! will, with one reader per session that stays open across restarts and
//! records every prompt.
//!
//! ```ignore
//! let mut rig = Rig::new("crash");
//! let reader = rig.reader("s-a"); // mkfifo + O_RDWR reader thread
//! rig.start();                    // waits for the "ready:" log line
//! rig.kill9();
//! rig.start();
//! ```
//!
//! The daemon logs to `daemon.log` in the temp dir (appended across
//! restarts); the dir is kept when `REVEILLE_KEEP_TMP` is set. Also here:
//! `/proc` sampling (RSS, open fds), a guard that lowers an inotify sysctl
//! and restores it on drop (even on panic), and a tiny seeded RNG.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::wait_until;

/// The step prompt the rig configures: one line, easy to parse.
pub const STEP_TEMPLATE: &str = "STEP {session} {plan} {id} {title}";
/// The all-done nudge the rig configures.
pub const DONE_TEMPLATE: &str = "DONE {session} {plan}";

/// One daemon under test, with its own directories.
pub struct Rig {
    dir: Option<tempfile::TempDir>,
    pub root: PathBuf,
    pub plans: PathBuf,
    pub sessions: PathBuf,
    pub state: PathBuf,
    /// `events.beads_root`; the mount's ready file is `<beads>/<project>/ready`.
    pub beads: PathBuf,
    /// `events.path`.
    pub events: PathBuf,
    pub log: PathBuf,
    pub project: String,
    env: BTreeMap<String, String>,
    child: Option<Child>,
    /// Length of the log when the current daemon was spawned.
    log_mark: u64,
    /// Receives sd_notify datagrams when `with_notify_socket` was called.
    notify: Option<UnixDatagram>,
    /// Every notify message received so far.
    notified: Vec<String>,
    /// How many daemons were started.
    pub starts: usize,
}

impl Rig {
    /// A rig for `project`: empty plan and sessions directories, an empty
    /// tracker event log and ready file, and settings that make prompts
    /// parseable and retries quick.
    pub fn new(project: &str) -> Rig {
        let dir = tempfile::Builder::new()
            .prefix(&format!("reveille-{project}-"))
            .tempdir()
            .expect("tempdir");
        let root = dir.path().to_path_buf();
        let plans = root.join("plans");
        let sessions = root.join("sessions");
        let state = root.join("state");
        let beads = root.join("beads");
        let events = beads.join("events");
        for d in [&plans, &sessions, &beads.join(project)] {
            fs::create_dir_all(d).unwrap();
        }
        fs::write(&events, "").unwrap();
        fs::write(beads.join(project).join("ready"), "").unwrap();
        let mut env = BTreeMap::new();
        let mut set = |k: &str, v: &str| {
            env.insert(k.to_string(), v.to_string());
        };
        set("REVEILLE_PROJECT__NAME", project);
        set("REVEILLE_PROJECT__PLAN_DIR", plans.to_str().unwrap());
        set("REVEILLE_SESSIONS__DIR", sessions.to_str().unwrap());
        set("REVEILLE_STATE__DIR", state.to_str().unwrap());
        set("REVEILLE_EVENTS__PATH", events.to_str().unwrap());
        set("REVEILLE_EVENTS__BEADS_ROOT", beads.to_str().unwrap());
        // A fake local tree has no `mtab`: its one mount is named.
        set("REVEILLE_EVENTS__MOUNTS", &format!("[{project:?}]"));
        set("REVEILLE_SESSIONS__RETRY_MAX_MS", "200");
        set("REVEILLE_PROMPT__TEMPLATE", STEP_TEMPLATE);
        set("REVEILLE_PROMPT__DONE_TEMPLATE", DONE_TEMPLATE);
        set("REVEILLE_LOG__TARGET", "stderr");
        // `REVEILLE_TEST_LOG_LEVEL=debug` to see every delivery.
        let level = std::env::var("REVEILLE_TEST_LOG_LEVEL").unwrap_or_else(|_| "info".into());
        set("REVEILLE_LOG__LEVEL", &level);
        let log = root.join("daemon.log");
        let keep = std::env::var_os("REVEILLE_KEEP_TMP").is_some();
        Rig {
            dir: if keep {
                eprintln!("keeping {}", dir.keep().display());
                None
            } else {
                Some(dir)
            },
            root,
            plans,
            sessions,
            state,
            beads,
            events,
            log,
            project: project.to_string(),
            env,
            child: None,
            log_mark: 0,
            notify: None,
            notified: Vec::new(),
            starts: 0,
        }
    }

    /// Set (or override) a `REVEILLE_*` variable for the next start.
    pub fn set(&mut self, key: &str, value: &str) {
        self.env.insert(key.to_string(), value.to_string());
    }

    /// Receive the daemon's sd_notify messages (READY=1, STATUS=…).
    pub fn with_notify_socket(&mut self) {
        let path = self.root.join("notify.sock");
        let sock = UnixDatagram::bind(&path).expect("bind notify socket");
        sock.set_nonblocking(true).unwrap();
        self.notify = Some(sock);
        self.set("NOTIFY_SOCKET", path.to_str().unwrap());
    }

    /// Every sd_notify message received so far.
    pub fn notified(&mut self) -> &[String] {
        if let Some(sock) = &self.notify {
            let mut buf = vec![0u8; 65536];
            while let Ok(n) = sock.recv(&mut buf) {
                self.notified
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
        }
        &self.notified
    }

    /// The session's directory, created if needed.
    pub fn session_dir(&self, session: &str) -> PathBuf {
        let d = self.sessions.join(session);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// The session's enqueue FIFO, created if needed.
    pub fn fifo(&self, session: &str) -> PathBuf {
        let path = self.session_dir(session).join("fifo.in");
        if !path.exists() {
            nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600))
                .expect("mkfifo");
        }
        path
    }

    /// A reader on the session's FIFO (created if needed).
    pub fn reader(&self, session: &str) -> Reader {
        Reader::open(session, &self.fifo(session))
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = super::launch::command();
        cmd.args(args)
            .env("HOME", &self.root)
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .envs(&self.env);
        cmd
    }

    /// Spawn the daemon without waiting for it to be ready.
    pub fn spawn(&mut self) -> u32 {
        assert!(self.child.is_none(), "a daemon is already running");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        self.log_mark = log.metadata().unwrap().len();
        let child = self
            .command(&["run"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn reveille");
        let pid = child.id();
        self.child = Some(child);
        self.starts += 1;
        pid
    }

    /// Spawn the daemon and wait until it logs that it is ready.
    pub fn start(&mut self) -> u32 {
        let pid = self.spawn();
        self.wait_ready();
        pid
    }

    /// Wait for the current daemon's `ready:` line.
    pub fn wait_ready(&mut self) {
        wait_until("the daemon's ready line", Duration::from_secs(30), || {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("reveille exited with {status}:\n{}", self.log_since_start());
            }
            self.log_since_start().contains(" ready: ").then_some(())
        });
    }

    /// The running daemon's pid.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("no daemon running").id()
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    fn signal(&self, sig: Signal) {
        kill(Pid::from_raw(self.pid() as i32), sig).expect("kill");
    }

    /// `kill -9`, and reap it: when this returns the daemon is gone.
    pub fn kill9(&mut self) {
        self.signal(Signal::SIGKILL);
        self.child.take().unwrap().wait().unwrap();
    }

    /// SIGTERM, and wait for a clean exit.
    pub fn stop(&mut self) {
        self.signal(Signal::SIGTERM);
        let status = self.child.take().unwrap().wait().unwrap();
        assert!(status.success(), "reveille exited with {status}");
    }

    pub fn sigstop(&self) {
        self.signal(Signal::SIGSTOP);
    }

    pub fn sigcont(&self) {
        self.signal(Signal::SIGCONT);
    }

    /// The whole log (every daemon this rig started).
    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The current daemon's part of the log.
    pub fn log_since_start(&self) -> String {
        let text = fs::read(&self.log).unwrap_or_default();
        let from = (self.log_mark as usize).min(text.len());
        String::from_utf8_lossy(&text[from..]).into_owned()
    }

    /// `reveille status --json`, with the daemon's configuration.
    pub fn status(&self) -> serde_json::Value {
        let out = self
            .command(&["status", "--json"])
            .output()
            .expect("reveille status");
        assert!(
            out.status.success(),
            "status failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("status json")
    }

    /// Prompts pending in the outbox, per session (from `status --json`).
    pub fn pending(&self) -> BTreeMap<String, usize> {
        let s = self.status();
        s["outbox"]
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| (k.clone(), v.as_array().map_or(0, Vec::len)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The daemon's resident set size in KiB.
    pub fn rss_kb(&self) -> u64 {
        proc_status_kb(self.pid(), "VmRSS:")
    }

    /// How many file descriptors the daemon has open.
    pub fn fd_count(&self) -> usize {
        fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// Write a file whole and close it (a `task_complete`-style in-place
    /// rewrite: truncate, write, close).
    pub fn write_in_place(path: &Path, text: &str) {
        fs::write(path, text).unwrap();
    }

    /// Write a file next to `path` under a name no watcher cares about,
    /// then rename it into place (an editor's or exporter's save).
    pub fn write_atomic(path: &Path, text: &str) {
        let tmp = path.with_file_name(format!(
            ".{}.tmp",
            path.file_name().unwrap().to_string_lossy()
        ));
        fs::write(&tmp, text).unwrap();
        fs::rename(&tmp, path).unwrap();
    }

    /// Append one line to the tracker's event log.
    pub fn event(&self, line: &str) {
        use std::io::Write;
        let mut f = OpenOptions::new().append(true).open(&self.events).unwrap();
        f.write_all(format!("{line}\n").as_bytes()).unwrap();
    }

    /// The project mount's ready file.
    pub fn ready_file(&self) -> PathBuf {
        self.beads.join(&self.project).join("ready")
    }

    /// Every file under the rig's root, relative to it (for "nothing was
    /// written outside the roots").
    pub fn files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
            for e in fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                out.push(p.strip_prefix(base).unwrap().to_path_buf());
                if e.file_type().unwrap().is_dir() {
                    walk(&p, base, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &self.root, &mut out);
        out
    }

    /// Keep the temp dir (to look at the log after a failure).
    pub fn keep(&mut self) {
        if let Some(d) = self.dir.take() {
            eprintln!("keeping {}", d.keep().display());
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGCONT);
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- daemon log ({}) ---", self.log.display());
            let log = self.log_text();
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            for l in tail.into_iter().rev() {
                eprintln!("{l}");
            }
        }
    }
}

/// A field of `/proc/<pid>/status` in KiB (0 when it cannot be read).
pub fn proc_status_kb(pid: u32, field: &str) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// One prompt as a reader received it.
#[derive(Debug, Clone)]
pub struct Receipt {
    pub at: Instant,
    /// The reader's epoch when it was read (see `Reader::mark_epoch`).
    pub epoch: u64,
    pub text: String,
}

/// A reader on a session FIFO, opened O_RDWR (so it never sees EOF and the
/// daemon can always open the FIFO while it exists), splitting prompts at
/// NUL bytes, until dropped or `close`d.
pub struct Reader {
    pub session: String,
    got: Arc<Mutex<Vec<Receipt>>>,
    stop: Arc<AtomicBool>,
    /// Epoch requested by the test.
    want_epoch: Arc<AtomicU64>,
    /// Epoch the reader thread has reached (pipe drained after the request).
    epoch: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Reader {
    pub fn open(session: &str, fifo: &Path) -> Reader {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo)
            .expect("open fifo O_RDWR");
        let got: Arc<Mutex<Vec<Receipt>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let want_epoch = Arc::new(AtomicU64::new(0));
        let epoch = Arc::new(AtomicU64::new(0));
        let thread = {
            let (got, stop, want_epoch, epoch) =
                (got.clone(), stop.clone(), want_epoch.clone(), epoch.clone());
            std::thread::spawn(move || read_loop(file, got, stop, want_epoch, epoch))
        };
        Reader {
            session: session.to_string(),
            got,
            stop,
            want_epoch,
            epoch,
            thread: Some(thread),
        }
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Receipt> {
        self.got.lock().unwrap().clone()
    }

    pub fn texts(&self) -> Vec<String> {
        self.received().into_iter().map(|r| r.text).collect()
    }

    pub fn count(&self) -> usize {
        self.got.lock().unwrap().len()
    }

    /// Start epoch `n` once everything now in the pipe has been read. Call
    /// it while no daemon runs: prompts tagged `n` were then written by a
    /// daemon started after this call.
    pub fn mark_epoch(&self, n: u64) {
        self.want_epoch.store(n, Ordering::SeqCst);
        wait_until(
            "the reader to drain its FIFO",
            Duration::from_secs(10),
            || (self.epoch.load(Ordering::SeqCst) >= n).then_some(()),
        );
    }

    /// Read what is left in the pipe, then close it.
    pub fn close(mut self) -> Vec<Receipt> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.received()
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_loop(
    mut file: File,
    got: Arc<Mutex<Vec<Receipt>>>,
    stop: Arc<AtomicBool>,
    want_epoch: Arc<AtomicU64>,
    epoch: Arc<AtomicU64>,
) {
    let mut partial: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        // Read until the pipe is empty.
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let now = Instant::now();
                    let e = epoch.load(Ordering::SeqCst);
                    partial.extend_from_slice(&buf[..n]);
                    let mut got = got.lock().unwrap();
                    while let Some(end) = partial.iter().position(|&b| b == 0) {
                        let text = String::from_utf8_lossy(&partial[..end]).into_owned();
                        partial.drain(..=end);
                        got.push(Receipt {
                            at: now,
                            epoch: e,
                            text,
                        });
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => panic!("reading the FIFO: {e}"),
            }
        }
        // The pipe is empty here: an epoch request is satisfied.
        let want = want_epoch.load(Ordering::SeqCst);
        if want > epoch.load(Ordering::SeqCst) {
            assert!(partial.is_empty(), "a prompt was cut in the middle");
            epoch.store(want, Ordering::SeqCst);
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let mut pfd = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut pfd, 1, 20) };
    }
}

/// Lowers an inotify sysctl (`/proc/sys/fs/inotify/<name>`) and restores the
/// old value on drop, even when the test panics. The setting is
/// machine-global: a file lock keeps two tests from fighting over it, and
/// callers keep the window short.
pub struct Sysctl {
    path: PathBuf,
    old: String,
    _lock: nix::fcntl::Flock<File>,
    /// The systemd harness's machine-wide lock: journald and `systemd
    /// --user` add inotify watches while they start, so they must not run
    /// inside the window.
    _systemd: Option<nix::fcntl::Flock<File>>,
}

const SYSCTL_LOCK: &str = "/run/reveille-test-inotify.lock";
/// The lock `util::systemd` holds while journald and a user manager run.
const SYSTEMD_LOCK: &str = "/run/reveille-test-systemd.lock";

impl Sysctl {
    /// `None` (with the reason on stderr) when the sysctl cannot be written
    /// here (not root, read-only /proc); a failure under `CI`.
    pub fn lower(name: &str, value: u64) -> Option<Sysctl> {
        let path = PathBuf::from("/proc/sys/fs/inotify").join(name);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(SYSCTL_LOCK)
            .or_else(|_| {
                OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(std::env::temp_dir().join("reveille-test-inotify.lock"))
            })
            .expect("sysctl lock file");
        let lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .expect("flock");
        let systemd = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(SYSTEMD_LOCK)
            .ok()
            .and_then(|f| nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive).ok());
        let old = fs::read_to_string(&path).ok()?.trim().to_string();
        if let Err(e) = fs::write(&path, value.to_string()) {
            let why = format!("cannot write {}: {e}", path.display());
            if std::env::var_os("CI").is_some() {
                panic!("{why}");
            }
            eprintln!("SKIPPED: {why}");
            return None;
        }
        Some(Sysctl {
            path,
            old,
            _lock: lock,
            _systemd: systemd,
        })
    }

    /// Put the old value back now (also done on drop).
    pub fn restore(self) {}
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        if let Err(e) = fs::write(&self.path, &self.old) {
            eprintln!("cannot restore {}: {e}", self.path.display());
        }
    }
}

/// A small seeded PRNG (xorshift64*), so a failing run can be replayed
/// with the seed it prints.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// From `REVEILLE_TEST_SEED` if set, else the clock; prints the seed.
    pub fn from_env(what: &str) -> Rng {
        let seed = std::env::var("REVEILLE_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{what}: REVEILLE_TEST_SEED={seed}");
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `p` percent.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}
