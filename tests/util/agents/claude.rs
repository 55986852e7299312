//! Claude Code as a person runs it: the interactive `claude` TUI in a
//! terminal (tmux), in a home of its own, offline against the fake model.
//!
//! The isolated home holds `CLAUDE_CONFIG_DIR` (`.claude.json` with the
//! onboarding, the API key, bypass mode and the working directory's trust
//! already accepted; `settings.json` with `crossSessionInbound: accept`),
//! `HOME`, the XDG directories and `TMPDIR`. A running session registers
//! in `$CLAUDE_CONFIG_DIR/sessions/<pid>.json` (`sessionId`, `status`,
//! `messagingSocketPath`), its inbox token in `sessions/<pid>.<sha256>.key`,
//! and writes its transcript to
//! `$CLAUDE_CONFIG_DIR/projects/<cwd-slug>/<sessionId>.jsonl`; this harness
//! reads all three the way a person's tools would, independently of the
//! backend under test.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use std::time::Duration;

use serde_json::{json, Value};

use super::{cli_bin, tmux_unavailable, Tmux};
use crate::util::fakemodel::FakeModel;
use crate::util::{try_wait_until, wait_until};

/// The API key the fake model is called with; its last 20 characters are
/// marked approved in `.claude.json`, so no dialog asks about it.
const API_KEY: &str = "sk-ant-api03-reveille-fake-key-0123456789abcdefghij";

/// How long Claude Code gets to start and register.
const START: Duration = Duration::from_secs(30);

/// Held by every test that runs a Claude Code (the backend's and the
/// daemon's): one at a time, since each starts a heavy TUI of its own and
/// the latency figures mean nothing on a machine busy starting others.
pub fn one_at_a_time() -> super::AgentTurn {
    super::one_agent_at_a_time()
}

/// A running session as its registry entry says.
#[derive(Debug, Clone)]
pub struct Registered {
    pub pid: u32,
    pub session_id: String,
    pub socket: PathBuf,
    /// The inbox's `peerToken`.
    pub token: String,
}

/// Claude Code in its own home and terminal; killed, with its whole
/// process group, on drop.
pub struct Claude {
    /// `None` once kept (`REVEILLE_KEEP_TMP`).
    root: Option<tempfile::TempDir>,
    pub config_dir: PathBuf,
    /// The working directory the session runs in (the project).
    pub cwd: PathBuf,
    bin: PathBuf,
    env: Vec<(String, String)>,
    tmux: Option<Tmux>,
    /// The user (uid, gid) it runs as; `None`: the test's own.
    owner: Option<(u32, u32)>,
    /// Started in the default permission mode (a shell command asks the
    /// person first), not with `--dangerously-skip-permissions`.
    pub asking: bool,
}

impl Claude {
    /// An isolated home for Claude Code talking to `model`; `Err` says what
    /// is missing (the CLI, tmux) for the test's `skipped:` line.
    pub fn new(model: &FakeModel) -> Result<Claude, String> {
        Claude::new_owned(model, None)
    }

    /// [`Claude::new`] for another user: its home is `owner`'s (uid, gid)
    /// and it runs as that user, as a person's Claude Code runs as the
    /// person (whose reveille reads its registry and socket).
    pub fn new_owned(model: &FakeModel, owner: Option<(u32, u32)>) -> Result<Claude, String> {
        let bin = cli_bin("claude")?;
        if let Some(why) = tmux_unavailable() {
            return Err(why);
        }
        let root = tempfile::Builder::new()
            .prefix("cc")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let r = root.path().canonicalize().map_err(|e| e.to_string())?;
        let dirs = [
            "home",
            "config",
            "work",
            "tmp",
            "run",
            "xdg/config",
            "xdg/data",
            "xdg/state",
            "xdg/cache",
        ];
        for d in dirs {
            std::fs::create_dir_all(r.join(d)).map_err(|e| e.to_string())?;
        }
        // The messaging socket's directory must be private, as a login's
        // runtime directory is.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(r.join("run"), std::fs::Permissions::from_mode(0o700))
            .map_err(|e| e.to_string())?;
        let claude = Claude {
            config_dir: r.join("config"),
            cwd: r.join("work"),
            env: environment(&r, model),
            root: Some(root),
            bin,
            tmux: None,
            owner,
            asking: false,
        };
        claude.write_config();
        if let Some((uid, gid)) = owner {
            chown_tree(&r, uid, gid).map_err(|e| e.to_string())?;
        }
        Ok(claude)
    }

