//! What the shell tells the engine: things that happened in the world.

use std::path::PathBuf;
use std::time::Duration;

use super::lines::LineError;
use super::record::Cursor;
use super::session::AgentState;

/// How a file under a watched root changed, as inotify reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A writer closed it (IN_CLOSE_WRITE): complete, read it now.
    Closed,
    /// Created or renamed into place (IN_CREATE, IN_MOVED_TO): read it now.
    Appeared,
    /// Modified with no close seen yet: read it after the settle time.
    Modified,
    /// Deleted or renamed away (IN_DELETE, IN_MOVED_FROM).
    Gone,
}

/// The outcome of reading a file the engine asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRead {
    /// The bytes (at most the size cap plus one, so an oversized file is
    /// recognised without reading all of it).
    Bytes(Vec<u8>),
    /// The file does not exist (any more).
    Missing,
    /// It exists but could not be read; the error text.
    Failed(String),
    /// It is larger than the cap the read was given (`cap`): `size` is its
    /// length as last seen, so an error can say how large it is.
    Oversized { size: u64, cap: usize },
}

impl FileRead {
    /// Why a read that brought no bytes failed, in words (`None` for
    /// bytes or a missing file).
    pub fn failure(&self) -> Option<String> {
        match self {
            FileRead::Bytes(_) | FileRead::Missing => None,
            FileRead::Failed(e) => Some(e.clone()),
            FileRead::Oversized { size, cap } => {
                Some(format!("it is {size} bytes, over the cap of {cap} bytes"))
            }
        }
    }
}

/// One 9beads mount whose directory is the project's, as `mtab` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectMount {
    /// Its current name (random, chosen by 9beads at the mount).
    pub name: String,
    /// Its directory as 9beads wrote it: the beads' identity.
    pub cwd: String,
}

/// 9beads' mount table (`<beads_root>/mtab`) as the shell judged it
/// against the project's directory (`project.dir`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountTable {
    /// Read: the project's mounts; how many others it lists; its lines
    /// that could not be read.
    Read {
        ours: Vec<ProjectMount>,
        others: usize,
        errors: Vec<LineError>,
    },
    /// No `mtab` (9beads is not running, or is an older server).
    Missing,
    /// It exists but could not be read; the error text.
    Failed(String),
}

/// Why a prompt could not be written this time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undeliverable {
    /// What went wrong, in words (e.g. "no reader on the FIFO (ENXIO)").
    pub reason: String,
}

/// How a prompt reached its session, as its backend saw it at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reached {
    /// Written to a named pipe or a file: its reader is the agent's loop,
    /// and the write is the wake-up.
    Written,
    /// The agent program took it — a turn on it starts now (idle) or after
    /// the running one (busy), in the agent's own queue, which keeps it.
    /// Whether and when a turn started on it is told later
    /// (`Input::TurnStarted`).
    Accepted,
    /// The agent program took it into an inbox that would lose it with the
    /// program and merge a second message into it (Claude Code's): it is
    /// not delivered until a turn is seen starting on it, so the session's
    /// next prompt waits for that, and a session that goes away first gets
    /// it again when it is back.
    Inbox,
}

/// Who looked at a session. Only said in the journal and `status`: every
/// observer's look counts the same, the newest wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Observer {
    /// ollie-9p's `idx`, read once per state poll for every session.
    Index,
    /// A delivery's own read around its write (ollie-9p's `cfg` and
    /// `statewait`), or what the engine knows from a delivery it made.
    Delivery,
    /// The agent program's own events (Codex's notifications, opencode's
    /// event stream).
    Events,
    /// A registry of running sessions (Claude Code's), or the agent
    /// program's answer to a request about the session.
    Program,
}

impl Observer {
    /// In words, for the journal and `status`.
    pub fn name(self) -> &'static str {
        match self {
            Observer::Index => "the session index",
            Observer::Delivery => "a delivery",
            Observer::Events => "the agent's events",
            Observer::Program => "the agent program",
        }
    }
}

