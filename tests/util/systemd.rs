//! A real `systemd --user` manager (and journald) for tests, so unit files,
//! `sd_notify` and journald fields are checked against the real programs.
//!
//! ```ignore
//! let Some(sd) = SystemdUser::start() else { return }; // skipped off-root
//! sd.install_unit("reveille@.service", UNIT);
//! sd.systemctl_ok(&["start", "reveille@proj"]);
//! let entries = sd.journal_json("reveille@proj.service");
//! ```
//!
//! What it takes on this machine (a VM whose PID 1 is not systemd; cgroups
//! mounted "hybrid": v1 controllers, `name=systemd` v1 and v2 at
//! `/sys/fs/cgroup/unified`):
//! - `/run/systemd/system` must exist, or `systemd --user` refuses with
//!   "system has not been booted with systemd";
//! - a journald (see `journald.rs`);
//! - the manager must start in its **own cgroup**, named as logind would:
//!   `user.slice/user-<uid>.slice/user@<uid>.service`, in every hierarchy
//!   systemd tracks (`name=systemd` and the v2 one). Started in the root
//!   cgroup, it moves *every process of the machine* into `/init.scope`;
//!   and journald derives `_SYSTEMD_USER_UNIT` from that path, so without it
//!   user units' output is filed as a system unit's;
//! - it runs as an unprivileged user (`nobody`), with its cgroup chowned to
//!   that user (delegation), a private `HOME` and `XDG_RUNTIME_DIR` (0700):
//!   as root, unit directives that need privileges would pass here and fail
//!   for real users. `systemctl --user` runs as that user too and reaches
//!   the manager on `$XDG_RUNTIME_DIR/systemd/private` (no D-Bus needed;
//!   root is refused on that socket);
//! - `journalctl --user` finds nothing here: a volatile journal
//!   (`/run/log/journal`) is never split per user, so queries read the
//!   system journal with `_SYSTEMD_USER_UNIT=`/`USER_UNIT=` + `_UID=`.
//!
//! One journald owns `/run/systemd/journal`, and the cgroup path is fixed
//! per uid, so harnesses are serialised machine-wide by an `flock`; each
//! test gets a fresh journald and manager, both stopped by pid in `Drop`
//! (and sent SIGTERM by the kernel if the test thread dies first).

use std::ffi::CString;
use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{chown, PermissionsExt};
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::journald::{self, Journald};
use super::{try_wait_until, wait_until};

pub const SYSTEMD: &str = "/lib/systemd/systemd";
const LOCK_FILE: &str = "/run/reveille-test-systemd.lock";
const BOOTED_MARKER: &str = "/run/systemd/system";
/// The unprivileged account the manager runs as.
const USER: &str = "nobody";

/// A private `systemd --user` manager with its own HOME and runtime dir.
pub struct SystemdUser {
    /// Holds the machine-wide lock for as long as the harness lives.
    _lock: File,
    /// HOME, XDG_RUNTIME_DIR and logs; kept if `REVEILLE_KEEP_TMP` is set.
    dir: Option<tempfile::TempDir>,
    home: PathBuf,
    runtime: PathBuf,
    uid: u32,
    gid: u32,
    /// The manager process (stopped before journald, so its last words land).
    manager: Option<Child>,
    /// Our cgroup leaf in each hierarchy, removed (deepest first) on drop.
    cgroups: Vec<PathBuf>,
    /// Journal position when the harness started: queries read after it.
    cursor: Option<String>,
    /// Whether we created `/run/systemd/system` (and so remove it).
    created_marker: bool,
    journald: Option<Journald>,
}

impl SystemdUser {
    /// Starts journald and a user manager, or returns `None` with the reason
    /// on stderr when this machine cannot run them (not root, no systemd
    /// binaries, or a real systemd already PID 1). With `CI` set, that is a
    /// failure instead: CI must run these tests.
    pub fn start() -> Option<Self> {
        if let Some(why) = unavailable() {
            if std::env::var_os("CI").is_some() {
                panic!("systemd tests cannot run in CI: {why}");
            }
            eprintln!("SKIPPED: systemd tests need {why}");
            return None;
        }
        match Self::try_start() {
            Ok(sd) => Some(sd),
            Err(e) => panic!("cannot start systemd --user: {e}"),
        }
    }

