//! Codex as a person runs it: the interactive `codex` TUI under tmux in the
//! session's working directory, with `CODEX_HOME` (and HOME, TMPDIR, the
//! XDG directories) in a temporary directory and the model provider pointed
//! at the fake model — offline, touching nothing of the user's.
//!
//! What the TUI really is (`@openai/codex` 0.171.0, seen here): the npm
//! `codex` is a node script that spawns the native binary (one process
//! group); the TUI starts — or joins — an app-server **daemon** copied to
//! `$CODEX_HOME/packages/app-server-daemon/…` and started in a session of
//! its own (`codex app-server --listen unix:// --managed-daemon`, pid in
//! `$CODEX_HOME/app-server-daemon/daemon.pid`), plus a `pid-update-loop`
//! helper (`daemon-updater.pid`). The daemon runs the threads; the TUI is a
//! client of it through `$CODEX_HOME/app-server-control/app-server-control.sock`,
//! a symlink to a socket in `/tmp/codex-daemon-<uid>/` (not under TMPDIR).
//! Quitting the TUI leaves the daemon running; `codex app-server daemon
//! stop` stops the daemon (and removes the symlink) but leaves the
//! `pid-update-loop` behind, so a stop here ends all three, by pid.

pub mod app_server;
pub mod tap;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use app_server::AppServer;
use serde_json::{json, Value};

use super::{cli_bin, tmux_unavailable, Tmux};
use crate::util::fakemodel::FakeModel;
use crate::util::{try_wait_until, wait_until};

/// How long a TUI or daemon may take to come up on a loaded machine.
const START: Duration = Duration::from_secs(60);

/// An isolated Codex installation: its homes and the environment every
/// Codex process of a test runs with (and nothing else of ours).
pub struct CodexHome {
    dir: tempfile::TempDir,
    /// `CODEX_HOME`.
    pub home: PathBuf,
    bin: PathBuf,
    env: Vec<(String, String)>,
}

impl CodexHome {
    /// A fresh home whose `config.toml` talks only to `model`; `Err` names
    /// what is missing (the CLI, tmux) for the test's `skipped:` line.
    pub fn new(model: &FakeModel) -> Result<CodexHome, String> {
        CodexHome::with_policy(model, "never")
    }

    /// The same, asking the person before any `sed` runs: approval policy
    /// `on-request` and a `prompt` rule for `sed` (UPSTREAM: 0.171 refuses
    /// `untrusted`, and without the rule nothing asks).
    pub fn asking(model: &FakeModel) -> Result<CodexHome, String> {
        let home = CodexHome::with_policy(model, "on-request")?;
        let rules = home.home.join("rules");
        std::fs::create_dir_all(&rules).unwrap();
        std::fs::write(
            rules.join("default.rules"),
            "prefix_rule(pattern=[\"sed\"], decision=\"prompt\")\n",
        )
        .unwrap();
        Ok(home)
    }

