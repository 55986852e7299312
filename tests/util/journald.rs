//! A real `systemd-journald` for tests, on a machine where systemd is not
//! PID 1 (this one: a VM whose init is not systemd, Debian 12, systemd 252).
//!
//! What journald needs here, found by trying:
//! - nothing but root and `/etc/machine-id`: started directly (no socket
//!   activation), it creates `/run/systemd/journal/` and binds `socket`
//!   (native protocol, what tracing-journald writes to), `stdout` (what a
//!   unit's stdout/stderr are connected to), `dev-log` and
//!   `io.systemd.journal` itself;
//! - with no `/var/log/journal` it keeps a volatile journal in
//!   `/run/log/journal/<machine-id>/system.journal`; it also imports the
//!   kernel ring buffer (`/dev/kmsg`), which is harmless;
//! - it speaks `sd_notify`, so readiness is `READY=1` on a socket we bind,
//!   not a sleep.
//!
//! Socket files outlive a killed journald; stale ones are removed before a
//! start. If a journald that is not ours already answers on the socket, it
//! is used as it is.

use std::io::ErrorKind;
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::systemd::{await_ready, stop_child};

pub const JOURNALD: &str = "/lib/systemd/systemd-journald";
pub const SOCKET_DIR: &str = "/run/systemd/journal";

/// A running journald, stopped by pid when dropped (if we started it).
pub struct Journald {
    /// Our journald process; `None` when one was already running.
    child: Option<Child>,
}

impl Journald {
    /// Starts journald unless one already answers; waits for `READY=1`.
    /// `scratch` holds the notify socket and journald's own output.
    pub fn start(scratch: &Path) -> Result<Self, String> {
        if answers() {
            return Ok(Self { child: None });
        }
        for name in ["socket", "stdout", "dev-log", "io.systemd.journal"] {
            let path = Path::new(SOCKET_DIR).join(name);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(format!("cannot remove stale {}: {e}", path.display())),
            }
        }
        let notify_path = scratch.join("journald-notify.sock");
        let notify = UnixDatagram::bind(&notify_path)
            .map_err(|e| format!("bind {}: {e}", notify_path.display()))?;
        let log = scratch.join("journald.log");
        let out = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(JOURNALD);
        cmd.env_clear()
            .env("NOTIFY_SOCKET", &notify_path)
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .stdout(out.try_clone().map_err(|e| e.to_string())?)
            .stderr(out);
        // Dies with the test thread that started it, even on SIGKILL of the
        // test binary.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| format!("spawn {JOURNALD}: {e}"))?;
        if let Err(e) = await_ready(&notify, &mut child, Duration::from_secs(20)) {
            stop_child(&mut child, Duration::from_secs(5));
            let output = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(format!("journald did not become ready: {e}\n{output}"));
        }
        if !answers() {
            stop_child(&mut child, Duration::from_secs(5));
            return Err("journald is ready but its socket does not answer".into());
        }
        Ok(Self { child: Some(child) })
    }

    /// The pid of our journald, if we started it.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for Journald {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            stop_child(child, Duration::from_secs(10));
        }
    }
}

/// Whether something accepts datagrams on journald's native socket (an
/// empty datagram is discarded by journald; a stale socket file refuses).
pub fn answers() -> bool {
    let Ok(sock) = UnixDatagram::unbound() else {
        return false;
    };
    sock.send_to(&[], PathBuf::from(SOCKET_DIR).join("socket"))
        .is_ok()
}

/// The cursor of the newest entry, to read only what comes after it.
pub fn last_cursor() -> Option<String> {
    let out = Command::new("journalctl")
        .args(["--no-pager", "-q", "-n", "1", "-o", "json"])
        .output()
        .ok()?;
    let line = String::from_utf8_lossy(&out.stdout);
    let entry: serde_json::Value = serde_json::from_str(line.lines().last()?).ok()?;
    entry.get("__CURSOR")?.as_str().map(str::to_owned)
}

/// Entries matching `matches` (journalctl match syntax, `+` for OR), after
/// `cursor`, oldest first, each as journalctl's JSON object.
///
/// Not `--after-cursor`: with matches, journalctl 252 skips two entries from
/// the cursor assuming the cursor's own entry matched, so when it does not,
/// the first matching entry is silently lost. `--cursor` (inclusive) plus
/// dropping the cursor's own entry is exact.
pub fn query(matches: &[String], cursor: Option<&str>) -> Vec<serde_json::Value> {
    let mut cmd = Command::new("journalctl");
    cmd.args(["--no-pager", "-q", "-o", "json"]);
    if let Some(cursor) = cursor {
        cmd.arg(format!("--cursor={cursor}"));
    }
    cmd.args(matches);
    let out = cmd.output().expect("run journalctl");
    assert!(
        out.status.success(),
        "journalctl {matches:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|e| cursor.is_none() || e.get("__CURSOR").and_then(|c| c.as_str()) != cursor)
        .collect()
}
