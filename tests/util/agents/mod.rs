//! The real agent CLIs people run — Codex, Claude Code, opencode — started
//! the way a person starts them (the TUIs under tmux, opencode with
//! `--port`), each in an isolated home, offline against the fake model
//! (`util::fakemodel`).
//!
//! The CLIs are the npm packages with their native binaries, installed by
//! `.ci/run` (pinned versions) into `target/agent-clis`, or wherever
//! `REVEILLE_AGENT_CLIS` points (a directory holding `node_modules/.bin`).
//! Where they are not installed, a test says so in one line and returns.

pub mod claude;
pub mod codex;
pub mod opencode;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Held while a real agent program of the tests runs (a Codex, a Claude
/// Code, an opencode): one at a time across the kinds. Each is hundreds of
/// MB and a core's worth at its start, and on 2 cores an opencode's first
/// turn was seen to start 1.7 s after its step became ready while other
/// kinds' tests ran beside it — a figure of the machine, not of reveille.
/// A thread that holds it already gets an empty turn (a test may start
/// two programs of one kind).
pub fn one_agent_at_a_time() -> AgentTurn {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HELD.with(|held| {
        let guard = (held.get() == 0).then(|| ONE.lock().unwrap_or_else(|e| e.into_inner()));
        held.set(held.get() + 1);
        AgentTurn(guard)
    })
}

thread_local! {
    /// How many turns this thread holds.
    static HELD: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// See [`one_agent_at_a_time`]; the turn ends when it is dropped.
pub struct AgentTurn(#[allow(dead_code)] Option<std::sync::MutexGuard<'static, ()>>);

impl Drop for AgentTurn {
    fn drop(&mut self) {
        HELD.with(|held| held.set(held.get().saturating_sub(1)));
    }
}

/// The installed binary of CLI `name` (`codex`, `claude`, `opencode`), or
/// why there is none.
pub fn cli_bin(name: &str) -> Result<PathBuf, String> {
    let root = match std::env::var_os("REVEILLE_AGENT_CLIS") {
        // Made absolute: the programs run with a working directory of their
        // own, where a relative path would name nothing.
        Some(dir) => std::path::absolute(dir).expect("an absolute REVEILLE_AGENT_CLIS"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/agent-clis"),
    };
    let bin = root.join("node_modules/.bin").join(name);
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!(
            "{} is not installed (.ci/run installs the agent CLIs into target/agent-clis; or set REVEILLE_AGENT_CLIS)",
            bin.display()
        ))
    }
}

/// `tmux` on `PATH`, or why not.
pub fn tmux_unavailable() -> Option<String> {
    match Command::new("tmux").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("tmux is not installed (apt-get install tmux)".into()),
    }
}

/// A program running in a terminal of its own: one tmux server per
/// instance (its own socket), so tests never share or touch a person's
/// tmux. Killed, with everything in it, on drop.
pub struct Tmux {
    socket: PathBuf,
    /// The pane's shell pid is the program's: the session runs the
    /// command directly.
    pub pid: u32,
}

impl Tmux {
    /// Start `argv` in a new detached tmux session of 200×50, in `cwd`,
    /// with exactly `env` as its environment (plus `TERM`).
    pub fn start(socket: &Path, argv: &[String], env: &[(String, String)], cwd: &Path) -> Tmux {
        Tmux::start_sized(socket, argv, env, cwd, (200, 50))
    }

    /// [`Tmux::start`] in a terminal of `(cols, rows)`.
    pub fn start_sized(
        socket: &Path,
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
        size: (u16, u16),
    ) -> Tmux {
        Tmux::start_owned(socket, argv, env, cwd, size, None)
    }

    /// [`Tmux::start_sized`] with the tmux server (and so the program)
    /// run as `owner` (uid, gid) instead of the test's user, as another
    /// user would run it. The test (root) still drives it: tmux lets root
    /// in to any user's server.
    pub fn start_owned(
        socket: &Path,
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
        (cols, rows): (u16, u16),
        owner: Option<(u32, u32)>,
    ) -> Tmux {
        let mut cmd = Command::new("tmux");
        if let Some((uid, gid)) = owner {
            use std::os::unix::process::CommandExt;
            cmd.uid(uid).gid(gid);
        }
        cmd.arg("-S")
            .arg(socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-x"])
            .arg(cols.to_string())
            .arg("-y")
            .arg(rows.to_string())
            .arg("-c")
            .arg(cwd);
        cmd.env_clear();
        cmd.env("TERM", "xterm-256color");
        for (k, v) in env {
            cmd.env(k, v);
        }
        // Each variable also set inside the session: tmux's server keeps
        // the environment it started with only for its first session.
        for (k, v) in env {
            cmd.arg("-e").arg(format!("{k}={v}"));
        }
        cmd.args(argv);
        let out = cmd.output().expect("run tmux");
        assert!(out.status.success(), "tmux new-session: {out:?}");
        let pid = Tmux::query(socket, "#{pane_pid}")
            .trim()
            .parse()
            .expect("the pane's pid");
        Tmux {
            socket: socket.to_path_buf(),
            pid,
        }
    }

    fn query(socket: &Path, format: &str) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(socket)
            .args(["display-message", "-p", format])
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Type `keys` (tmux key names or literal text with `literal`).
    pub fn send(&self, keys: &[&str], literal: bool) {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S")
            .arg(&self.socket)
            .args(["send-keys", "-t", "0"]);
        if literal {
            cmd.arg("-l");
        }
        cmd.args(keys);
        let out = cmd.output().expect("run tmux");
        assert!(out.status.success(), "tmux send-keys: {out:?}");
    }

    /// What the terminal shows now.
    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["capture-pane", "-p", "-t", "0"])
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// What the terminal shows now, with each line the program let wrap
    /// joined to its continuation (`capture-pane -J`): a row longer than
    /// the terminal here is a line that wrapped.
    pub fn screen_joined(&self) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["capture-pane", "-p", "-J", "-t", "0"])
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A tmux format about the pane (`#{alternate_on}`, `#{cursor_flag}`).
    pub fn format(&self, format: &str) -> String {
        Tmux::query(&self.socket, format).trim().to_string()
    }

    /// Resize the terminal to `cols`×`rows`.
    pub fn resize(&self, cols: u16, rows: u16) {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["resize-window", "-t", "0", "-x"])
            .arg(cols.to_string())
            .arg("-y")
            .arg(rows.to_string())
            .output()
            .expect("run tmux");
        assert!(out.status.success(), "tmux resize-window: {out:?}");
    }

    /// Whether the program in the pane is still running.
    pub fn alive(&self) -> bool {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid as i32), None).is_ok()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}