    /// A home whose agent may ask the person a question in its default
    /// mode (`request_user_input`, otherwise offered in Plan mode only),
    /// and runs commands without asking.
    pub fn questioning(model: &FakeModel) -> Result<CodexHome, String> {
        let home = CodexHome::with_policy(model, "never")?;
        let config = home.home.join("config.toml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str("\n[features]\ndefault_mode_request_user_input = true\n");
        std::fs::write(&config, text).unwrap();
        Ok(home)
    }

    fn with_policy(model: &FakeModel, approval: &str) -> Result<CodexHome, String> {
        let bin = cli_bin("codex")?;
        if let Some(why) = tmux_unavailable() {
            return Err(why);
        }
        let dir = tempfile::Builder::new().prefix("codex-").tempdir().unwrap();
        let root = dir.path();
        let home = root.join("codex");
        for d in [
            "home", "codex", "tmp", "config", "data", "state", "cache", "work",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(home.join("config.toml"), config(model.port(), approval)).unwrap();
        let s = |p: &str| root.join(p).display().to_string();
        let env = vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), s("home")),
            ("CODEX_HOME".into(), s("codex")),
            ("TMPDIR".into(), s("tmp")),
            ("XDG_CONFIG_HOME".into(), s("config")),
            ("XDG_DATA_HOME".into(), s("data")),
            ("XDG_STATE_HOME".into(), s("state")),
            ("XDG_CACHE_HOME".into(), s("cache")),
            ("FAKE_API_KEY".into(), "sk-fake-0123456789abcdef".into()),
            ("LANG".into(), "C.UTF-8".into()),
        ];
        Ok(CodexHome {
            dir,
            home,
            bin,
            env,
        })
    }

    /// A directory for the session to work in (its cwd, its plan files).
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// The TUI daemon's control socket.
    pub fn socket(&self) -> PathBuf {
        self.home.join("app-server-control/app-server-control.sock")
    }

    /// `codex <args>` with the isolated environment, in `cwd`.
    pub fn command(&self, args: &[&str], cwd: &Path) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args).current_dir(cwd).env_clear();
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    fn pid_file(&self, name: &str) -> Option<i32> {
        let text = std::fs::read_to_string(self.home.join("app-server-daemon").join(name)).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        v["pid"].as_i64().map(|p| p as i32)
    }

    /// Stop the app-server daemon the way a person does (`codex
    /// app-server daemon stop`), then what that leaves behind: the
    /// `pid-update-loop`, and the daemon itself should it not have gone.
    pub fn stop_daemon(&self) {
        let daemon = self.pid_file("daemon.pid");
        let updater = self.pid_file("daemon-updater.pid");
        // Their sockets live in /tmp/codex-daemon-<uid>/, outside the
        // test's directory, and a killed helper leaves its own behind.
        let sockets: Vec<PathBuf> = [
            self.socket(),
            self.home.join("app-server-daemon/daemon-updater.sock"),
        ]
        .iter()
        .filter_map(|link| std::fs::read_link(link).ok())
        .collect();
        let _ = self
            .command(&["app-server", "daemon", "stop"], self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        for pid in [updater, daemon].into_iter().flatten() {
            end(pid);
        }
        for socket in sockets {
            let _ = std::fs::remove_file(&socket);
            let _ = std::fs::remove_file(socket.with_extension("lock"));
        }
    }
}

/// The offline configuration (UPSTREAM.md "Codex").
fn config(port: u16, approval: &str) -> String {
    // Asking needs a sandbox: with full access a `prompt` rule asks no one.
    let sandbox = match approval {
        "never" => "danger-full-access",
        _ => "workspace-write",
    };
    format!(
        r#"model = "fake-model"
model_provider = "fake"
approval_policy = "{approval}"
sandbox_mode = "{sandbox}"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"

[analytics]
enabled = false
"#
    )
}

/// Whether `pid` runs (a zombie does not).
pub fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// TERM `pid` (a process this test started, or one Codex started for it),
/// then KILL if it is still there after a few seconds.
fn end(pid: i32) {
    use nix::sys::signal::{kill, Signal};
    let p = nix::unistd::Pid::from_raw(pid);
    let _ = kill(p, Signal::SIGTERM);
    if try_wait_until(Duration::from_secs(5), || (!running(pid)).then_some(())).is_none() {
        let _ = kill(p, Signal::SIGKILL);
    }
}

/// The interactive `codex` TUI of one thread, and its daemon.
pub struct Codex {
    pub home: CodexHome,
    tui: Option<Tmux>,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The thread id the TUI shows (`codex:<thread>` for reveille).
    pub thread: String,
    /// One agent program of the tests at a time (`one_agent_at_a_time`).
    _turn: super::AgentTurn,
}

impl Codex {
    /// Start `codex` in `home.work()`, as a person does, and wait until its
    /// daemon serves the TUI's new thread.
    pub fn start(home: CodexHome) -> Codex {
        let turn = super::one_agent_at_a_time();
        let cwd = home.work();
        let mut codex = Codex {
            home,
            tui: None,
            cwd,
            thread: String::new(),
            _turn: turn,
        };
        codex.tui = Some(codex.open(&[]));
        codex.thread = wait_until("the codex TUI's thread", START, || codex.tui_thread());
        codex.wait_ready();
        codex
    }

