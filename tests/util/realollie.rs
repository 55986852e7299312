//! The real ollie-9p server in the test suite: the unmodified upstream
//! `olliesrv`, mounted by plan9port's real `9pfuse`, with a fake model
//! (`fakellm.py`) — the `realollie` package (`/work/shared/realollie`, its
//! README says everything it does). The doubles hide what the real thing
//! does; this is the thing.
//!
//! ```ignore
//! let Some(ollie) = realollie::start_or_skip(Options::default()) else { return };
//! ollie.create("agent", &ollie.work());
//! let sent = ollie.submit("agent", "hello");
//! let turn = ollie.wait_turn("hello", WAIT);
//! ```
//!
//! What the agent experienced is read from the fake model's log
//! (`logs/fakellm.log`): one JSON line per model request's start and end,
//! with wall-clock times — a turn is a request whose last message is the
//! user's. Times are unix seconds (`f64`), the log's own unit.
//!
//! Never touched: `fifo.out`. Every walk or stat of it pops a queued prompt
//! upstream, so nothing here lists a session directory with types, stats
//! its entries or opens that file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{try_wait_until, wait_until};

/// How long a session may take to appear in `idx` after `s/new`: the
/// README measured 2–14 ms; generous for a loaded machine.
const APPEAR: Duration = Duration::from_secs(5);

/// How the server is started.
#[derive(Clone, Debug)]
pub struct Options {
    /// Seconds per model request (`FAKE_DELAY`); a `delay=<s>` in a prompt
    /// overrides it for that turn.
    pub fake_delay: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options { fake_delay: 0.2 }
    }
}

/// Where the package is: `REVEILLE_REALOLLIE`, else
/// `<CARGO_MANIFEST_DIR>/../shared/realollie` (where CI has it).
pub fn package() -> PathBuf {
    match std::env::var_os("REVEILLE_REALOLLIE") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/realollie"),
    }
}

/// Why the real server cannot run here, in one line, or `None`.
pub fn unavailable() -> Option<String> {
    let pkg = package();
    if !pkg.join("up.sh").is_file() || !pkg.join("bin/olliesrv").is_file() {
        return Some(format!(
            "the real ollie-9p package is not at {} (set REVEILLE_REALOLLIE)",
            pkg.display()
        ));
    }
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
    {
        return Some(format!("/dev/fuse cannot be opened ({e})"));
    }
    for tool in ["fusermount", "python3", "setsid"] {
        if !on_path(tool) {
            return Some(format!(
                "{tool} is not on PATH (the real ollie-9p needs it)"
            ));
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("the real ollie-9p package needs root (9pfuse, Landlock)".into());
    }
    None
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
}

/// Starts the server, or prints `skipped: <why>` and returns `None`.
pub fn start_or_skip(options: Options) -> Option<RealOllie> {
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(RealOllie::start(options))
}

/// One `s/idx` row: `id\tstate\tcwd\tbackend\tmodel`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub id: String,
    /// `idle`, `thinking`, `calling: <tool>`, …
    pub state: String,
    pub cwd: String,
    /// The backend's display name (`local`), not a name `s/new` takes.
    pub backend: String,
    pub model: String,
}

/// One model request, as the fake model logged it.
#[derive(Clone, Debug)]
pub struct Request {
    pub n: u64,
    /// When it started (unix seconds).
    pub t: f64,
    /// `reply`, `tick-call`, `tick-final`, `tool-final`.
    pub phase: String,
    /// The role of the request's last message: `user` starts a turn.
    pub last_role: String,
    /// The last user message, cut at 200 characters by the fake model.
    pub last_user: String,
    /// `(path, title)` of each TICK line in it.
    pub ticks: Vec<(String, String)>,
    /// When it ended, and how (`ok`, `client-gone: …`); `None` while running.
    pub ended: Option<(f64, String)>,
}

/// A turn the agent ran: a user prompt and the requests it took.
#[derive(Clone, Debug)]
pub struct Turn {
    /// The prompt (its first 200 characters).
    pub prompt: String,
    /// When its first model request started (unix seconds).
    pub started: f64,
    /// When its last request so far ended; `None` while one runs.
    pub ended: Option<f64>,
    pub requests: Vec<Request>,
}

