//! A running `reveille run` against a [`Project`]: the one way tests start,
//! signal, kill and restart the real daemon and read its log (its stderr,
//! one file per start under the project's `harness/`).
//!
//! ```ignore
//! let p = Project::new();
//! let reader = p.reader("agent");
//! let d = Daemon::start(&p);        // waits for the `ready:` line
//! d.kill9();
//! let d = Daemon::start(&p);        // a restart: a new log file
//! ```
//!
//! Nothing here sleeps and hopes: the daemon is ready when its log says so,
//! log lines are waited for with timeouts, and a daemon that exits while
//! a test waits on it fails the test with its log.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::project::Project;

/// How long a test waits for something that should happen at once. Generous
/// (a loaded CI machine), yet far below the 10 s a test may take.
pub const WAIT: Duration = Duration::from_secs(5);

/// How long `term` waits for the daemon to drain and exit.
const TERM_WAIT: Duration = Duration::from_secs(30);

/// The `reveille` binary under test.
pub fn bin() -> &'static str {
    super::launch::BIN
}

/// A command running the binary with the harness's one environment policy
/// (see `launch`).
pub use super::launch::command;

/// A running `reveille run`. Dropping it kills it (SIGKILL) and reaps it.
pub struct Daemon {
    child: Option<Child>,
    /// Its stderr.
    pub log_path: PathBuf,
}

impl Daemon {
    /// Start `reveille run --config …` and wait (`WAIT`) for its `ready:`
    /// line.
    pub fn start(project: &Project) -> Daemon {
        let d = Daemon::spawn(project);
        d.wait_ready(WAIT);
        d
    }

    /// Start without waiting for readiness.
    pub fn spawn(project: &Project) -> Daemon {
        let log_path = project.next_log();
        let log = fs::File::create(&log_path).unwrap();
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

    /// Wait (at most `timeout`) for the ` ready: ` line.
    pub fn wait_ready(&self, timeout: Duration) {
        self.wait_log(" ready: ", timeout);
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        String::from_utf8_lossy(&fs::read(&self.log_path).unwrap_or_default()).into_owned()
    }

    /// The log lines containing `needle`.
    pub fn lines_with(&self, needle: &str) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_string)
            .collect()
    }

    /// How many log lines contain `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        self.lines_with(needle).len()
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
            if self.exited() {
                panic!("reveille exited before logging {needle:?}; log:\n{log}");
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

    /// Whether it has exited (a zombie, or gone).
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

    /// It is running and has logged no panic.
    pub fn assert_running(&self) {
        assert!(!self.exited(), "daemon exited:\n{}", self.log());
        assert!(!self.log().contains("panicked"), "{}", self.log());
    }

    /// Send `sig`.
    pub fn signal(&self, sig: Signal) {
        kill(Pid::from_raw(self.pid() as i32), sig).expect("kill");
    }

    /// SIGHUP: reload the configuration.
    pub fn hup(&self) {
        self.signal(Signal::SIGHUP);
    }

    /// SIGSTOP: frozen until `sigcont`.
    pub fn sigstop(&self) {
        self.signal(Signal::SIGSTOP);
    }

    pub fn sigcont(&self) {
        self.signal(Signal::SIGCONT);
    }

    /// Its resident set size in KiB (0 when it cannot be read).
    pub fn rss_kb(&self) -> u64 {
        fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0)
    }

    /// How many file descriptors it has open.
    pub fn fd_count(&self) -> usize {
        fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// SIGKILL, and reap it: when this returns the daemon is gone.
    pub fn kill9(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, and wait for it to drain and exit; panics (with the log)
    /// if it has not within 30 s.
    pub fn term(mut self) -> ExitStatus {
        self.signal(Signal::SIGTERM);
        let mut child = self.child.take().unwrap();
        let log = self.log_path.clone();
        super::try_wait_until(TERM_WAIT, || child.try_wait().expect("wait")).unwrap_or_else(|| {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "reveille did not exit within {TERM_WAIT:?} of SIGTERM; log:\n{}",
                fs::read_to_string(log).unwrap_or_default()
            )
        })
    }

    /// `term`, and require a clean exit.
    pub fn stop(self) {
        let status = self.term();
        assert!(status.success(), "reveille exited with {status}");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGCONT);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