    fn open(&self, args: &[&str]) -> Tmux {
        let mut argv = vec![self.home.bin.display().to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        let socket = self
            .home
            .dir
            .path()
            .join(format!("tmux-{}", std::process::id()));
        Tmux::start(&socket, &argv, &self.home.env, &self.cwd)
    }

    /// `unix://<socket>`: where the daemon serves (the TUI's own way in).
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.home.socket().display())
    }

    /// A client of the daemon, or why not.
    pub fn client(&self) -> Result<AppServer, String> {
        AppServer::connect(&self.endpoint())
    }

    /// The loaded thread the TUI opened in `cwd` (not a helper thread).
    fn tui_thread(&self) -> Option<String> {
        let mut c = self.client().ok()?;
        let loaded = c.call("thread/loaded/list", json!({})).ok()?;
        loaded["data"].as_array()?.iter().find_map(|id| {
            let id = id.as_str()?;
            let t = c.call("thread/read", json!({ "threadId": id })).ok()?;
            let ours = t["thread"]["ephemeral"] == false
                && t["thread"]["cwd"].as_str() == Some(&self.cwd.display().to_string());
            ours.then(|| id.to_string())
        })
    }

    /// Wait until the TUI shows its composer (a person could type).
    fn wait_ready(&self) {
        wait_until("the codex TUI's composer", START, || {
            self.screen().contains("for shortcuts").then_some(())
        });
    }

    /// What the terminal shows.
    pub fn screen(&self) -> String {
        self.tui.as_ref().map(Tmux::screen).unwrap_or_default()
    }

    /// Press `keys` (tmux key names), as a person does.
    pub fn press(&self, keys: &[&str]) {
        self.tui.as_ref().expect("the TUI runs").send(keys, false);
    }

    /// Type `text` into the composer without pressing Enter, and wait
    /// until it shows.
    pub fn type_keys(&self, text: &str) {
        let tui = self.tui.as_ref().expect("the TUI runs");
        tui.send(&[text], true);
        wait_until("the typed text on screen", START, || {
            self.screen().contains(text).then_some(())
        });
    }

    /// Type `text` into the composer and press Enter, as a person does,
    /// and wait until the thread holds it as a user message. The TUI takes
    /// fast typing for a paste and an Enter inside that burst for a new
    /// line, so Enter is pressed once the text shows, and again until the
    /// prompt was taken.
    pub fn type_prompt(&self, text: &str) {
        let tui = self.tui.as_ref().expect("the TUI runs");
        tui.send(&[text], true);
        let tail: String = text
            .chars()
            .rev()
            .take(24)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        wait_until("the typed prompt on screen", START, || {
            self.screen().contains(&tail).then_some(())
        });
        let first_line = text.lines().next().unwrap_or("");
        wait_until("the typed prompt taken", START, || {
            tui.send(&["Enter"], false);
            try_wait_until(Duration::from_secs(1), || {
                let mut c = self.client().ok()?;
                let recent = c.user_messages(&self.thread, 3).ok()?;
                recent
                    .iter()
                    .any(|(t, _)| t.starts_with(first_line))
                    .then_some(())
            })
        });
    }

    /// Wait until the thread's status is `want` (`idle`, `active`).
    pub fn wait_status(&self, want: &str, timeout: Duration) {
        wait_until(
            &format!("codex thread {} {want}", self.thread),
            timeout,
            || {
                let mut c = self.client().ok()?;
                (c.status(&self.thread).ok()? == want).then_some(())
            },
        );
    }

    /// The user messages the thread holds, oldest first, with their
    /// `clientId`s: what the agent was given, as it recorded it.
    pub fn user_messages(&self) -> Vec<(String, String)> {
        let mut c = self.client().expect("the daemon serves");
        c.user_messages(&self.thread, 100)
            .expect("thread/turns/list")
    }

    /// Whether the TUI, the daemon or its socket is still there.
    pub fn is_running(&self) -> bool {
        self.tui.as_ref().is_some_and(Tmux::alive)
            || self.home.pid_file("daemon.pid").is_some_and(running)
    }

    /// Stop everything: the TUI's whole process group (node and the native
    /// binary), then the daemon and its `pid-update-loop`.
    pub fn stop(&mut self) {
        if let Some(tui) = self.tui.take() {
            let pgid = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(tui.pid as i32)));
            if let Ok(pgid) = pgid {
                let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM);
            }
            let _ = try_wait_until(Duration::from_secs(5), || (!tui.alive()).then_some(()));
            drop(tui);
        }
        self.home.stop_daemon();
        wait_until("codex and its daemon to stop", START, || {
            (!self.is_running() && AppServer::connect(&self.endpoint()).is_err()).then_some(())
        });
    }

    /// Stop it all and start it again on the same thread (`codex resume
    /// <thread>`), until the daemon serves that thread again.
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// After `stop`: `codex resume <thread>` brings the thread back.
    pub fn start_again(&mut self) {
        let thread = self.thread.clone();
        self.tui = Some(self.open(&["resume", &thread]));
        wait_until("the resumed codex thread", START, || {
            let mut c = self.client().ok()?;
            let loaded = c.call("thread/loaded/list", json!({})).ok()?;
            loaded["data"]
                .as_array()?
                .iter()
                .any(|id| id.as_str() == Some(&thread))
                .then_some(())
        });
        self.wait_ready();
    }
}

