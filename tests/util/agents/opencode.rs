//! The real opencode, started as a person starts it, offline against the
//! fake model, in a home of its own.
//!
//! - [`Home`]: temp dirs for `HOME`, `XDG_CONFIG_HOME`, `XDG_DATA_HOME`
//!   (where the session database lives), `XDG_STATE_HOME`,
//!   `XDG_CACHE_HOME`, `TMPDIR`, and a working directory; the offline
//!   configuration (`opencode.json`: the fake model as provider `fake`,
//!   every permission allowed, no autoupdate, no sharing).
//! - [`Opencode`]: one opencode process serving HTTP on a port of its
//!   own — the TUI as `opencode --port P` under tmux ([`Mode::Tui`]), or
//!   headless as `opencode serve --port P` ([`Mode::Serve`]). A person's
//!   prompt is typed into the TUI; sessions are made by the TUI (its first
//!   prompt) or with `POST /session`. Stopping ends the whole process
//!   group; [`Opencode::kill9`] and [`Opencode::start_again`] restart it on
//!   the same port with the same home, where its sessions are stored.
//!
//! The test side speaks HTTP to it with reveille's own small client
//! (`reveille::shell::agents::opencode::http`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use std::time::Duration;

use reveille::config::secret::Secret;
use reveille::shell::agents::opencode::http::{Access, Server};
use serde_json::{json, Value};

use super::{cli_bin, tmux_unavailable, Tmux};
use crate::util::{try_wait_until, wait_until};

/// How long opencode may take to start listening (it loads its plugins
/// and database first; seconds on a loaded machine).
const START: Duration = Duration::from_secs(60);

/// An isolated home for opencode, configured for the fake model.
pub struct Home {
    dir: tempfile::TempDir,
    /// `OPENCODE_SERVER_PASSWORD`, when the server asks for one.
    password: Option<String>,
    /// `opencode serve --hostname`: where it listens (its default is
    /// 127.0.0.1).
    hostname: Option<String>,
}

impl Home {
    /// A home whose opencode talks to the fake model at `model_url`.
    pub fn new(model_url: &str) -> Home {
        Home::with_bash(model_url, "allow")
    }

    /// The same, with every shell command asking the person first
    /// (`"permission": {"bash": "ask"}`): a wait for a person.
    pub fn asking(model_url: &str) -> Home {
        Home::with_bash(model_url, "ask")
    }

