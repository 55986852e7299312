//! A test double of ollie-9p — agent sessions served as files — mounted
//! through a real FUSE mount ([`super::fuse`]) the way 9pfuse mounts the
//! real server at `~/mnt/ollie`. It is built from the upstream sources, each
//! behaviour naming the file (and function) it comes from: the tree in
//! [`files`] (lneely/ollie-9p), the agents in [`agent`] (lneely/ollie-core).
//!
//! It is at least as unkind as the real program (shared/UPSTREAM.md, and
//! the real server itself in `util::realollie`), on purpose:
//! - a write acts when the file is closed, after `close(2)` has returned
//!   (FUSE sends RELEASE asynchronously), and an error never reaches the
//!   writer: a refused `s/new`, `cfg`, `ctl` or `prompt` "succeeds";
//! - a session made through `s/new` appears 2–14 ms after the `close`;
//! - `idx` and `cfg` show the backend's display name (`local`), which
//!   `s/new backend=` refuses;
//! - `prompt`, `fifo.in` and `ctl` writes are handled on their own thread
//!   (ollie-9p `isAsyncWrite` → a goroutine), so two writes closed back to
//!   back can be handled in either order;
//! - `fifo.in` on an idle agent starts nothing; the queue drains one item per
//!   *finished* turn; an interrupted (`ctl stop`) turn drains nothing;
//! - between two turns of a chain the state is `idle` for a moment;
//! - a Submit that arrives while a turn is starting (pre-turn hooks, before
//!   ollie-core sets `currentAction`) — the first of a chain or one between
//!   two chained turns — is not queued: it waits for the whole chain,
//!   queued items included, then runs;
//! - a lookup or stat of `fifo.out` pops three items (the walk one, the
//!   Tstat two: runfilestore.go `stat` sizes a file by reading it), and a
//!   listing of `s/<id>` pops them too (9pfuse's readdir has no types, so
//!   a typed listing stats every entry);
//! - a killed or renamed session's directory still resolves for a second
//!   (9pfuse's entry timeout): a write to the killed one is lost, one to
//!   the renamed one reaches it under its new id;
//! - a turn's tool call shows as `calling: execute_code`;
//! - only ollie-core's known slash commands (and `!shell`) are commands: an
//!   unknown `/text` is a prompt and starts a turn;
//! - a session named after a fixed file of `s/` (`new`, `idx`, `b`, …) runs
//!   and is listed in `s/idx`, but has no reachable directory;
//! - `open(O_CREAT)` of a name the layout lacks succeeds and the text goes
//!   nowhere (an error at clunk today, silence in the older layout);
//! - there are no inotify events and mtimes never move.
//!
//! Timing: the pre-turn window is 10 ms by default, what the real server
//! takes from a Submit's close to `busy` in `idx` (`Options::pre_turn`
//! widens it); `statewait` blocks its real 5 s.
//!
//! What it leaves out: the model (a turn is a set duration with one tool call
//! in the middle, where a test's script acts), the effects of slash commands
//! (they are recorded), `/i` injects, hooks' output, `compacting` and
//! `limitretry` states, the server crash a bare `ctl rn` causes upstream
//! (`input[3:]` out of range), and the fid path rewrite ollie-9p does on `rn`
//! for files held open across a rename beyond the second the old name
//! lingers (after it, such a file reads empty).

// Explicit paths, so the benchmark can include this file through `#[path]`
// (a path-included file resolves child modules as a `mod.rs` would).
#[path = "ollie/agent.rs"]
mod agent;
#[path = "ollie/files.rs"]
mod files;
#[path = "ollie/lingering.rs"]
mod lingering;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use self::agent::{Agent, Behaviour};
use self::files::{Served, Server};
use super::fuse::Mount;

pub use self::agent::{STATEWAIT, TOOL};

/// Which ollie-9p layout the double serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// `fifo.in`, `fifo.out`, `cfg`, `statewait`, `plan`, `s/idx`.
    Current,
    /// The older layout: `enqueue`, `dequeue`, `state`, `workdir` (and
    /// `workdir=` in `s/new`), no `s/idx`, no `cfg`, no `statewait`.
    Legacy,
}

