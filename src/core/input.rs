//! What the shell tells the engine: things that happened in the world.

use std::path::PathBuf;

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
    /// A prompt could not be written; it stays first in its outbox.
    Undeliverable {
        session: String,
        seq: u64,
        why: Undeliverable,
    },
    /// Something happened in a session's directory (its enqueue file was
    /// created or opened): a reader may have appeared, retry now.
    SessionActivity { session: String },
    /// What an agent session is doing, as its backend reports it
    /// (ollie-9p's `idx`, an agent program's events): on every change,
    /// when it appears, and `None` when it is gone (no longer listed:
    /// killed, renamed, deleted).
    SessionState {
        session: String,
        state: Option<AgentState>,
    },
    /// The agent program that serves the session is not running or not
    /// answering (a server stopped): nothing is known of the session until
    /// it is back, and nothing can be delivered to it — but it is not
    /// known to be gone (opencode and Codex keep their sessions on disk),
    /// so a child keeps its step. Its next `SessionState` says which.
    SessionUnreachable { session: String },
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