    fn try_start() -> Result<Self, String> {
        let lock = lock_machine_wide()?;
        let (uid, gid) = lookup_user(USER)?;
        let created_marker = !Path::new(BOOTED_MARKER).is_dir();
        fs::create_dir_all(BOOTED_MARKER).map_err(|e| format!("{BOOTED_MARKER}: {e}"))?;

        let dir = tempfile::Builder::new()
            .prefix("reveille-systemd-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let root = dir.path().to_path_buf();
        set_mode(&root, 0o755)?;
        let home = root.join("home");
        let runtime = root.join("runtime");
        for (d, mode) in [(&home, 0o755), (&runtime, 0o700)] {
            fs::create_dir(d).map_err(|e| e.to_string())?;
            set_mode(d, mode)?;
            chown(d, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
        }

        let mut sd = Self {
            _lock: lock,
            dir: Some(dir),
            home,
            runtime,
            uid,
            gid,
            manager: None,
            cgroups: Vec::new(),
            cursor: None,
            created_marker,
            journald: None,
        };
        // From here on, Drop cleans up whatever was started.
        sd.journald = Some(Journald::start(&root)?);
        sd.cursor = journald::last_cursor();
        sd.cgroups = make_cgroups(uid, gid)?;
        sd.spawn_manager(&root)?;
        let state = wait_until(
            "systemctl --user is-system-running",
            Duration::from_secs(20),
            || {
                let out = sd.systemctl(&["is-system-running"]);
                let state = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                matches!(state.as_str(), "running" | "degraded").then_some(state)
            },
        );
        if state != "running" {
            let failed = sd.systemctl(&["--failed", "--no-legend"]);
            eprintln!(
                "user manager is {state}: {}",
                String::from_utf8_lossy(&failed.stdout)
            );
        }
        Ok(sd)
    }

    fn spawn_manager(&mut self, root: &Path) -> Result<(), String> {
        let notify_path = root.join("manager-notify.sock");
        let notify = UnixDatagram::bind(&notify_path).map_err(|e| e.to_string())?;
        set_mode(&notify_path, 0o666)?;
        let log = File::create(root.join("manager.log")).map_err(|e| e.to_string())?;

        // Everything the child does between fork and exec is prepared here:
        // no allocation after fork.
        let procs: Vec<CString> = self
            .cgroups
            .iter()
            .map(|cg| {
                CString::new(
                    cg.join("cgroup.procs")
                        .into_os_string()
                        .into_encoded_bytes(),
                )
                .unwrap()
            })
            .collect();
        let (uid, gid) = (self.uid, self.gid);

        let mut cmd = Command::new(SYSTEMD);
        cmd.arg("--user")
            .env_clear()
            .env("HOME", &self.home)
            .env("USER", USER)
            .env("LOGNAME", USER)
            .env("PATH", "/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("NOTIFY_SOCKET", &notify_path)
            .env("SYSTEMD_LOG_TARGET", "journal")
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log);
        unsafe {
            cmd.pre_exec(move || {
                // Into our cgroup while still root, then drop to the user,
                // then ask for SIGTERM when the test thread goes away
                // (a credential change clears that setting, so it is last).
                for path in &procs {
                    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    libc::close(fd);
                }
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0
                    || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("spawn {SYSTEMD} --user: {e}"))?;
        let ready = await_ready(&notify, &mut child, Duration::from_secs(30));
        self.manager = Some(child);
        ready.map_err(|e| {
            let log = fs::read_to_string(root.join("manager.log")).unwrap_or_default();
            format!("systemd --user did not become ready: {e}\n{log}")
        })
    }

    /// The manager's HOME (`%h` in unit files).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The manager's `XDG_RUNTIME_DIR`.
    pub fn runtime_dir(&self) -> &Path {
        &self.runtime
    }

    /// The uid the manager and its units run as.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// Creates `~/<rel>` and its missing parents, owned by the user.
    pub fn make_home_dir(&self, rel: &str) -> PathBuf {
        let mut dir = self.home.clone();
        for part in Path::new(rel).components() {
            dir.push(part);
            if !dir.is_dir() {
                fs::create_dir(&dir).unwrap();
                chown(&dir, Some(self.uid), Some(self.gid)).unwrap();
            }
        }
        dir
    }

    /// Writes a file under HOME (parents created, owned by the user).
    pub fn write_home_file(&self, rel: &str, text: &str, mode: u32) -> PathBuf {
        let path = self.home.join(rel);
        if let Some(parent) = Path::new(rel).parent() {
            self.make_home_dir(&parent.to_string_lossy());
        }
        fs::write(&path, text).unwrap();
        set_mode(&path, mode).unwrap();
        chown(&path, Some(self.uid), Some(self.gid)).unwrap();
        path
    }

    /// Copies the executable `src` to `~/<rel>` (mode 0755, owned by the
    /// user), e.g. the built daemon to `.cargo/bin/reveille`, where the
    /// shipped unit's `ExecStart=` looks for it. A copy, not a path into the
    /// build tree: the manager's user may not be able to reach that.
    pub fn install_binary(&self, rel: &str, src: &Path) -> PathBuf {
        let path = self.home.join(rel);
        if let Some(parent) = Path::new(rel).parent() {
            self.make_home_dir(&parent.to_string_lossy());
        }
        fs::copy(src, &path).unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
        set_mode(&path, 0o755).unwrap();
        chown(&path, Some(self.uid), Some(self.gid)).unwrap();
        path
    }

    /// The gid the manager and its units run as.
    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// Installs `~/.config/systemd/user/<name>` (a unit, or a drop-in such as
    /// `x.service.d/override.conf`) and runs `daemon-reload`.
    pub fn install_unit(&self, name: &str, text: &str) -> PathBuf {
        let path = self.write_home_file(&format!(".config/systemd/user/{name}"), text, 0o644);
        self.systemctl_ok(&["daemon-reload"]);
        path
    }

    /// An executable script at `~/<rel>`.
    pub fn install_executable(&self, rel: &str, text: &str) -> PathBuf {
        self.write_home_file(rel, text, 0o755)
    }

    /// A command run as the manager's user with its environment.
    pub fn user_command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("HOME", &self.home)
            .env("PATH", "/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .current_dir(&self.home)
            .uid(self.uid)
            .gid(self.gid);
        cmd
    }

    /// `systemctl --user <args>`, whatever its exit status.
    pub fn systemctl(&self, args: &[&str]) -> Output {
        self.user_command("systemctl")
            .arg("--user")
            .arg("--no-pager")
            .args(args)
            .output()
            .expect("run systemctl")
    }

    /// `systemctl --user <args>`, which must succeed; returns stdout.
    pub fn systemctl_ok(&self, args: &[&str]) -> String {
        let out = self.systemctl(args);
        assert!(
            out.status.success(),
            "systemctl --user {args:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// One property of a unit (`systemctl --user show -p <prop> --value`).
    pub fn property(&self, unit: &str, prop: &str) -> String {
        self.systemctl_ok(&["show", "-p", prop, "--value", unit])
            .trim_end_matches('\n')
            .to_owned()
    }

    /// Waits until `prop` of `unit` equals `want`; the panic names the
    /// last value seen.
    pub fn wait_for_property(&self, unit: &str, prop: &str, want: &str, timeout: Duration) {
        let mut last = String::new();
        let found = try_wait_until(timeout, || {
            last = self.property(unit, prop);
            (last == want).then_some(())
        });
        assert!(
            found.is_some(),
            "timed out after {timeout:?} waiting for {unit} {prop}={want:?}; last {last:?}"
        );
    }

    /// `systemd-analyze --user verify <unit>`, run as the user.
    pub fn analyze_verify(&self, unit: &str) -> Output {
        self.user_command("systemd-analyze")
            .args(["--user", "verify", unit])
            .output()
            .expect("run systemd-analyze")
    }

    /// Journal entries about `unit` (full name, e.g. `reveille@p.service`)
    /// since the harness started: its processes' output and log records
    /// (`_SYSTEMD_USER_UNIT=`) and the manager's messages about it
    /// (`USER_UNIT=`), as journalctl's JSON objects, oldest first.
    pub fn journal_json(&self, unit: &str) -> Vec<serde_json::Value> {
        let uid = format!("_UID={}", self.uid);
        let matches = [
            format!("_SYSTEMD_USER_UNIT={unit}"),
            uid.clone(),
            "+".to_owned(),
            format!("USER_UNIT={unit}"),
            uid,
        ];
        journald::query(&matches, self.cursor.as_deref())
    }

    /// [`journal_json`](Self::journal_json) plus every entry logged by one of
    /// `pids`, in journal order. With the manager at debug level its forked
    /// child logs (`Executing: …`) before it has moved into the unit's
    /// cgroup, and journald caches a pid's cgroup for a few seconds, so that
    /// process's first entries are filed under `init.scope`: matching the
    /// pid finds them (a log-level artefact: at the default level the child
    /// logs nothing and entries are filed under the unit).
    pub fn journal_json_with_pids(&self, unit: &str, pids: &[&str]) -> Vec<serde_json::Value> {
        let uid = format!("_UID={}", self.uid);
        let mut matches = vec![
            format!("_SYSTEMD_USER_UNIT={unit}"),
            uid.clone(),
            "+".to_owned(),
            format!("USER_UNIT={unit}"),
            uid.clone(),
        ];
        for pid in pids {
            matches.extend(["+".to_owned(), format!("_PID={pid}"), uid.clone()]);
        }
        journald::query(&matches, self.cursor.as_deref())
    }

    /// Entries since the harness started from the manager's user that match
    /// `matches` (journalctl syntax, e.g. `["PLAN=…", "STEP=s2"]`).
    pub fn journal_matching(&self, matches: &[&str]) -> Vec<serde_json::Value> {
        let mut all: Vec<String> = matches.iter().map(|m| (*m).to_owned()).collect();
        all.push(format!("_UID={}", self.uid));
        journald::query(&all, self.cursor.as_deref())
    }

    /// Waits for an entry about `unit` that satisfies `pred`; returns it.
    pub fn wait_for_journal(
        &self,
        unit: &str,
        what: &str,
        pred: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        wait_until(
            &format!("journal entry of {unit}: {what}"),
            Duration::from_secs(20),
            || self.journal_json(unit).into_iter().find(|e| pred(e)),
        )
    }

    /// The pid of the manager.
    pub fn manager_pid(&self) -> u32 {
        self.manager
            .as_ref()
            .map(Child::id)
            .expect("manager running")
    }
}

impl Drop for SystemdUser {
    fn drop(&mut self) {
        if let Some(child) = &mut self.manager {
            stop_child(child, Duration::from_secs(20));
        }
        // Units the manager could not stop: kill them by pid, then remove
        // our cgroups deepest first.
        for leaf in self.cgroups.iter().rev() {
            kill_cgroup_tree(leaf);
        }
        for leaf in &self.cgroups {
            remove_cgroup_tree(leaf);
        }
        drop(self.journald.take());
        if self.created_marker {
            let _ = fs::remove_dir(BOOTED_MARKER);
        }
        if std::env::var_os("REVEILLE_KEEP_TMP").is_some() {
            if let Some(dir) = self.dir.take() {
                eprintln!("keeping {}", dir.keep().display());
            }
        }
    }
}

/// Why the harness cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("root (they start journald and cgroups)".into());
    }
    for bin in [SYSTEMD, journald::JOURNALD] {
        if !Path::new(bin).exists() {
            return Some(format!("{bin} (apt-get install systemd)"));
        }
    }
    let init = fs::read_to_string("/proc/1/comm").unwrap_or_default();
    if init.trim() == "systemd" {
        return Some("a machine whose PID 1 is not systemd (we would fight the real one)".into());
    }
    None
}

/// The (uid, gid) the manager and its units run as, for a program the test
/// starts as that user (a person's agent beside their reveille).
pub fn user_ids() -> (u32, u32) {
    lookup_user(USER).expect("the manager's user")
}

/// Waits for `READY=1` on `notify` (the child's `NOTIFY_SOCKET`), failing
/// early if the child exits.
pub fn await_ready(
    notify: &UnixDatagram,
    child: &mut Child,
    timeout: Duration,
) -> Result<(), String> {
    notify
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited with {status}"));
        }
        match notify.recv(&mut buf) {
            Ok(n) => {
                if String::from_utf8_lossy(&buf[..n])
                    .lines()
                    .any(|l| l == "READY=1")
                {
                    return Ok(());
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Err(format!("no READY=1 within {timeout:?}"))
}

/// SIGTERM, wait (with backoff) up to `grace`, then SIGKILL; reaps.
pub fn stop_child(child: &mut Child, grace: Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let pid = Pid::from_raw(child.id() as i32);
    let _ = kill(pid, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    let mut delay = Duration::from_millis(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn lock_machine_wide() -> Result<File, String> {
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(LOCK_FILE)
        .map_err(|e| format!("{LOCK_FILE}: {e}"))?;
    // Blocks while another test (thread or process) holds it.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(format!(
            "flock {LOCK_FILE}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(file)
}

fn lookup_user(name: &str) -> Result<(u32, u32), String> {
    let passwd = fs::read_to_string("/etc/passwd").map_err(|e| e.to_string())?;
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() > 3 && f[0] == name)
        .and_then(|f| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
        .ok_or_else(|| format!("no user {name} in /etc/passwd"))
}

fn set_mode(path: &Path, mode: u32) -> Result<(), String> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| format!("chmod {}: {e}", path.display()))
}

/// The hierarchies systemd tracks units in: the v2 one, plus `name=systemd`
/// on a hybrid or legacy machine.
fn hierarchies() -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").exists() {
        return vec![root.to_path_buf()];
    }
    ["systemd", "unified"]
        .iter()
        .map(|h| root.join(h))
        .filter(|p| p.join("cgroup.procs").exists())
        .collect()
}

/// Creates `user.slice/user-<uid>.slice/user@<uid>.service` in each
/// hierarchy and delegates it to the user, as logind and user@.service do.
fn make_cgroups(uid: u32, gid: u32) -> Result<Vec<PathBuf>, String> {
    let rel = format!("user.slice/user-{uid}.slice/user@{uid}.service");
    let mut leaves = Vec::new();
    for h in hierarchies() {
        let leaf = h.join(&rel);
        // A leftover from a killed run: empty it first.
        kill_cgroup_tree(&leaf);
        remove_cgroup_tree(&leaf);
        fs::create_dir_all(&leaf).map_err(|e| format!("mkdir {}: {e}", leaf.display()))?;
        chown(&leaf, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
        for entry in fs::read_dir(&leaf).map_err(|e| e.to_string())? {
            let name = entry.map_err(|e| e.to_string())?.file_name();
            let name = name.to_string_lossy();
            if [
                "cgroup.procs",
                "cgroup.threads",
                "cgroup.subtree_control",
                "tasks",
            ]
            .contains(&name.as_ref())
            {
                chown(leaf.join(name.as_ref()), Some(uid), Some(gid)).map_err(|e| e.to_string())?;
            }
        }
        leaves.push(leaf);
    }
    if leaves.is_empty() {
        return Err("no cgroup hierarchy for systemd under /sys/fs/cgroup".into());
    }
    Ok(leaves)
}

fn cgroup_dirs_deepest_first(leaf: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![leaf.to_path_buf()];
    let mut i = 0;
    while i < dirs.len() {
        if let Ok(rd) = fs::read_dir(&dirs[i]) {
            dirs.extend(rd.flatten().filter(|e| e.path().is_dir()).map(|e| e.path()));
        }
        i += 1;
    }
    dirs.reverse();
    dirs
}

fn kill_cgroup_tree(leaf: &Path) {
    for dir in cgroup_dirs_deepest_first(leaf) {
        let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

fn remove_cgroup_tree(leaf: &Path) {
    for dir in cgroup_dirs_deepest_first(leaf) {
        // Killed processes leave the cgroup asynchronously.
        let _ = wait_until_quietly(Duration::from_secs(5), || {
            fs::remove_dir(&dir).is_ok() || !dir.exists()
        });
    }
}

fn wait_until_quietly(timeout: Duration, mut probe: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(2);
    loop {
        if probe() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(100));
    }
}