/// How a double behaves.
#[derive(Clone, Debug)]
pub struct Options {
    pub flavour: Flavour,
    /// How long a turn runs, unless a session overrides it.
    pub turn: Duration,
    /// How long ollie-core's pre-turn hooks take (the window in which a
    /// Submitted turn has begun but the agent does not yet look busy).
    pub pre_turn: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            flavour: Flavour::Current,
            turn: Duration::from_millis(300),
            pre_turn: Duration::from_millis(10),
        }
    }
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Finished,
    /// `ctl stop`.
    Interrupted,
    /// The session was killed.
    Killed,
}

/// One turn an agent ran.
#[derive(Clone, Debug)]
pub struct Turn {
    /// The session's id when the turn started.
    pub session: String,
    pub prompt: String,
    pub started: Instant,
    /// `None` while it runs.
    pub ended: Option<(Instant, Outcome)>,
}

/// A command an agent handled instead of starting a turn (`/compact`,
/// `!ls`).
#[derive(Clone, Debug)]
pub struct Command {
    pub session: String,
    pub text: String,
    pub at: Instant,
}

impl Command {
    fn new(session: &str, text: &str) -> Command {
        Command {
            session: session.into(),
            text: text.into(),
            at: Instant::now(),
        }
    }
}

/// How a text reached an agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// `prompt` (Submit).
    Submit,
    /// `fifo.in` / `enqueue` (Queue).
    Queue,
}

/// A text an agent received, whatever became of it.
#[derive(Clone, Debug)]
pub struct Received {
    pub session: String,
    pub via: Via,
    pub text: String,
    pub at: Instant,
}

impl Received {
    fn submitted(session: &str, text: &str) -> Received {
        Received {
            session: session.into(),
            via: Via::Submit,
            text: text.into(),
            at: Instant::now(),
        }
    }
    fn queued(session: &str, text: &str) -> Received {
        Received {
            session: session.into(),
            via: Via::Queue,
            text: text.into(),
            at: Instant::now(),
        }
    }
}

/// What a turn's script is told.
#[derive(Clone, Debug)]
pub struct TurnScope {
    pub session: String,
    pub prompt: String,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The turn's index in [`Ollie::all_turns`].
    pub number: usize,
}

/// Everything the agents experienced, for assertions.
#[derive(Default)]
pub struct Record {
    turns: Mutex<Vec<Turn>>,
    commands: Mutex<Vec<Command>>,
    received: Mutex<Vec<Received>>,
    /// Every `ctl` line, recorded once it took effect.
    controls: Mutex<Vec<Command>>,
    /// Errors the server returned at clunk or logged: they never reached
    /// a writer.
    errors: Mutex<Vec<String>>,
    /// Each session created, and when.
    created: Mutex<Vec<(String, Instant)>>,
}

impl Record {
    fn turn_started(&self, session: &str, prompt: &str) -> usize {
        let mut turns = self.turns.lock().unwrap();
        let turn = Turn {
            session: session.into(),
            prompt: prompt.into(),
            started: Instant::now(),
            ended: None,
        };
        turns.push(turn);
        turns.len() - 1
    }
    fn turn_ended(&self, index: usize, outcome: Outcome) {
        self.turns.lock().unwrap()[index].ended = Some((Instant::now(), outcome));
    }
    fn command(&self, command: Command) {
        self.commands.lock().unwrap().push(command);
    }
    fn control(&self, control: Command) {
        self.controls.lock().unwrap().push(control);
    }
    fn received(&self, received: Received) {
        self.received.lock().unwrap().push(received);
    }
    fn error(&self, error: String) {
        self.errors.lock().unwrap().push(error);
    }
    fn created(&self, id: &str) {
        self.created
            .lock()
            .unwrap()
            .push((id.into(), Instant::now()));
    }
}