/// What was seen of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Its state (idle, busy, …).
    State(AgentState),
    /// It is gone: no longer listed (killed, renamed), deleted, or not
    /// known to its server; why, in words. A child gone with its step
    /// open hands the step back.
    Gone(String),
    /// Its agent program is not running or not answering (a server
    /// stopped, no process holds it); why, in words, with the address and
    /// the error. Nothing can be delivered to it, but it is not known to
    /// be gone (opencode and Codex keep their sessions on disk), so a
    /// child keeps its step; its next look says which.
    Unreachable(String),
}

impl Seen {
    /// The state seen; `None` when gone or unreachable.
    pub fn state(&self) -> Option<&AgentState> {
        match self {
            Seen::State(state) => Some(state),
            Seen::Gone(_) | Seen::Unreachable(_) => None,
        }
    }
}

/// One look at one session: what was seen, by whom, and when (engine
/// time). A look older than the newest one the engine has of the session
/// changes nothing: a read that answered late (a blocking `statewait`, a
/// delivery's thread) never overrides a newer poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub session: String,
    pub seen: Seen,
    pub by: Observer,
    /// When it was seen. A worker that reports what it sees at once is
    /// stamped as it sends (`shell::backend::Reports`).
    pub at: Duration,
}

/// Why a session an ollie-9p `idx` read no longer lists is gone.
pub const UNLISTED: &str = "no longer listed in the session index (killed, or renamed)";

impl Observation {
    /// A look stamped when it is sent (see `at`).
    pub fn new(session: String, seen: Seen, by: Observer) -> Observation {
        Observation {
            session,
            seen,
            by,
            at: Duration::ZERO,
        }
    }

    /// `Some(state)` seen, or gone (`None`) for `why`.
    pub fn state(
        session: String,
        state: Option<AgentState>,
        by: Observer,
        why_gone: &str,
    ) -> Observation {
        let seen = match state {
            Some(state) => Seen::State(state),
            None => Seen::Gone(why_gone.to_string()),
        };
        Observation::new(session, seen, by)
    }
}

impl Input {
    /// The look at `session` this input is, if it is one.
    pub fn look_at(&self, session: &str) -> Option<&Seen> {
        match self {
            Input::Observed(look) if look.session == session => Some(&look.seen),
            _ => None,
        }
    }
}

/// What a backend saw of a prompt it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// Written whole to a named pipe or a file: its reader has it.
    Written,
    /// Not taken, and why: the write failed, the session refused it, or
    /// was gone before it was written.
    Refused(String),
    /// Taken into the agent's own queue, which keeps it.
    Queued,
    /// Found in the agent's own record of its prompts (ollie-9p's
    /// `prompt.prev`).
    Recorded,
    /// A turn started on it.
    TurnStarted,
    /// Written, but whether the agent took it could not be told; why.
    Unsure(String),
    /// Written into the agent, whose own record will tell whether it took
    /// it (Claude Code's inbox: its transcript). The record is waited for,
    /// for the kind's `record` window (`core::confirm`), and then looked
    /// at (`Effect::Look`) unless it told first.
    Sent,
    /// Looked for in the agent's own record once its window had passed,
    /// and not there: not taken — or, from an agent that may hide a prompt
    /// it starts (Codex: in neither the thread's queue nor its turns), an
    /// absence the one rule looks at again before it counts
    /// (`core::taken`). Where it was looked for and for how long, in
    /// words.
    NotRecorded(String),
    /// Not written: the agent is running a turn that would take the
    /// prompt in (opencode folds a prompt posted during a turn into it);
    /// why, in words. The backend reports the state it saw as a look of
    /// its own (`Input::Observed`, before this): the prompt waits for the
    /// session to be seen idle, not for a backoff.
    Busy(String),
}