    fn with_bash(model_url: &str, bash: &str) -> Home {
        let dir = tempfile::Builder::new()
            .prefix("reveille-opencode-")
            .tempdir()
            .unwrap();
        let home = Home {
            dir,
            password: None,
            hostname: None,
        };
        for d in [
            "home",
            "config/opencode",
            "data",
            "state",
            "cache",
            "tmp",
            "work",
        ] {
            std::fs::create_dir_all(home.dir.path().join(d)).unwrap();
        }
        let config = json!({
            "$schema": "https://opencode.ai/config.json",
            "model": "fake/fake-model",
            "small_model": "fake/fake-model",
            "autoupdate": false,
            "share": "disabled",
            "permission": {"edit": "allow", "bash": bash, "webfetch": "allow", "external_directory": "allow"},
            "provider": {"fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": format!("{model_url}/v1"), "apiKey": "fake-key"},
                "models": {"fake-model": {"name": "Fake Model", "tool_call": true}},
            }},
        });
        let cfg = home.dir.path().join("config/opencode");
        std::fs::write(cfg.join("opencode.json"), config.to_string()).unwrap();
        // Offline: at every start opencode installs @opencode-ai/plugin
        // into its config directory from the npm registry unless a
        // node_modules is there and package-lock.json already lists every
        // dependency of package.json (its Npm.install, 1.18.33).
        std::fs::create_dir_all(cfg.join("node_modules")).unwrap();
        let deps = json!({"@opencode-ai/plugin": "1.18.33"});
        std::fs::write(
            cfg.join("package.json"),
            json!({"dependencies": deps}).to_string(),
        )
        .unwrap();
        let lock = json!({"packages": {"": {"dependencies": deps}}});
        std::fs::write(cfg.join("package-lock.json"), lock.to_string()).unwrap();
        home
    }

    /// The server asks for `password` (HTTP Basic, user `opencode`).
    pub fn with_password(mut self, password: &str) -> Home {
        self.password = Some(password.to_string());
        self
    }

    /// The server listens on `hostname` (`opencode serve --hostname`),
    /// e.g. `0.0.0.0` for every address of its network.
    pub fn listening_on(mut self, hostname: &str) -> Home {
        self.hostname = Some(hostname.to_string());
        self
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The working directory the agent runs in (its project).
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// Exactly the environment opencode runs with.
    pub fn env(&self) -> Vec<(String, String)> {
        let p = |d: &str| self.dir.path().join(d).display().to_string();
        let mut env = vec![
            ("HOME".to_string(), p("home")),
            ("XDG_CONFIG_HOME".into(), p("config")),
            ("XDG_DATA_HOME".into(), p("data")),
            ("XDG_STATE_HOME".into(), p("state")),
            ("XDG_CACHE_HOME".into(), p("cache")),
            ("TMPDIR".into(), p("tmp")),
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ];
        for flag in [
            "OPENCODE_DISABLE_AUTOUPDATE",
            "OPENCODE_DISABLE_MODELS_FETCH",
            "OPENCODE_DISABLE_LSP_DOWNLOAD",
            "OPENCODE_DISABLE_SHARE",
        ] {
            env.push((flag.into(), "1".into()));
        }
        if let Some(pw) = &self.password {
            env.push(("OPENCODE_SERVER_PASSWORD".into(), pw.clone()));
        }
        env
    }
}

/// How opencode is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The TUI with its own server: `opencode --port P`, under tmux.
    Tui,
    /// Headless: `opencode serve --port P`.
    Serve,
}

/// The running process.
enum Running {
    Tui(Tmux),
    Serve(Child),
}

impl Running {
    fn pid(&self) -> u32 {
        match self {
            Running::Tui(t) => t.pid,
            Running::Serve(c) => c.id(),
        }
    }
}

/// One message of a transcript.
#[derive(Debug, Clone)]
pub struct Said {
    pub id: String,
    pub role: String,
    /// For an answer, the user message it answers.
    pub parent: Option<String>,
    /// Its text parts, joined.
    pub text: String,
    /// When it was created (unix ms) and, for an answer, completed.
    pub created: u64,
    pub completed: Option<u64>,
}

/// One opencode process and its server.
pub struct Opencode {
    pub home: Home,
    pub mode: Mode,
    pub port: u16,
    server: Server,
    running: Option<Running>,
    /// Which start this is (each TUI start gets its own tmux socket).
    starts: u32,
    /// The session a restarted TUI continues (`--session`), as a person
    /// restarting it would.
    resume: Option<String>,
    /// Held while this one lives (a failed test's poison is no matter);
    /// dropped after the process is killed (fields drop in order).
    _turn: super::AgentTurn,
}

impl Opencode {
    /// Why opencode cannot run here, if it cannot.
    pub fn unavailable(mode: Mode) -> Option<String> {
        if let Err(why) = cli_bin("opencode") {
            return Some(why);
        }
        match mode {
            Mode::Tui => tmux_unavailable(),
            Mode::Serve => None,
        }
    }

    /// Start opencode in `home`, on a free port, and wait until it serves.
    pub fn start(home: Home, mode: Mode) -> Opencode {
        let turn = super::one_agent_at_a_time();
        let port = free_port();
        let access = Access {
            username: "opencode".into(),
            password: home.password.clone().map(Secret::new),
            password_file: None,
            ca_file: None,
        };
        let server = Server::new(&format!("http://127.0.0.1:{port}"), &access).unwrap();
        let mut oc = Opencode {
            home,
            mode,
            port,
            server,
            running: None,
            starts: 0,
            resume: None,
            _turn: turn,
        };
        oc.start_again();
        oc
    }

