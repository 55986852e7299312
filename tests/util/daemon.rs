//! Running the real `reveille` binary against a temporary project: plan and
//! session directories, real named pipes with real readers, real inotify.
//!
//! ```ignore
//! let p = Project::new();
//! let s = p.session("agent");
//! let reader = Reader::open(&s);
//! let d = Daemon::start(&p);
//! let plan = task_plan(&p.plan_dir, "Ship it", &[Step::new("Build"), Step::new("Test")]);
//! assert!(reader.next(WAIT).contains("Build"));
//! ```
//!
//! Nothing here sleeps and hopes: the daemon is ready when its log says so,
//! prompts are read with timeouts, and "nothing else arrived" is proven with
//! a barrier (a later, known wake-up that must be the next prompt).

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{kill, Signal};
use nix::sys::stat::Mode;
use nix::unistd::Pid;

use super::wait_until;

/// How long a test waits for something that should happen at once. Generous
/// (a loaded CI machine), yet far below the 10 s a test may take.
pub const WAIT: Duration = Duration::from_secs(5);

/// The `reveille` binary under test.
pub fn bin() -> &'static str {
    super::launch::BIN
}

/// A command running the binary with the harness's one environment policy
/// (see `launch`).
pub use super::launch::command;

/// A project in a temporary directory: `pl/` (plan_dir), `s/` (sessions_dir),
/// `state/`, and `reveille.toml`.
pub struct Project {
    /// Removed on drop unless `REVEILLE_KEEP_TMP` is set.
    dir: Option<tempfile::TempDir>,
    pub root: PathBuf,
    pub plan_dir: PathBuf,
    pub sessions_dir: PathBuf,
    pub state_dir: PathBuf,
    pub config: PathBuf,
    /// `(section, key) -> TOML value`, written to `reveille.toml`.
    settings: BTreeMap<(String, String), String>,
    /// How many daemons were started, to name their log files.
    starts: AtomicU32,
    /// Environment variables every daemon of this project gets.
    pub env: Vec<(String, String)>,
}

fn toml_str(s: &str) -> String {
    format!("{s:?}")
}

impl Project {
    /// A project with no default session.
    pub fn new() -> Project {
        let dir = tempfile::Builder::new()
            .prefix("reveille-it-")
            .tempdir()
            .expect("temp dir");
        let root = dir.path().to_path_buf();
        let plan_dir = root.join("pl");
        let sessions_dir = root.join("s");
        let state_dir = root.join("state");
        fs::create_dir(&plan_dir).unwrap();
        fs::create_dir(&sessions_dir).unwrap();
        let mut p = Project {
            dir: Some(dir),
            config: root.join("reveille.toml"),
            root,
            plan_dir,
            sessions_dir,
            state_dir,
            settings: BTreeMap::new(),
            starts: AtomicU32::new(0),
            env: Vec::new(),
        };
        let (plan_dir, sessions_dir, state_dir) = (
            p.plan_dir.display().to_string(),
            p.sessions_dir.display().to_string(),
            p.state_dir.display().to_string(),
        );
        p.set("project", "name", &toml_str("it"));
        p.set("project", "plan_dir", &toml_str(&plan_dir));
        p.set("sessions", "dir", &toml_str(&sessions_dir));
        p.set("state", "dir", &toml_str(&state_dir));
        p.set("log", "target", &toml_str("stderr"));
        p.set("log", "level", &toml_str("debug"));
        p.set("events", "path", &toml_str(""));
        p
    }

    /// A project whose plans go to `session` unless they say otherwise.
    pub fn with_default_session(session: &str) -> Project {
        let mut p = Project::new();
        p.set("project", "default_session", &toml_str(session));
        p
    }

    /// Set `[section] key = value` (`value` is TOML: quote strings) and
    /// rewrite the configuration file.
    pub fn set(&mut self, section: &str, key: &str, value: &str) {
        self.settings
            .insert((section.to_string(), key.to_string()), value.to_string());
        self.write_config();
    }

    /// Remove `[section] key` and rewrite the configuration file.
    pub fn unset(&mut self, section: &str, key: &str) {
        self.settings
            .remove(&(section.to_string(), key.to_string()));
        self.write_config();
    }