impl Drop for Codex {
    fn drop(&mut self) {
        // The TUI now; its daemon when the home is dropped, right after.
        if let Some(tui) = self.tui.take() {
            let pid = nix::unistd::Pid::from_raw(tui.pid as i32);
            if let Ok(pgid) = nix::unistd::getpgid(Some(pid)) {
                let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            }
        }
    }
}

impl Drop for CodexHome {
    /// Whatever daemon a TUI or a test started on this home ends with it.
    fn drop(&mut self) {
        let daemon = self.pid_file("daemon.pid").is_some_and(running);
        let updater = self.pid_file("daemon-updater.pid").is_some_and(running);
        if daemon || updater {
            self.stop_daemon();
        }
    }
}

/// `codex app-server --listen <addr>`: a headless app-server of its own
/// (`codex.endpoint`), in its own process group, ended on drop.
pub struct ListeningServer {
    child: Child,
    /// `ws://127.0.0.1:<port>` or `unix://<path>`.
    pub endpoint: String,
    /// The capability token it asks for (`--ws-auth capability-token`).
    pub token: Option<String>,
    /// One agent program of the tests at a time (`one_agent_at_a_time`).
    _turn: super::AgentTurn,
}

impl ListeningServer {
    /// Start one on a free port of 127.0.0.1 and wait until it answers.
    pub fn ws(home: &CodexHome) -> ListeningServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        ListeningServer::start(home, format!("ws://127.0.0.1:{port}"), None)
    }

    /// Start one on a free port of 127.0.0.1 that lets in only clients
    /// sending the token in `token_file` (`--ws-auth capability-token
    /// --ws-token-file F`).
    pub fn ws_with_token(home: &CodexHome, token_file: &Path, token: &str) -> ListeningServer {
        ListeningServer::ws_at_with_token(home, "127.0.0.1", token_file, token)
    }

    /// The same on address `ip` of the network it is started in (a
    /// non-loopback one needs the token: the app-server refuses to listen
    /// there without authentication).
    pub fn ws_at_with_token(
        home: &CodexHome,
        ip: &str,
        token_file: &Path,
        token: &str,
    ) -> ListeningServer {
        let port = crate::util::tls::free_port();
        let auth = (token_file, token.to_string());
        ListeningServer::start(home, format!("ws://{ip}:{port}"), Some(auth))
    }

    /// Start one on a unix socket of its own (`--listen unix://PATH`).
    pub fn unix(home: &CodexHome) -> ListeningServer {
        let path = home.dir.path().join("listen.sock");
        ListeningServer::start(home, format!("unix://{}", path.display()), None)
    }

    fn start(home: &CodexHome, endpoint: String, auth: Option<(&Path, String)>) -> ListeningServer {
        use std::os::unix::process::CommandExt;
        let turn = super::one_agent_at_a_time();
        let mut args = vec![
            "app-server".to_string(),
            "--listen".into(),
            endpoint.clone(),
        ];
        if let Some((file, _)) = &auth {
            args.extend([
                "--ws-auth".into(),
                "capability-token".into(),
                "--ws-token-file".into(),
                file.display().to_string(),
            ]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let child = home
            .command(&args, &home.work())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn codex app-server");
        let server = ListeningServer {
            child,
            endpoint,
            token: auth.map(|(_, token)| token),
            _turn: turn,
        };
        wait_until("codex app-server --listen", START, || {
            AppServer::connect_with(&server.endpoint, server.token.as_deref())
                .ok()
                .map(|_| ())
        });
        server
    }

    /// A new thread in `cwd`, as a client of this server makes one.
    pub fn new_thread(&self, cwd: &Path) -> String {
        let mut c = AppServer::connect_with(&self.endpoint, self.token.as_deref()).unwrap();
        let started = c
            .call("thread/start", json!({ "cwd": cwd.display().to_string() }))
            .expect("thread/start");
        started["thread"]["id"].as_str().unwrap().to_string()
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for ListeningServer {
    fn drop(&mut self) {
        // `--listen unix://PATH` makes PATH a symlink to a socket in
        // /tmp/codex-daemon-<uid>/, which a killed server leaves behind.
        if let Some(path) = self.endpoint.strip_prefix("unix://") {
            if let Ok(socket) = std::fs::read_link(path) {
                let _ = std::fs::remove_file(&socket);
                let _ = std::fs::remove_file(socket.with_extension("lock"));
            }
        }
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.pid()),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}