/// A running ollie-9p double: its mount and its sessions.
pub struct Ollie {
    server: Arc<Server>,
    /// Declared last: unmounted after nothing else needs it.
    mount: Mount,
}

impl Ollie {
    /// The current layout, default timing. Panics when the mount fails:
    /// check [`super::fuse::fuse_unavailable`] first.
    pub fn start() -> Ollie {
        Ollie::with(Options::default())
    }

    /// The older layout (`enqueue`, `state`, `workdir`).
    pub fn start_legacy() -> Ollie {
        Ollie::with(Options {
            flavour: Flavour::Legacy,
            ..Options::default()
        })
    }

    pub fn with(options: Options) -> Ollie {
        let behaviour = Behaviour {
            turn: Mutex::new(options.turn),
            pre_turn: Mutex::new(options.pre_turn),
            script: Mutex::new(None),
        };
        let server = Arc::new(Server {
            flavour: options.flavour,
            sessions: Mutex::new(Default::default()),
            record: Arc::new(Record::default()),
            behaviour: Arc::new(behaviour),
            lingering: Default::default(),
            failing_reads: Default::default(),
        });
        let mount =
            Mount::new(Arc::new(Served(server.clone()))).expect("mount the ollie-9p double");
        Ollie { server, mount }
    }

    /// The mount root (what `$OLLIE` / `~/mnt/ollie` is).
    pub fn path(&self) -> &Path {
        self.mount.path()
    }

    /// `<mount>/s`: the sessions directory.
    pub fn sessions_dir(&self) -> PathBuf {
        self.path().join("s")
    }