    fn write_config(&self) {
        let key_tail = &API_KEY[API_KEY.len() - 20..];
        let mut projects = serde_json::Map::new();
        projects.insert(
            self.cwd.display().to_string(),
            json!({"hasTrustDialogAccepted": true}),
        );
        let state = json!({
            "hasCompletedOnboarding": true,
            "customApiKeyResponses": {"approved": [key_tail], "rejected": []},
            "bypassPermissionsModeAccepted": true,
            "projects": projects,
        });
        std::fs::write(self.config_dir.join(".claude.json"), state.to_string()).unwrap();
        self.write_settings(&json!({
            "crossSessionInbound": "accept",
            "skipDangerousModePermissionPrompt": true,
        }));
    }

    /// Replace `settings.json` (Claude Code reads it again while it runs).
    pub fn write_settings(&self, settings: &Value) {
        std::fs::write(self.config_dir.join("settings.json"), settings.to_string()).unwrap();
    }

    /// Start a new session, as a person types `claude` in a terminal, and
    /// wait until it has registered and opened its inbox.
    pub fn start(&mut self) -> Registered {
        self.launch(&[])
    }

    /// Start it again on session `id` (`claude --resume <id>`): the same
    /// session, a new process with a new pid and socket.
    pub fn resume(&mut self, id: &str) -> Registered {
        self.launch(&["--resume", id])
    }

    fn launch(&mut self, args: &[&str]) -> Registered {
        self.kill();
        let mut argv = vec![self.bin.display().to_string()];
        if !self.asking {
            argv.push("--dangerously-skip-permissions".to_string());
        }
        argv.extend(args.iter().map(|a| a.to_string()));
        let socket = self.config_dir.with_file_name("tmux.sock");
        let tmux = Tmux::start_owned(&socket, &argv, &self.env, &self.cwd, (200, 50), self.owner);
        let pid = tmux.pid;
        self.tmux = Some(tmux);
        let registered = try_wait_until(START, || {
            self.registered()
                .filter(|r| r.pid == pid && r.socket.exists())
        });
        registered.unwrap_or_else(|| {
            let state = if self.running() {
                "its terminal"
            } else {
                "it exited; its terminal"
            };
            panic!(
                "Claude Code ({argv:?}) did not register its session within {START:?}; {state}:\n{}",
                self.screen()
            )
        })
    }

    /// The running process's registry entry, once it has a status and its
    /// inbox key is written; `None` while it starts or when it is not running.
    pub fn registered(&self) -> Option<Registered> {
        let pid = self.tmux.as_ref().filter(|t| t.alive())?.pid;
        let entry = self.entry(pid)?;
        entry["status"].as_str()?;
        let token = self.token(pid)?;
        Some(Registered {
            pid,
            session_id: entry["sessionId"].as_str()?.to_string(),
            socket: PathBuf::from(entry["messagingSocketPath"].as_str()?),
            token,
        })
    }