impl Turn {
    /// The TICK lines the agent acted on in this turn.
    pub fn ticks(&self) -> &[(String, String)] {
        &self.requests[0].ticks
    }
}

/// A running real server, stopped (`down.sh`) on drop — also when the test
/// panics, and then its run directory is kept for a look.
pub struct RealOllie {
    pkg: PathBuf,
    rundir: PathBuf,
    env: BTreeMap<String, String>,
    /// Removed on drop, unless kept (a failure, `REVEILLE_KEEP_TMP`).
    dir: Option<tempfile::TempDir>,
}

/// A fresh, short run directory: `up.sh` refuses more than 98 bytes (the
/// socket path must fit in 107) and `s/new` splits `cwd=` on whitespace.
fn short_tempdir() -> tempfile::TempDir {
    let base = std::env::temp_dir();
    let base = match base.to_str() {
        Some(b) if b.len() <= 60 && !b.contains(char::is_whitespace) => base,
        _ => PathBuf::from("/tmp"),
    };
    tempfile::Builder::new()
        .prefix("ro-")
        .tempdir_in(base)
        .expect("a run directory for the real ollie-9p")
}

impl RealOllie {
    /// `up.sh RUNDIR`; panics with its output when it fails (check
    /// [`unavailable`] first).
    pub fn start(options: Options) -> RealOllie {
        let pkg = package();
        let dir = short_tempdir();
        let rundir = dir.path().join("r");
        let out = Command::new(pkg.join("up.sh"))
            .arg(&rundir)
            .env("FAKE_DELAY", options.fake_delay.to_string())
            .output()
            .expect("run up.sh");
        let mut me = RealOllie {
            pkg,
            rundir,
            env: BTreeMap::new(),
            dir: Some(dir),
        };
        assert!(
            out.status.success(),
            "up.sh failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        me.env = parse_env(&std::fs::read_to_string(me.rundir.join("env")).expect("RUNDIR/env"));
        me
    }

    fn var(&self, key: &str) -> PathBuf {
        PathBuf::from(
            self.env
                .get(key)
                .unwrap_or_else(|| panic!("{key} in RUNDIR/env")),
        )
    }

    /// The run directory (`RUNDIR`).
    pub fn rundir(&self) -> &Path {
        &self.rundir
    }

    /// The mount (`$OLLIE`).
    pub fn mnt(&self) -> PathBuf {
        self.var("MNT")
    }

    /// `<mount>/s`: the directory to configure reveille's `sessions.dir` with.
    pub fn sessions_dir(&self) -> PathBuf {
        self.mnt().join("s")
    }

    /// `<mount>/s/<id>`.
    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.sessions_dir().join(id)
    }

    /// olliesrv's unix socket (`SOCK`): 9P, for a client or a relay of
    /// our own (9pfuse, `socat … UNIX-CONNECT:`).
    pub fn socket(&self) -> PathBuf {
        self.var("SOCK")
    }

    /// The server's working directory (`WORK`): sessions' cwds and their
    /// plans belong under it (Landlock lets the agent write only there).
    pub fn work(&self) -> PathBuf {
        self.var("WORK")
    }

    /// olliesrv's own log: the only place a refused write is reported.
    pub fn server_log(&self) -> String {
        std::fs::read_to_string(self.var("OLLIESRV_LOG")).unwrap_or_default()
    }

    /// `s/new name=<id> cwd=<cwd>`, then waits until `idx` lists it (it
    /// may appear a few ms after the write returned).
    pub fn create(&self, id: &str, cwd: &Path) {
        put(
            &self.sessions_dir().join("new"),
            &format!("name={id} cwd={}", cwd.display()),
        );
        self.wait_listed(id, APPEAR);
    }

    /// Waits until `idx` lists `id`; returns its row.
    pub fn wait_listed(&self, id: &str, timeout: Duration) -> Row {
        let what = format!("session {id} in s/idx");
        wait_until(&what, timeout, || self.row(id))
    }

    /// `ctl kill`, then waits until `idx` no longer lists it.
    pub fn kill(&self, id: &str) {
        put(&self.session_dir(id).join("ctl"), "kill");
        let what = format!("session {id} to leave s/idx");
        wait_until(&what, APPEAR, || self.row(id).is_none().then_some(()));
    }

