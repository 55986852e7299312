//! A project in a temporary directory for the real daemon: the one layout
//! every daemon test runs in, its configuration (written through
//! `config::Config`), its sessions' FIFOs, and the CLI run against it.
//!
//! ```text
//! <tmp>/pl        project.plan_dir
//! <tmp>/s         sessions.dir; s/<id>/fifo.in a named pipe
//! <tmp>/state     state.dir
//! <tmp>/beads     events.beads_root, beads/events the event log (with_tracker)
//! <tmp>/harness   reveille.toml, daemon-<n>.log (each daemon's stderr),
//!                 notify.sock (notify_socket)
//! ```
//!
//! Why one layout: the hostile tests' containment check, the reliability
//! tests' restarts and the plain daemon tests all need the same things, and
//! the harness's own files live apart (`harness/`) so that "the daemon
//! wrote nothing outside its roots" can be checked. The directory is removed
//! on drop unless `REVEILLE_KEEP_TMP` is set; when a test panics, the tail
//! of its daemons' logs is printed.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Mutex};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::config::Config;
use super::daemon::{command, WAIT};
use super::fifo::Reader;

/// A project in a temporary directory (see the module's layout).
pub struct Project {
    /// Removed on drop unless `REVEILLE_KEEP_TMP` is set.
    dir: Option<tempfile::TempDir>,
    pub root: PathBuf,
    pub plan_dir: PathBuf,
    pub sessions_dir: PathBuf,
    pub state_dir: PathBuf,
    /// `events.beads_root` (created by `with_tracker`).
    pub beads: PathBuf,
    /// `events.path` under `beads` (with `with_tracker`).
    pub events: PathBuf,
    /// The harness's own files: the configuration and the daemons' logs.
    pub harness: PathBuf,
    /// The configuration file, `harness/reveille.toml`.
    pub config: PathBuf,
    settings: Config,
    /// How many daemons were started, to name their log files.
    starts: AtomicU32,
    /// Environment variables every daemon of this project gets.
    pub env: Vec<(String, String)>,
    /// Receives sd_notify datagrams once `notify_socket` was called.
    notify: Option<UnixDatagram>,
    notified: Mutex<Vec<String>>,
}

impl Project {
    /// A project named `it` with no default session and no tracker,
    /// logging at debug level to stderr.
    pub fn new() -> Project {
        Project::in_dir("reveille-it-")
    }

    fn in_dir(prefix: &str) -> Project {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("temp dir");
        let root = dir.path().to_path_buf();
        let harness = root.join("harness");
        let mut p = Project {
            dir: Some(dir),
            plan_dir: root.join("pl"),
            sessions_dir: root.join("s"),
            state_dir: root.join("state"),
            beads: root.join("beads"),
            events: root.join("beads").join("events"),
            config: harness.join("reveille.toml"),
            harness,
            root,
            settings: Config::new(),
            starts: AtomicU32::new(0),
            env: Vec::new(),
            notify: None,
            notified: Mutex::new(Vec::new()),
        };
        for d in [&p.plan_dir, &p.sessions_dir, &p.harness] {
            fs::create_dir_all(d).unwrap();
        }
        let (plans, sessions, state) = (
            p.plan_dir.clone(),
            p.sessions_dir.clone(),
            p.state_dir.clone(),
        );
        p.configure(|c| {
            c.name("it")
                .plan_dir(&plans)
                .sessions_dir(&sessions)
                .state_dir(&state)
                .log("stderr", "debug")
                .events(None);
        });
        p
    }

    /// A project whose plans go to `session` unless they say otherwise.
    pub fn with_default_session(session: &str) -> Project {
        let mut p = Project::new();
        p.configure(|c| {
            c.default_session(session);
        });
        p
    }

    /// A project named `name` with a tracker: `beads/` as the beads root
    /// holding the one mount `name`, `beads/events` as the event log (not
    /// created).
    pub fn with_tracker(name: &str) -> Project {
        let mut p = Project::in_dir(&format!("reveille-{name}-"));
        fs::create_dir_all(&p.beads).unwrap();
        let (beads, events) = (p.beads.clone(), p.events.clone());
        p.configure(|c| {
            c.name(name).events(Some(&events)).beads(&beads, &[name]);
        });
        p
    }

    /// Change the configuration with its typed setters, and rewrite the file.
    pub fn configure(&mut self, f: impl FnOnce(&mut Config)) -> &mut Project {
        f(&mut self.settings);
        self.write_config();
        self
    }