/// An input to the engine. Time is passed beside it, never read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A file under a plan root changed. A rename arrives as two: `Gone`
    /// of the old name, then `Appeared` of the new one (inotify's two
    /// halves, or the poller seeing one name go and another come).
    Changed { path: PathBuf, change: Change },
    /// The answer to `Effect::Read`.
    PlanRead {
        path: PathBuf,
        read: FileRead,
        /// Read because a writer closed it, it was renamed into place or a
        /// scan found it — rather than after a settle with no close, when a
        /// writer may still be mid-file.
        complete: bool,
        /// The file was modified within the settle time: an in-place
        /// rewrite may have begun again since the close that brought this
        /// read, so these bytes may be the start of the next version.
        fresh: bool,
    },
    /// Every plan file currently present, in answer to `Effect::List`, at
    /// start-up, or after an event-queue overflow.
    Listed {
        paths: Vec<PathBuf>,
        /// Read every listed plan, not only those not known yet (start-up and
        /// overflow rescans, when changes may have been missed).
        read_all: bool,
    },
    /// The start-up reconcile has read everything: the baseline, if this is
    /// the first start, is complete.
    StartupDone,
    /// A prompt reached its session.
    Delivered {
        session: String,
        seq: u64,
        reached: Reached,
    },
    /// The agent started a turn on prompt `seq`, as its own identifiers
    /// show (Codex's `clientId`, Claude's transcript, opencode's
    /// `messageID`, an ollie-9p session seen busy after a Submit).
    TurnStarted { session: String, seq: u64 },
    /// What a backend saw of prompt `seq` it wrote; the one rule
    /// (`core::taken`) decides delivered, sent again, or looked at again.
    Evidence {
        session: String,
        seq: u64,
        evidence: Evidence,
    },
    /// A prompt could not be written; it stays first in its outbox.
    Undeliverable {
        session: String,
        seq: u64,
        why: Undeliverable,
    },
    /// Something happened in a session's directory (its enqueue file was
    /// created or opened): a reader may have appeared, retry now.
    SessionActivity { session: String },
    /// What an observer saw of a session: its state, that it is gone, or
    /// that its program cannot be reached. Every observer of every kind
    /// reports every look, changed or not; the engine's `Sessions` is the
    /// one owner of what a session is, and the newest look wins.
    Observed(Observation),
    /// One read of an ollie-9p tree's `idx`, begun at this wall-clock time
    /// (unix milliseconds): every session it listed. A child seen created
    /// before the read began and not among them is gone, even one no read
    /// ever listed — killed within a poll of its creation, it would never
    /// be seen to go, and its step never handed back. (Each listed
    /// session's state comes as its own `Observed`.)
    IndexRead {
        begun_unix_ms: u64,
        listed: std::collections::BTreeSet<String>,
    },
    /// The answer to `Effect::Spawn`: the child was seen to exist (at this
    /// wall-clock time, unix milliseconds), or could not be created.
    ChildSpawned {
        child: String,
        outcome: Result<u64, String>,
    },
    /// Timers may be due; carries nothing but the `now` beside it.
    Tick,
    /// New complete lines of the tracker's event log, each with the byte
    /// offset it starts at, and the position after the last of them.
    TrackerLines {
        lines: Vec<(u64, Vec<u8>)>,
        cursor: Cursor,
    },
    /// The tracker's event log was truncated or replaced and is read again
    /// from the start; what it repeats is de-duplicated by the engine.
    TrackerRestarted { why: String },
    /// The answer to `Effect::ReadMount`: `<beads_root>/<mount>/ready`.
    MountRead {
        mount: String,
        read: FileRead,
        /// Modified within the settle time: a local ready file rewritten in
        /// place may be caught half written (see `PlanRead::fresh`).
        fresh: bool,
    },
    /// The answer to `Effect::ReadMountList`: `<beads_root>/<mount>/list`.
    MountListRead { mount: String, read: FileRead },
    /// The answer to `Effect::ReadMountTable` (and read at every scan when
    /// the project's mounts are found by its directory).
    MountTable { table: MountTable },
    /// The beads `issues.jsonl`, with the wall-clock time (unix seconds) it
    /// is judged at, for `defer_until`.
    BeadsRead { read: FileRead, now_unix: i64 },
}
