//! What the reliability tests add to the one daemon harness
//! (`util::project`, `util::daemon`, `util::fifo`): their project preset
//! (a tracker with an empty event log and ready file, one-line prompts
//! that are easy to parse, quick retries), a start that allows for a long
//! start-up scan, a guard that lowers an inotify sysctl and restores it on
//! drop (even on panic), and a tiny seeded RNG.

use std::fs::{self, File, OpenOptions};
use std::path::PathBuf;
use std::time::Duration;

use crate::util::daemon::Daemon;
use crate::util::project::Project;

/// The step prompt the preset configures: one line, easy to parse.
pub const STEP_TEMPLATE: &str = "STEP {session} {plan} {id} {title}";
/// The all-done nudge the preset configures.
pub const DONE_TEMPLATE: &str = "DONE {session} {plan}";

/// How long a (re)started daemon may take to be ready: a restart replays
/// the journal and rescans every plan.
pub const READY: Duration = Duration::from_secs(30);

/// A project named `name` with a tracker (an empty event log, an empty
/// ready file for the mount `name`), the one-line templates, quick retries,
/// `REVEILLE_TEST_LOG_LEVEL` (default `info`) as the log level, and its
/// daemons' HOME and XDG_CONFIG_HOME inside the temp dir.
pub fn project(name: &str) -> Project {
    let mut p = Project::with_tracker(name);
    fs::create_dir_all(p.beads.join(name)).unwrap();
    fs::write(&p.events, "").unwrap();
    fs::write(ready_file(&p, name), "").unwrap();
    // `REVEILLE_TEST_LOG_LEVEL=debug` to see every delivery.
    let level = std::env::var("REVEILLE_TEST_LOG_LEVEL").unwrap_or_else(|_| "info".into());
    p.configure(|c| {
        c.num("sessions", "retry_max_ms", 200)
            .str("prompt", "template", STEP_TEMPLATE)
            .str("prompt", "done_template", DONE_TEMPLATE)
            .log("stderr", &level);
    });
    let (home, config) = (p.root.clone(), p.root.join("config"));
    p.env.push(("HOME".into(), home.display().to_string()));
    p.env
        .push(("XDG_CONFIG_HOME".into(), config.display().to_string()));
    p
}

/// The mount `name`'s ready file.
pub fn ready_file(p: &Project, name: &str) -> PathBuf {
    p.beads.join(name).join("ready")
}

/// Start a daemon and wait (`READY`) until it is ready.
pub fn start(p: &Project) -> Daemon {
    let d = Daemon::spawn(p);
    d.wait_ready(READY);
    d
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