    /// `http://127.0.0.1:<port>`: what `[opencode] url` says.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The pid of the opencode process.
    pub fn pid(&self) -> Option<u32> {
        self.running.as_ref().map(Running::pid)
    }

    /// Start it (again) on the same port, with the same home.
    pub fn start_again(&mut self) {
        assert!(self.running.is_none(), "opencode is already running");
        self.starts += 1;
        let bin = cli_bin("opencode").unwrap();
        let port = self.port.to_string();
        let running = match self.mode {
            Mode::Tui => {
                let socket = self.home.path().join(format!("tmux-{}.sock", self.starts));
                let mut argv = vec![bin.display().to_string(), "--port".into(), port];
                if let Some(session) = &self.resume {
                    argv.extend(["--session".into(), session.clone()]);
                }
                Running::Tui(Tmux::start(
                    &socket,
                    &argv,
                    &self.home.env(),
                    &self.home.work(),
                ))
            }
            Mode::Serve => {
                let log = std::fs::File::create(
                    self.home.path().join(format!("serve-{}.log", self.starts)),
                )
                .unwrap();
                let mut cmd = Command::new(&bin);
                cmd.args(["serve", "--port", &port]);
                if let Some(hostname) = &self.home.hostname {
                    cmd.args(["--hostname", hostname]);
                }
                cmd.current_dir(self.home.work())
                    .env_clear()
                    .envs(self.home.env())
                    .stdin(Stdio::null())
                    .stdout(log.try_clone().unwrap())
                    .stderr(log);
                std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
                Running::Serve(cmd.spawn().expect("start opencode serve"))
            }
        };
        self.running = Some(running);
        // Probed with the event stream, whose head is waited for 3 s: a
        // request opencode takes as its listener opens is never answered,
        // and a plain call would wait its whole 10 s on it.
        let ok = try_wait_until(START, || self.server.events().ok().map(drop));
        assert!(
            ok.is_some(),
            "opencode did not serve {} within {START:?}",
            self.url()
        );
        if self.mode == Mode::Tui {
            // The prompt box's footer: on the home screen and in a session.
            wait_until("the TUI's prompt box", START, || {
                self.tui()
                    .screen()
                    .contains("Build · Fake Model")
                    .then_some(())
            });
        }
    }

    /// Start the TUI again (after a stop) on `session`, as `opencode
    /// --port P --session ID`.
    pub fn resume(&mut self, session: &str) {
        self.resume = Some(session.to_string());
        self.start_again();
    }

    /// Stop it: SIGTERM to its whole process group, SIGKILL after 5 s.
    pub fn stop(&mut self) {
        self.end(nix::sys::signal::Signal::SIGTERM);
    }

    /// `kill -9` its whole process group: the session is left as it was.
    pub fn kill9(&mut self) {
        self.end(nix::sys::signal::Signal::SIGKILL);
    }