    /// `ctl rn <new>` (ignored upstream while busy), then waits until `idx`
    /// lists the new id; `false` if it never did.
    pub fn rename(&self, id: &str, new: &str) -> bool {
        put(&self.session_dir(id).join("ctl"), &format!("rn {new}"));
        try_wait_until(APPEAR, || self.row(new)).is_some()
    }

    /// `s/idx`, parsed (tabs: a state may hold a space).
    pub fn idx(&self) -> Vec<Row> {
        let text = std::fs::read_to_string(self.sessions_dir().join("idx")).unwrap_or_default();
        text.lines().filter_map(parse_row).collect()
    }

    /// `id`'s row in `idx`, or `None` when it is not listed.
    pub fn row(&self, id: &str) -> Option<Row> {
        self.idx().into_iter().find(|r| r.id == id)
    }

    /// `id`'s state, or `None` when it is not listed.
    pub fn state(&self, id: &str) -> Option<String> {
        self.row(id).map(|r| r.state)
    }

    /// Waits until `id` is listed and `idle`.
    pub fn wait_idle(&self, id: &str, timeout: Duration) {
        let what = format!("session {id} to be idle");
        wait_until(&what, timeout, || {
            (self.state(id).as_deref() == Some("idle")).then_some(())
        });
    }

    /// `s/<id>/chat`, read from offset 0 to end of file in one go (a tail
    /// read can come back duplicated upstream).
    pub fn chat(&self, id: &str) -> String {
        std::fs::read_to_string(self.session_dir(id).join("chat")).unwrap_or_default()
    }

    /// Submits `text` to `id` (`prompt`), as a person would; returns the
    /// instant just before the `close(2)` that hands it over.
    pub fn submit(&self, id: &str, text: &str) -> f64 {
        put(&self.session_dir(id).join("prompt"), text)
    }

    /// Queues `text` on `id` (`fifo.in`), as another client would.
    pub fn queue(&self, id: &str, text: &str) -> f64 {
        put(&self.session_dir(id).join("fifo.in"), text)
    }

    /// Every model request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        let log = std::fs::read_to_string(self.var("FAKE_LOG")).unwrap_or_default();
        parse_requests(&log)
    }

    /// Every turn the agents ran so far, in the order they started.
    pub fn turns(&self) -> Vec<Turn> {
        group_turns(self.requests())
    }

    /// The turns whose prompt contains `needle`.
    pub fn turns_with(&self, needle: &str) -> Vec<Turn> {
        let mut turns = self.turns();
        turns.retain(|t| t.prompt.contains(needle));
        turns
    }

    /// Waits for the first turn whose prompt contains `needle` to start.
    pub fn wait_turn(&self, needle: &str, timeout: Duration) -> Turn {
        let what = format!("a turn on a prompt containing {needle:?}");
        wait_until(&what, timeout, || {
            self.turns_with(needle).into_iter().next()
        })
    }

    /// Waits until every turn started so far has ended and no session is
    /// busy; returns the turns.
    pub fn wait_quiet(&self, timeout: Duration) -> Vec<Turn> {
        wait_until("every agent to be idle", timeout, || {
            let turns = self.turns();
            let ended = turns.iter().all(|t| t.ended.is_some());
            let idle = self.idx().iter().all(|r| r.state == "idle");
            (ended && idle).then_some(turns)
        })
    }

    /// What the model log and the server log say, for failure messages.
    pub fn describe(&self) -> String {
        let turns: Vec<String> = self
            .turns()
            .iter()
            .map(|t| format!("{:.3}..{:?} {:?}", t.started, t.ended, t.prompt))
            .collect();
        format!("turns:\n{}\nidx: {:?}", turns.join("\n"), self.idx())
    }
}

impl Drop for RealOllie {
    fn drop(&mut self) {
        let out = Command::new(self.pkg.join("down.sh"))
            .arg(&self.rundir)
            .output();
        let stopped = out.as_ref().is_ok_and(|o| o.status.success());
        let keep = std::thread::panicking() || std::env::var_os("REVEILLE_KEEP_TMP").is_some();
        // Never remove a tree that may still hold a live mount: a recursive
        // remove would walk into the sessions (and `rm -r s/<id>` kills).
        if keep || !stopped || mounted(&self.rundir.join("mnt")) {
            if let Some(dir) = self.dir.take() {
                eprintln!(
                    "kept the real ollie-9p run directory {}",
                    dir.keep().display()
                );
            }
        }
        if !stopped {
            eprintln!(
                "down.sh {} did not stop everything: {out:?}",
                self.rundir.display()
            );
        }
    }
}