    fn entry(&self, pid: u32) -> Option<Value> {
        let path = self.config_dir.join(format!("sessions/{pid}.json"));
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    fn token(&self, pid: u32) -> Option<String> {
        let prefix = format!("{pid}.");
        let dir = std::fs::read_dir(self.config_dir.join("sessions")).ok()?;
        dir.flatten().find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with(&prefix) || !name.ends_with(".key") {
                return None;
            }
            let key: Value = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
            Some(key["peerToken"].as_str()?.to_string())
        })
    }

    /// The registry's `status` of the running process (`idle`, `busy`,
    /// `waiting`).
    pub fn status(&self) -> Option<String> {
        let pid = self.tmux.as_ref().filter(|t| t.alive())?.pid;
        Some(self.entry(pid)?["status"].as_str()?.to_string())
    }

    /// Type `text` into the prompt box and press Enter, as a person does.
    pub fn type_prompt(&self, text: &str) {
        let tmux = self.tmux.as_ref().expect("Claude Code is running");
        tmux.send(&[text], true);
        tmux.send(&["Enter"], false);
    }

    /// Type `text` without pressing Enter: a person's half-written input.
    pub fn type_unsent(&self, text: &str) {
        self.tmux
            .as_ref()
            .expect("Claude Code is running")
            .send(&[text], true);
    }

    /// Press `keys` (tmux key names), as a person does.
    pub fn press(&self, keys: &[&str]) {
        self.tmux
            .as_ref()
            .expect("Claude Code runs")
            .send(keys, false);
    }

    /// What the terminal shows.
    pub fn screen(&self) -> String {
        self.tmux.as_ref().map(Tmux::screen).unwrap_or_default()
    }

    /// Every line of session `id`'s transcript, parsed (empty before its
    /// first message).
    pub fn transcript(&self, id: &str) -> Vec<Value> {
        let Some(path) = self.transcript_path(id) else {
            return Vec::new();
        };
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn transcript_path(&self, id: &str) -> Option<PathBuf> {
        let dir = std::fs::read_dir(self.config_dir.join("projects")).ok()?;
        dir.flatten()
            .map(|d| d.path().join(format!("{id}.jsonl")))
            .find(|p| p.exists())
    }

    /// The prompts session `id` took into a turn, in order: each user entry
    /// of its transcript that is not a tool result, with the `msg_id` a
    /// socket message carried.
    pub fn prompts_taken(&self, id: &str) -> Vec<(String, Option<String>)> {
        self.transcript(id)
            .iter()
            .filter(|e| e["type"] == "user" && e["message"]["content"].is_string())
            .map(|e| {
                (
                    e["message"]["content"].as_str().unwrap_or("").to_string(),
                    e["origin"]["msg_id"].as_str().map(str::to_string),
                )
            })
            .collect()
    }

    /// Wait until session `id` is idle with no turn running: the registry
    /// says `idle` and the transcript's last turn has ended.
    pub fn wait_idle(&self, id: &str, timeout: Duration) {
        wait_until("Claude Code to be idle", timeout, || {
            (self.status()? == "idle" && self.turns_ended(id)).then_some(())
        });
    }

    /// Whether every turn the transcript shows has ended (a `turn_duration`
    /// entry after the last user entry).
    fn turns_ended(&self, id: &str) -> bool {
        let t = self.transcript(id);
        let last_user = t.iter().rposition(|e| e["type"] == "user");
        let last_end = t.iter().rposition(|e| e["subtype"] == "turn_duration");
        match (last_user, last_end) {
            (None, _) => true,
            (Some(u), Some(e)) => e > u,
            (Some(_), None) => false,
        }
    }

    /// The agent's own fastest path: one `later` message written straight
    /// to the session's socket, as another Claude session sends it.
    pub fn send_later(&self, reg: &Registered, text: &str) {
        send_later(reg, text);
    }

    /// Whether the process is running.
    pub fn running(&self) -> bool {
        self.tmux.as_ref().is_some_and(Tmux::alive)
    }

    /// Kill the program and everything it started (its process group: the
    /// TUI is its pane's session leader), as a crash or `kill -9` would:
    /// its registry entry and socket stay behind. Waits until it is gone.
    pub fn kill(&mut self) {
        let Some(tmux) = self.tmux.take() else {
            return;
        };
        let group = nix::unistd::Pid::from_raw(tmux.pid as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        try_wait_until(Duration::from_secs(10), || (!tmux.alive()).then_some(()));
        drop(tmux);
    }
}

/// One `later` message written straight to `reg`'s socket (what
/// [`Claude::send_later`] does), from any thread.
pub fn send_later(reg: &Registered, text: &str) {
    let mut s = UnixStream::connect(&reg.socket).expect("connect to the session's socket");
    let auth = json!({"type": "auth", "token": reg.token});
    let msg = json!({"type": "user", "message": {"role": "user", "content": text},
                     "priority": "later", "from": "test"});
    s.write_all(format!("{auth}\n{msg}\n").as_bytes()).unwrap();
}

impl Drop for Claude {
    fn drop(&mut self) {
        self.kill();
        if std::env::var_os("REVEILLE_KEEP_TMP").is_some() {
            if let Some(root) = self.root.take() {
                eprintln!("REVEILLE_KEEP_TMP: kept {}", root.keep().display());
            }
        }
    }
}

/// `chown -R uid:gid root`.
fn chown_tree(root: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    std::os::unix::fs::chown(root, Some(uid), Some(gid))?;
    if root.is_dir() {
        for entry in std::fs::read_dir(root)? {
            chown_tree(&entry?.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// Claude Code's whole environment: the isolated home and the offline
/// settings (UPSTREAM.md), nothing inherited.
fn environment(root: &Path, model: &FakeModel) -> Vec<(String, String)> {
    let p = |d: &str| root.join(d).display().to_string();
    let mut env = vec![
        ("HOME".into(), p("home")),
        ("CLAUDE_CONFIG_DIR".into(), p("config")),
        ("TMPDIR".into(), p("tmp")),
        ("XDG_RUNTIME_DIR".into(), p("run")),
        ("XDG_CONFIG_HOME".into(), p("xdg/config")),
        ("XDG_DATA_HOME".into(), p("xdg/data")),
        ("XDG_STATE_HOME".into(), p("xdg/state")),
        ("XDG_CACHE_HOME".into(), p("xdg/cache")),
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("SHELL".into(), "/bin/bash".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("ANTHROPIC_BASE_URL".into(), model.url()),
        ("ANTHROPIC_API_KEY".into(), API_KEY.into()),
    ];
    for quiet in [
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "DISABLE_TELEMETRY",
        "DISABLE_AUTOUPDATER",
        "DISABLE_ERROR_REPORTING",
    ] {
        env.push((quiet.into(), "1".into()));
    }
    // As root, `--dangerously-skip-permissions` refuses to run outside a
    // sandbox unless told it is one.
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        env.push(("IS_SANDBOX".into(), "1".into()));
    }
    env
}