    /// The configuration file's text.
    pub fn config_text(&self) -> String {
        let mut out = String::new();
        let mut current = None;
        for ((section, key), value) in &self.settings {
            if current != Some(section) {
                out.push_str(&format!("\n[{section}]\n"));
                current = Some(section);
            }
            out.push_str(&format!("{key} = {value}\n"));
        }
        out
    }

    fn write_config(&self) {
        fs::write(&self.config, self.config_text()).unwrap();
    }

    /// Overwrite the configuration file with arbitrary text (a broken one).
    pub fn write_config_raw(&self, text: &str) {
        fs::write(&self.config, text).unwrap();
    }

    /// Create `s/<id>/` and a named pipe `s/<id>/fifo.in`; returns the pipe.
    pub fn session(&self, id: &str) -> PathBuf {
        let dir = self.sessions_dir.join(id);
        fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo.in");
        nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o600)).expect("mkfifo");
        fifo
    }

    /// `reveille <args…> --config reveille.toml`, run to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        command()
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .output()
            .expect("run reveille")
    }

    /// `reveille <args…> --config reveille.toml` as a child, waited for at
    /// most `WAIT` (killed and a panic after that). Returns the exit status,
    /// stdout and stderr.
    pub fn run_bounded(&self, args: &[&str]) -> Output {
        let child = command()
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn reveille");
        let pid = Pid::from_raw(child.id() as i32);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(WAIT) {
            Ok(out) => out.expect("wait for reveille"),
            Err(_) => {
                let _ = kill(pid, Signal::SIGKILL);
                panic!("reveille {args:?} did not exit within {WAIT:?}");
            }
        }
    }

    /// `reveille status --json`, parsed.
    pub fn status_json(&self) -> serde_json::Value {
        let out = self.run(&["status", "--json"]);
        assert!(
            out.status.success(),
            "reveille status --json failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "status --json is not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    /// The step labels pending in `session`'s outbox, per `status --json`.
    pub fn pending(&self, session: &str) -> Vec<String> {
        let status = self.status_json();
        status["outbox"][session]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|p| p["step"].as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn next_log(&self) -> PathBuf {
        let n = self.starts.fetch_add(1, Ordering::SeqCst) + 1;
        self.root.join(format!("daemon-{n}.log"))
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        if std::env::var_os("REVEILLE_KEEP_TMP").is_some() {
            if let Some(dir) = self.dir.take() {
                let path = dir.keep();
                eprintln!("REVEILLE_KEEP_TMP: kept {}", path.display());
            }
        }
    }
}

/// A reader of a session's named pipe: a thread that reads NUL-terminated
/// prompts (the `auto` framing on a pipe) and hands them over a channel.
///
/// It opens the pipe read-write, so it stays a reader (no EOF) while the
/// daemon opens and closes its writing end for each prompt, and so the open
/// itself never blocks.
pub struct Reader {
    path: PathBuf,
    rx: mpsc::Receiver<String>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Reader {
    /// Open `fifo` for reading now (the open has happened when this returns).
    pub fn open(fifo: &Path) -> Reader {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo)
            .unwrap_or_else(|e| panic!("open {} for reading: {e}", fifo.display()));
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || read_prompts(file, tx, flag));
        Reader {
            path: fifo.to_path_buf(),
            rx,
            stop,
            thread: Some(thread),
        }
    }

    /// The next prompt; panics if none arrives within `timeout`.
    pub fn next(&self, timeout: Duration) -> String {
        match self.rx.recv_timeout(timeout) {
            Ok(p) => p,
            Err(_) => panic!(
                "no prompt arrived on {} within {timeout:?}",
                self.path.display()
            ),
        }
    }

    /// The next prompt, or `None` after `timeout`.
    pub fn try_next(&self, timeout: Duration) -> Option<String> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// Every prompt already received, without waiting.
    pub fn drain(&self) -> Vec<String> {
        self.rx.try_iter().collect()
    }

    /// Close the pipe: from now on the session has no reader. Returns what
    /// was received and not yet taken.
    pub fn close(mut self) -> Vec<String> {
        self.shutdown();
        self.rx.try_iter().collect()
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().expect("reader thread");
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn read_prompts(mut file: File, tx: mpsc::Sender<String>, stop: Arc<AtomicBool>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: one valid pollfd, for an fd this thread owns.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 1, 20) };
        if n <= 0 {
            continue;
        }
        match file.read(&mut chunk) {
            Ok(0) => continue,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|&b| b == 0) {
                    let prompt = String::from_utf8_lossy(&buf[..end]).into_owned();
                    buf.drain(..=end);
                    if tx.send(prompt).is_err() {
                        return;
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => panic!("reading the FIFO: {e}"),
        }
    }
    // The file is closed here, on the reader thread's exit.
}

/// A running `reveille run`. Dropping it kills it (SIGKILL) and reaps it.
pub struct Daemon {
    child: Option<Child>,
    /// Its stderr.
    pub log_path: PathBuf,
}

impl Daemon {
    /// Start `reveille run --config …` and wait for its `ready:` line.
    pub fn start(project: &Project) -> Daemon {
        let d = Daemon::spawn(project);
        d.wait_log("ready:", WAIT);
        d
    }

    /// Start without waiting for readiness.
    pub fn spawn(project: &Project) -> Daemon {
        let log_path = project.next_log();
        let log = File::create(&log_path).unwrap();
        let child = command()
            .envs(project.env.iter().map(|(k, v)| (k, v)))
            .arg("run")
            .arg("--config")
            .arg(&project.config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn reveille run");
        Daemon {
            child: Some(child),
            log_path,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// How many log lines contain `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        self.log().lines().filter(|l| l.contains(needle)).count()
    }

    /// Wait until the log contains `needle`; returns the first such line.
    /// Panics (with the log) on timeout or if the daemon exits first.
    pub fn wait_log(&self, needle: &str, timeout: Duration) -> String {
        self.wait_log_count(needle, 1, timeout)
    }

    /// Wait until `n` log lines contain `needle`; returns the n-th.
    pub fn wait_log_count(&self, needle: &str, n: usize, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        let mut delay = Duration::from_millis(2);
        loop {
            let log = self.log();
            if let Some(line) = log.lines().filter(|l| l.contains(needle)).nth(n - 1) {
                return line.to_string();
            }
            if let Some(status) = self.exited() {
                panic!("reveille exited ({status}) before logging {needle:?}; log:\n{log}");
            }
            if Instant::now() >= deadline {
                panic!(
                    "timed out after {timeout:?} waiting for {n}× {needle:?} in the log:\n{log}"
                );
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_millis(50));
        }
    }

    fn exited(&self) -> Option<String> {
        // Peek without reaping: /proc says whether it is a zombie.
        let pid = self.child.as_ref()?.id();
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let state = stat.rsplit(')').next()?.split_whitespace().next()?;
        (state == "Z").then(|| "exited".to_string())
    }

    fn signal(&self, sig: Signal) {
        kill(Pid::from_raw(self.pid() as i32), sig).expect("kill");
    }

    /// SIGHUP: reload the configuration.
    pub fn hup(&self) {
        self.signal(Signal::SIGHUP);
    }

    /// SIGKILL, and reap it.
    pub fn kill9(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, and wait (at most `WAIT`) for it to exit.
    pub fn term(mut self) -> ExitStatus {
        self.signal(Signal::SIGTERM);
        let mut child = self.child.take().unwrap();
        wait_until("reveille to exit after SIGTERM", WAIT, || {
            child.try_wait().expect("wait")
        })
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One step for `task_plan`.
#[derive(Debug, Clone, Default)]
pub struct Step {
    pub title: String,
    pub description: String,
    /// `None`: no annotation (waits for the step before); `Some("none")`, a
    /// root; `Some("1, 2")`, after steps 1 and 2.
    pub after: Option<String>,
}

impl Step {
    pub fn new(title: &str) -> Step {
        Step {
            title: title.to_string(),
            ..Step::default()
        }
    }

    pub fn desc(mut self, description: &str) -> Step {
        self.description = description.to_string();
        self
    }

    pub fn after(mut self, refs: &str) -> Step {
        self.after = Some(refs.to_string());
        self
    }
}

/// `YYYYMMDDTHHMMSS` for unix seconds, UTC.
fn stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A fresh 8-hex-digit plan uid, unique within this test process.
fn uid8() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let mixed = (std::process::id().wrapping_mul(2_654_435_761)) ^ nanos.rotate_left(7);
    format!("{:08x}", (mixed & 0xffff_0000) | (n & 0xffff))
}

fn slug(goal: &str) -> String {
    let mut s = String::new();
    for c in goal.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') && !s.is_empty() {
            s.push('-');
        }
    }
    s.trim_end_matches('-').chars().take(40).collect()
}

/// The stock plan text the planning tool writes.
pub fn plan_text(goal: &str, steps: &[Step], extra: &str) -> String {
    let mut out = format!("# {goal}\n\n");
    out.push_str(extra);
    for s in steps {
        out.push_str(&format!("- [ ] {}", s.title));
        if let Some(after) = &s.after {
            out.push_str(&format!(" (after: {after})"));
        }
        out.push('\n');
        for line in s.description.lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

/// Write a plan as `task_plan` does:
/// `<dir>/YYYYMMDDTHHMMSS_<uid8>--<slug>__todo.md`.
pub fn task_plan(dir: &Path, goal: &str, steps: &[Step]) -> PathBuf {
    task_plan_with(dir, goal, steps, "")
}

/// `task_plan` with extra lines (e.g. a session comment) after the goal.
pub fn task_plan_with(dir: &Path, goal: &str, steps: &[Step], extra: &str) -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let name = format!("{}_{}--{}__todo.md", stamp(secs), uid8(), slug(goal));
    let path = dir.join(name);
    write_in_place(&path, plan_text(goal, steps, extra).as_bytes());
    path
}

/// Open (creating), truncate, write, close — one writer, in place.
/// Returns the instant just before the `close(2)`, the event the daemon
/// reacts to (for latency measurements).
pub fn write_in_place(path: &Path, bytes: &[u8]) -> Instant {
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    f.write_all(bytes).unwrap();
    let closing = Instant::now();
    drop(f);
    closing
}

/// Flip the first unchecked step whose title contains `substring` to `[x]`,
/// in place, as the `task_complete` tool did (`doubles::plan_edit`: case
/// ignored, indentation kept). Panics if there is none.
pub fn task_complete(path: &Path, substring: &str) {
    flip(path, substring, "- [ ] ", "- [x] ");
}

/// `task_complete`, returning the instant just before its `close(2)`.
pub fn task_complete_timed(path: &Path, substring: &str) -> Instant {
    flip(path, substring, "- [ ] ", "- [x] ")
}

/// The reverse of `task_complete`: uncheck the first checked step whose
/// title contains `substring` (an agent that reopens a step).
pub fn task_uncheck(path: &Path, substring: &str) {
    flip(path, substring, "- [x] ", "- [ ] ");
}

fn flip(path: &Path, substring: &str, from: &str, to: &str) -> Instant {
    let flipped = crate::doubles::plan_edit::flip(path, substring, from, to)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    flipped.unwrap_or_else(|| {
        panic!(
            "no step {from:?} containing {substring:?} in {}",
            path.display()
        )
    })
}

/// `x__todo.md` → `x__<state>.md`, by `rename(2)`. Returns the new path.
pub fn rename_state(path: &Path, state: &str) -> PathBuf {
    let name = path.file_name().unwrap().to_str().unwrap();
    let (head, _) = name.rsplit_once("__").expect("a plan file name");
    let to = path.with_file_name(format!("{head}__{state}.md"));
    fs::rename(path, &to).unwrap();
    to
}

/// The file name of a path, as prompts show it.
pub fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// Prove that no other prompt is on its way to `reader`'s session: write a
/// new one-step plan (routed by `extra`, e.g. a session comment, or the
/// default session) and require that its prompt is the very next one
/// received. Anything announced before it for that session would arrive
/// first, since a session's prompts are delivered in announcement order.
pub fn barrier(plan_dir: &Path, reader: &Reader, extra: &str) {
    let before = until_barrier(plan_dir, reader, extra);
    assert!(
        before.is_empty(),
        "unexpected prompts arrived before the barrier:\n{}",
        before.join("\n----\n")
    );
}

/// Like `barrier`, but returns the prompts that arrived before the
/// barrier's own (for tests that count them).
pub fn until_barrier(plan_dir: &Path, reader: &Reader, extra: &str) -> Vec<String> {
    let goal = format!("barrier {}", uid8());
    let path = task_plan_with(plan_dir, &goal, &[Step::new("Barrier step")], extra);
    let mut before = Vec::new();
    loop {
        let got = reader.try_next(WAIT).unwrap_or_else(|| {
            panic!(
                "the barrier {} never arrived; before it:\n{}",
                file_name(&path),
                before.join("\n----\n")
            )
        });
        // The goal, or the file name for templates without the goal.
        if got.contains(&goal) || got.contains(&file_name(&path)) {
            return before;
        }
        before.push(got);
    }
}
