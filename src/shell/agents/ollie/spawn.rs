//! Child sessions in an ollie-9p tree (fan-out): creating one through
//! `s/new` with its parent's working directory, and killing one.
//!
//! ollie-9p acts on a write when the file is closed, and over 9pfuse an
//! error (a second create of the same `name=`, an unknown backend, a key
//! it does not know) is reported at clunk and never reaches the writer's
//! `close(2)`: the write "succeeds" whether or not a session was made. So a
//! create is confirmed only by seeing the session listed in `s/idx` — and a
//! child that is already listed (a create retried after a crash) is simply
//! confirmed. The create line carries only keys known to be valid: `cwd`
//! and `name`, and `backend`/`model` only when configured — the parent's
//! `cfg` shows the backend's *display* name (`local` for an openai backend
//! at 127.0.0.1), which `s/new backend=` refuses. A create not listed in
//! time is written once more, then reported as failed, with the line that
//! was refused (the server says why only in its own log). Each create runs
//! on a thread of its own (a slow 9P server holds up only that child) and
//! its outcome comes back to the loop as an input.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::shell::backend::Reports;

use super::tree::listed;
use crate::core::effect::Spawn;
use crate::core::input::Input;

/// How long a create may take to show in `s/idx` before it is written once
/// more, and then before it counts as failed (the step then goes back to
/// the parent). ollie-9p lists a new session 2–14 ms after the write.
pub const CREATE_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest `cfg` or `idx` read.
const READ_CAP: u64 = 8 << 20;

/// Creates and kills child sessions under `sessions_dir`.
#[derive(Debug, Clone)]
pub struct Spawner {
    pub sessions_dir: PathBuf,
    /// The children's backend and model (`[fanout]`); `None`: the
    /// server's default — never the parent's `cfg`, whose backend is a
    /// display name `s/new` refuses.
    pub backend: Option<String>,
    pub model: Option<String>,
    /// For the journal.
    pub project: String,
    /// Where create outcomes are reported (`Input::ChildSpawned`).
    pub reports: Reports,
}

impl Spawner {
    /// Create the child in the background; its outcome arrives as an input.
    pub fn spawn(&self, spawn: &Spawn) {
        let (me, spawn) = (self.clone(), spawn.clone());
        std::thread::spawn(move || {
            let outcome = me.create(&spawn.child, &spawn.parent, CREATE_TIMEOUT);
            let _ = me.reports.send(Input::ChildSpawned {
                child: spawn.child,
                outcome,
            });
        });
    }

    /// Kill the child (`kill` to its `ctl`), in the background. A kill that
    /// fails is said; the child is no longer followed either way.
    pub fn reap(&self, child: &str) {
        let ctl = self.sessions_dir.join(child).join("ctl");
        let (child, project) = (child.to_string(), self.project.clone());
        std::thread::spawn(move || {
            if let Err(e) = put(&ctl, "kill") {
                tracing::warn!(project = %project, session = %child, "cannot kill child session {child}: {e}");
            }
        });
    }

    /// `s/new cwd=<parent's cwd> name=<child> [backend= model=]`, then
    /// wait until the child is listed; written once more if it is not.
    /// Returns when it was seen (unix milliseconds).
    fn create(&self, child: &str, parent: &str, timeout: Duration) -> Result<u64, String> {
        if listed(&self.sessions_dir, child).unwrap_or(false) {
            return Ok(crate::shell::wall::unix_ms());
        }
        let cfg = read_cfg(&self.sessions_dir.join(parent).join("cfg"))
            .map_err(|e| format!("cannot read the cfg of parent {parent}: {e}"))?;
        let line = create_line(child, &cfg, self.backend.as_deref(), self.model.as_deref())?;
        for _attempt in 0..2 {
            put(&self.sessions_dir.join("new"), &line).map_err(|e| format!("s/new: {e}"))?;
            if self.wait_listed(child, timeout) {
                return Ok(crate::shell::wall::unix_ms());
            }
        }
        Err(format!(
            "ollie-9p did not create it: `{line}` written to s/new twice, and it was not listed in s/idx within {timeout:?} either time (ollie-9p says why only in its own log)"
        ))
    }

    /// Whether `child` is listed in `s/idx` within `timeout` (read every
    /// 20 ms: ollie-9p gives no other sign of a create).
    fn wait_listed(&self, child: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if listed(&self.sessions_dir, child).unwrap_or(false) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The `s/new` line for `child`: the parent's `cwd` (required), and the
/// configured backend and model. `s/new` splits on whitespace, so a value
/// holding any cannot be passed.
fn create_line(
    child: &str,
    cfg: &BTreeMap<String, String>,
    backend: Option<&str>,
    model: Option<&str>,
) -> Result<String, String> {
    let cwd = cfg
        .get("cwd")
        .or_else(|| cfg.get("workdir"))
        .filter(|c| !c.is_empty())
        .ok_or("the parent's cfg names no cwd")?;
    if cwd.chars().any(char::is_whitespace) {
        return Err(format!(
            "the parent's cwd {cwd:?} holds whitespace, which s/new cannot take"
        ));
    }
    let mut line = format!("cwd={cwd} name={child}");
    for (key, value) in [("backend", backend), ("model", model)] {
        if let Some(v) = value.filter(|v| !v.is_empty() && !v.contains(char::is_whitespace)) {
            line.push_str(&format!(" {key}={v}"));
        }
    }
    Ok(line)
}

fn read_cfg(path: &Path) -> std::io::Result<BTreeMap<String, String>> {
    Ok(read_capped(path)?
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect())
}

/// A synthetic file read to its end (its reported size means nothing), in
/// as few `read(2)`s as possible: each read at an offset is served from the
/// content as it is *then*, so a file read in pieces while it changes
/// (`cfg`'s `state=idle` becoming `state=thinking`) comes back shifted and
/// torn. One large buffer makes it one read for any `cfg` or `idx` of
/// ordinary size (a plain `read_to_string` starts with a 32-byte probe).
fn read_capped(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 256 << 10];
    let mut len = 0;
    loop {
        let n = file.read(&mut buf[len..])?;
        if n == 0 {
            break;
        }
        len += n;
        if len == buf.len() {
            if len as u64 >= READ_CAP {
                break;
            }
            buf.resize(len * 2, 0);
        }
    }
    buf.truncate(len);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// One open, one write, one close: ollie-9p acts on the text at close.
fn put(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    file.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_create_line_takes_the_parents_cwd_and_settings_unless_overridden() {
        let parent = cfg(&[
            ("state", "idle"),
            ("cwd", "/src/x"),
            ("backend", "anthropic"),
            ("model", "big"),
            ("agent", ""),
        ]);
        // The parent's backend and model are never copied: `cfg` shows
        // display names that `s/new` refuses.
        assert_eq!(
            create_line("p.s2-1", &parent, None, None).unwrap(),
            "cwd=/src/x name=p.s2-1"
        );
        assert_eq!(
            create_line("p.s2-1", &parent, Some("openai"), Some("small")).unwrap(),
            "cwd=/src/x name=p.s2-1 backend=openai model=small"
        );
        assert!(create_line("c", &cfg(&[("cwd", "")]), None, None).is_err());
        assert!(create_line("c", &cfg(&[("cwd", "/a b")]), None, None).is_err());
    }
}