    /// Set `[section] key = value` (`value` is TOML: quote strings) and
    /// rewrite the configuration file.
    pub fn set(&mut self, section: &str, key: &str, value: &str) {
        self.configure(|c| {
            c.set(section, key, value);
        });
    }

    /// Remove `[section] key` and rewrite the configuration file.
    pub fn unset(&mut self, section: &str, key: &str) {
        self.configure(|c| {
            c.unset(section, key);
        });
    }

    /// `[project] name` (a plain name, as every harness sets it).
    pub fn name(&self) -> String {
        let quoted = self.settings.get("project", "name").unwrap_or("\"\"");
        quoted.trim_matches('"').to_string()
    }

    /// The configuration file's text.
    pub fn config_text(&self) -> String {
        self.settings.text()
    }

    fn write_config(&self) {
        self.settings.write(&self.config);
    }

    /// Overwrite the configuration file with arbitrary text (a broken one).
    pub fn write_config_raw(&self, text: &str) {
        fs::write(&self.config, text).unwrap();
    }

    /// `s/<id>/`, created if needed.
    pub fn session_dir(&self, id: &str) -> PathBuf {
        let dir = self.sessions_dir.join(id);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `s/<id>/fifo.in`, a named pipe (created if needed); returns the pipe.
    pub fn session(&self, id: &str) -> PathBuf {
        let fifo = self.session_dir(id).join("fifo.in");
        if fs::symlink_metadata(&fifo).is_err() {
            super::fifo::mkfifo(&fifo);
        }
        fifo
    }

    /// A reader on session `id`'s pipe (created if needed).
    pub fn reader(&self, id: &str) -> Reader {
        Reader::open(&self.session(id))
    }

    /// Receive the daemons' sd_notify messages (`READY=1`, `STATUS=…`):
    /// binds `harness/notify.sock` and sets `NOTIFY_SOCKET` for them.
    pub fn notify_socket(&mut self) {
        let path = self.harness.join("notify.sock");
        let sock = UnixDatagram::bind(&path).expect("bind notify socket");
        sock.set_nonblocking(true).unwrap();
        self.notify = Some(sock);
        self.env
            .push(("NOTIFY_SOCKET".into(), path.display().to_string()));
    }

    /// Every sd_notify message received so far.
    pub fn notified(&self) -> Vec<String> {
        let mut got = self.notified.lock().unwrap();
        if let Some(sock) = &self.notify {
            let mut buf = vec![0u8; 65536];
            while let Ok(n) = sock.recv(&mut buf) {
                got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
        }
        got.clone()
    }

    /// Append raw bytes to the tracker's event log (created if needed).
    pub fn append_events(&self, bytes: &[u8]) {
        let mut f = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.events)
            .unwrap();
        f.write_all(bytes).unwrap();
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

    /// How many prompts are pending, per session with an outbox.
    pub fn pending_counts(&self) -> BTreeMap<String, usize> {
        self.status_json()["outbox"]
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| (k.clone(), v.as_array().map_or(0, Vec::len)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The log file of the next daemon started.
    pub(super) fn next_log(&self) -> PathBuf {
        let n = self.starts.fetch_add(1, Ordering::SeqCst) + 1;
        self.harness.join(format!("daemon-{n}.log"))
    }

    /// How many daemons were started.
    pub fn starts(&self) -> u32 {
        self.starts.load(Ordering::SeqCst)
    }

    /// Every daemon's log, in the order they were started.
    pub fn logs(&self) -> String {
        (1..=self.starts())
            .map(|n| fs::read(self.harness.join(format!("daemon-{n}.log"))).unwrap_or_default())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect()
    }

    /// Every file under the root, relative to it.
    pub fn files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
            for e in fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                out.push(p.strip_prefix(base).unwrap().to_path_buf());
                if e.file_type().unwrap().is_dir() {
                    walk(&p, base, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &self.root, &mut out);
        out
    }

    /// Keep the temp dir (to look at it after a failure).
    pub fn keep(&mut self) {
        if let Some(dir) = self.dir.take() {
            eprintln!("keeping {}", dir.keep().display());
        }
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        if std::thread::panicking() && self.starts() > 0 {
            let logs = self.logs();
            let tail: Vec<&str> = logs.lines().rev().take(60).collect();
            eprintln!(
                "--- the daemons' logs, last lines ({}) ---",
                self.harness.display()
            );
            for l in tail.into_iter().rev() {
                eprintln!("{l}");
            }
        }
        if std::env::var_os("REVEILLE_KEEP_TMP").is_some() {
            self.keep();
        }
    }
}