    /// `<mount>/s/<id>`.
    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.sessions_dir().join(id)
    }

    /// The next `n` reads of every session's `file` fail with EIO, as
    /// ollie-9p's store reads do when they time out.
    pub fn fail_reads(&self, file: &str, n: u32) {
        let mut failing = self.server.failing_reads.lock().unwrap();
        failing.insert(file.to_string(), n);
    }

    /// FUSE requests served so far.
    pub fn ops(&self) -> u64 {
        self.mount.ops()
    }

    /// Creates a session server-side, as an `s/new` write of
    /// `cwd=<cwd> name=<id>` would (`workdir=` in the older layout).
    pub fn create(&self, id: &str, cwd: &Path) {
        let key = match self.server.flavour {
            Flavour::Current => "cwd",
            Flavour::Legacy => "workdir",
        };
        let (name, dir) = (format!("name={id}"), format!("{key}={}", cwd.display()));
        self.server
            .create(&[&name, &dir])
            .expect("create a session");
    }

    /// Kills a session server-side (as `ctl kill` or `rm -r` would).
    pub fn kill(&self, id: &str) {
        self.server.kill(id);
    }

    /// Sets every session's turn duration (sessions with their own keep it).
    pub fn set_turn(&self, duration: Duration) {
        *self.server.behaviour.turn.lock().unwrap() = duration;
    }

    /// From now on, pre-turn hooks take `duration` (a Submit's turn starts
    /// that late; the session shows idle meanwhile).
    pub fn set_pre_turn(&self, duration: Duration) {
        *self.server.behaviour.pre_turn.lock().unwrap() = duration;
    }

    /// Sets one session's turn duration.
    pub fn set_session_turn(&self, id: &str, duration: Duration) {
        self.agent(id).fields().turn = Some(duration);
    }

    /// Runs `script` at every turn's tool call (replacing any earlier one).
    pub fn on_turn(&self, script: impl Fn(&TurnScope) + Send + Sync + 'static) {
        *self.server.behaviour.script.lock().unwrap() = Some(Arc::new(script));
    }

    fn agent(&self, id: &str) -> Arc<Agent> {
        self.server
            .session(id)
            .unwrap_or_else(|| panic!("no ollie session {id}"))
    }

    /// Every turn of every session, in the order they started.
    pub fn all_turns(&self) -> Vec<Turn> {
        self.server.record.turns.lock().unwrap().clone()
    }

    /// The turns a session (by its id when they started) has run or runs.
    pub fn turns(&self, session: &str) -> Vec<Turn> {
        self.all_turns()
            .into_iter()
            .filter(|t| t.session == session)
            .collect()
    }

    /// Waits until `session` has started at least `n` turns; returns them.
    pub fn wait_turns(&self, session: &str, n: usize, timeout: Duration) -> Vec<Turn> {
        let what = format!("{n} turn(s) of ollie session {session}");
        super::wait_until(&what, timeout, || {
            let turns = self.turns(session);
            (turns.len() >= n).then_some(turns)
        })
    }

    /// Waits until `session` has finished (or ended otherwise) at least `n`
    /// turns; returns its turns.
    pub fn wait_ended(&self, session: &str, n: usize, timeout: Duration) -> Vec<Turn> {
        let what = format!("{n} ended turn(s) of ollie session {session}");
        super::wait_until(&what, timeout, || {
            let turns = self.turns(session);
            (turns.iter().filter(|t| t.ended.is_some()).count() >= n).then_some(turns)
        })
    }

    /// Waits until `session` exists, is idle and has no turn in progress.
    pub fn wait_idle(&self, session: &str, timeout: Duration) {
        let what = format!("ollie session {session} to be idle");
        super::wait_until(&what, timeout, || self.idle(session).then_some(()));
    }

    /// The commands a session handled.
    pub fn commands(&self, session: &str) -> Vec<Command> {
        let commands = self.server.record.commands.lock().unwrap();
        commands
            .iter()
            .filter(|c| c.session == session)
            .cloned()
            .collect()
    }

    /// The `ctl` lines a session acted on (`stop`, `rn …`), in order.
    pub fn controls(&self, session: &str) -> Vec<Command> {
        let controls = self.server.record.controls.lock().unwrap();
        controls
            .iter()
            .filter(|c| c.session == session)
            .cloned()
            .collect()
    }

    /// Every text a session received through `prompt` or `fifo.in`.
    pub fn received(&self, session: &str) -> Vec<Received> {
        let received = self.server.record.received.lock().unwrap();
        received
            .iter()
            .filter(|r| r.session == session)
            .cloned()
            .collect()
    }

    /// The errors the server returned or logged (never seen by a writer).
    pub fn errors(&self) -> Vec<String> {
        self.server.record.errors.lock().unwrap().clone()
    }

    /// When session `id` was (last) created, if it was.
    pub fn created_at(&self, id: &str) -> Option<Instant> {
        let created = self.server.record.created.lock().unwrap();
        created
            .iter()
            .rev()
            .find(|(c, _)| c == id)
            .map(|&(_, at)| at)
    }

    /// A session's prompt queue, oldest first.
    pub fn queue(&self, session: &str) -> Vec<String> {
        self.agent(session).fields().fifo.iter().cloned().collect()
    }

    /// A session's state (`idle`, `thinking`, `calling: …`), `None` when it
    /// does not exist.
    pub fn state(&self, session: &str) -> Option<String> {
        Some(self.server.session(session)?.fields().state.clone())
    }

    /// Whether a session exists, is idle and runs no turn.
    pub fn idle(&self, session: &str) -> bool {
        self.server
            .session(session)
            .is_some_and(|a| !a.is_running() && a.fields().state == "idle")
            && self.turns(session).iter().all(|t| t.ended.is_some())
    }

    /// Whether a session exists.
    pub fn exists(&self, session: &str) -> bool {
        self.server.session(session).is_some()
    }

    /// The ids of the live sessions, sorted.
    pub fn session_ids(&self) -> Vec<String> {
        self.server
            .sessions
            .lock()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    }

    /// How many `statewait` reads of a session are blocked right now.
    pub fn statewait_readers(&self, session: &str) -> usize {
        self.server
            .session(session)
            .map_or(0, |a| a.fields().statewaiting)
    }

    /// A session's `plan` scratch file, as last written.
    pub fn plan(&self, session: &str) -> String {
        String::from_utf8_lossy(&self.agent(session).fields().plan).into_owned()
    }
}

pub use super::plan_edit::task_complete;