/// Whether `path` is a mount point right now.
fn mounted(path: &Path) -> bool {
    let want = path.to_string_lossy();
    std::fs::read_to_string("/proc/self/mountinfo")
        .is_ok_and(|info| info.lines().any(|l| l.split(' ').nth(4) == Some(&want)))
}

/// Unix time now, in seconds (the fake model's clock).
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// One open, one write, one close — how a shell's `echo text > file`
/// reaches a 9P file (acted on at clunk, after `close` returned; never
/// truncated: `O_TRUNC` would be a wstat). Returns the instant just before
/// the close.
pub fn put(path: &Path, text: &str) -> f64 {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.write_all(text.as_bytes())
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    let closing = unix_now();
    drop(file);
    closing
}

/// `KEY='value'` lines, as `up.sh` writes them (single-quoted, `'\''` for
/// a quote).
fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), unquote(v)))
        .collect()
}

fn unquote(value: &str) -> String {
    let inner = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .unwrap_or(value);
    inner.replace("'\\''", "'")
}

fn parse_row(line: &str) -> Option<Row> {
    let mut cols = line.split('\t');
    Some(Row {
        id: cols.next()?.to_string(),
        state: cols.next()?.to_string(),
        cwd: cols.next()?.to_string(),
        backend: cols.next()?.to_string(),
        model: cols.next()?.to_string(),
    })
}

/// The requests of the fake model's log: its `start` events, each with
/// the time and status of its `end` (matched by `n`).
fn parse_requests(log: &str) -> Vec<Request> {
    let events: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut ends = BTreeMap::new();
    for e in events.iter().filter(|e| e["ev"] == "end") {
        let status = e["status"].as_str().unwrap_or_default().to_string();
        ends.insert(e["n"].as_u64(), (e["t"].as_f64().unwrap_or(0.0), status));
    }
    let text = |e: &serde_json::Value, k: &str| e[k].as_str().unwrap_or_default().to_string();
    events
        .iter()
        .filter(|e| e["ev"] == "start")
        .map(|e| Request {
            n: e["n"].as_u64().unwrap_or(0),
            t: e["t"].as_f64().unwrap_or(0.0),
            phase: text(e, "phase"),
            last_role: text(e, "last_role"),
            last_user: text(e, "last_user"),
            ticks: e["tick"]
                .as_array()
                .map(|ticks| {
                    ticks
                        .iter()
                        .map(|t| (text(t, "path"), text(t, "title")))
                        .collect()
                })
                .unwrap_or_default(),
            ended: ends.get(&e["n"].as_u64()).cloned(),
        })
        .collect()
}

/// Requests grouped into turns: a request on a user message starts one;
/// the tool rounds after it (same prompt, last message a tool result)
/// belong to it.
fn group_turns(requests: Vec<Request>) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    for request in requests {
        if request.last_role != "user" {
            let owner = turns
                .iter_mut()
                .rev()
                .find(|t| t.requests[0].last_user == request.last_user);
            if let Some(turn) = owner {
                turn.requests.push(request);
                turn.ended = end_of(&turn.requests);
                continue;
            }
        }
        turns.push(Turn {
            prompt: request.last_user.clone(),
            started: request.t,
            ended: end_of(std::slice::from_ref(&request)),
            requests: vec![request],
        });
    }
    turns
}

/// When the last of `requests` ended, if all have and the last asked for
/// no tool (a `tick-call` is followed by the request with its result).
fn end_of(requests: &[Request]) -> Option<f64> {
    let asked_for_a_tool = |r: &Request| {
        r.phase == "tick-call" && r.ended.as_ref().is_none_or(|(_, status)| status == "ok")
    };
    if requests.last().is_some_and(asked_for_a_tool) {
        return None;
    }
    requests
        .iter()
        .map(|r| r.ended.as_ref().map(|(t, _)| *t))
        .try_fold(0.0_f64, |latest, t| Some(latest.max(t?)))
}