    fn end(&mut self, signal: nix::sys::signal::Signal) {
        let Some(running) = self.running.take() else {
            return;
        };
        let group = nix::unistd::Pid::from_raw(running.pid() as i32);
        let _ = nix::sys::signal::killpg(group, signal);
        let five = Duration::from_secs(5);
        match running {
            Running::Serve(mut child) => {
                if try_wait_until(five, || child.try_wait().ok().flatten()).is_none() {
                    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                }
                let _ = child.wait();
            }
            Running::Tui(tmux) => {
                // tmux reaps the pane's program; its pid is gone then.
                if try_wait_until(five, || (!tmux.alive()).then_some(())).is_none() {
                    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                }
            }
        }
        // The port is free again once nothing listens on it.
        wait_until("opencode's port to close", Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", self.port))
                .is_err()
                .then_some(())
        });
    }

    fn tui(&self) -> &Tmux {
        match &self.running {
            Some(Running::Tui(t)) => t,
            _ => panic!("opencode is not running as a TUI"),
        }
    }

    /// One HTTP call to the server: status and JSON body (`Null` if none).
    pub fn call(
        &self,
        method: &str,
        target: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), String> {
        let a = self
            .server
            .call(method, target, body)
            .map_err(|e| e.to_string())?;
        let v = serde_json::from_slice(&a.body).unwrap_or(Value::Null);
        Ok((a.status, v))
    }

    /// A new session in the working directory (`POST /session`).
    pub fn create_session(&self) -> String {
        let (status, v) = self
            .call(
                "POST",
                &format!("/session?directory={}", self.dir_query()),
                Some(&json!({})),
            )
            .unwrap();
        assert_eq!(status, 200, "POST /session: {v}");
        v["id"].as_str().unwrap().to_string()
    }

    /// Type a person's prompt into the TUI and press Enter.
    pub fn type_prompt(&self, text: &str) {
        self.type_only(text);
        self.tui().send(&["Enter"], false);
    }

    /// Type into the TUI's prompt box without sending it (half-typed).
    pub fn type_only(&self, text: &str) {
        self.tui().send(&[text], true);
    }

    /// What the TUI shows now.
    pub fn screen(&self) -> String {
        self.tui().screen()
    }

    /// Press `keys` (tmux key names) in the TUI, as a person does.
    pub fn press(&self, keys: &[&str]) {
        self.tui().send(keys, false);
    }

    /// Type a person's first prompt into a fresh TUI; the session it made.
    pub fn first_prompt(&self, text: &str) -> String {
        let before = self.session_ids();
        self.type_prompt(text);
        wait_until("the TUI to make a session", START, || {
            self.session_ids()
                .into_iter()
                .find(|id| !before.contains(id))
        })
    }

    fn session_ids(&self) -> Vec<String> {
        let (_, v) = self
            .call(
                "GET",
                &format!("/session?directory={}", self.dir_query()),
                None,
            )
            .unwrap();
        v.as_array()
            .map(|l| {
                l.iter()
                    .filter_map(|s| s["id"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `POST /session/:id/prompt_async`: the agent's own fastest way in.
    pub fn prompt_async(&self, session: &str, text: &str) {
        let body = json!({"parts": [{"type": "text", "text": text}]});
        let (status, v) = self
            .call(
                "POST",
                &format!("/session/{session}/prompt_async"),
                Some(&body),
            )
            .unwrap();
        assert_eq!(status, 204, "prompt_async: {v}");
    }

    /// The session's status (`idle`, `busy`, `retry`), as the server says.
    pub fn status(&self, session: &str) -> String {
        let (_, v) = self
            .call(
                "GET",
                &format!("/session/status?directory={}", self.dir_query()),
                None,
            )
            .unwrap();
        v[session]["type"].as_str().unwrap_or("idle").to_string()
    }

    /// Wait until the session is idle and its last answer complete.
    pub fn wait_idle(&self, session: &str, timeout: Duration) {
        wait_until(&format!("session {session} to be idle"), timeout, || {
            let done = self
                .transcript(session)
                .last()
                .is_some_and(|m| m.role == "assistant" && m.completed.is_some());
            (done && self.status(session) == "idle").then_some(())
        });
    }

    /// What the agent's transcript holds, oldest first.
    pub fn transcript(&self, session: &str) -> Vec<Said> {
        let (_, v) = self
            .call("GET", &format!("/session/{session}/message"), None)
            .unwrap();
        v.as_array()
            .map(|l| l.iter().map(said).collect())
            .unwrap_or_default()
    }

    fn dir_query(&self) -> String {
        reveille::shell::agents::opencode::api::encode(&self.home.work().display().to_string())
    }
}

fn said(m: &Value) -> Said {
    let info = &m["info"];
    let text = m["parts"]
        .as_array()
        .map(|p| {
            p.iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    Said {
        id: info["id"].as_str().unwrap_or("").to_string(),
        role: info["role"].as_str().unwrap_or("").to_string(),
        parent: info["parentID"].as_str().map(str::to_string),
        text,
        created: info["time"]["created"].as_u64().unwrap_or(0),
        completed: info["time"]["completed"].as_u64(),
    }
}

impl Drop for Opencode {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
