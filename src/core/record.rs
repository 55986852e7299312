//! The journal records that change the durable memory (`core/memory.rs`),
//! and what they carry: pending prompts, the event log's cursor, child
//! sessions, and the items announced (`record/item.rs`: work and notes).
//!
//! A record is appended to the journal before the shell acts on anything
//! emitted after it, and the engine changes its memory only by applying
//! the very records it emits, so replaying the journal over the last
//! snapshot is exactly the live path. Every record is idempotent (keyed by
//! source, item or sequence number).

use serde::{Deserialize, Serialize};

use super::source::Source;

mod item;
pub use item::{Item, Note, Work};

/// A prompt recorded in a session's outbox and not yet delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// Global, increasing: the delivery order and the idempotency key.
    pub seq: u64,
    /// The source the prompt is about.
    pub source: Source,
    /// The item within the source.
    pub item: Item,
    /// The id agents see (`s3`, `t2`, `bd-a1b2`), for jsonl framing and logs.
    pub step: String,
    /// The plan file name or tracker source, for jsonl framing and logs.
    pub plan: String,
    /// The rendered prompt.
    pub text: String,
}

/// Where the tracker's event log was read up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Cursor {
    pub dev: u64,
    pub ino: u64,
    /// The start of the first line not yet consumed.
    pub offset: u64,
    /// A hash of the log's first bytes: a synthetic FUSE file keeps its
    /// inode when the tracker restarts, but not its first event.
    #[serde(default)]
    pub head: u64,
    /// A hash of the bytes just before `offset` (the end of the last line
    /// consumed), 0 when unknown. A restarted tracker that re-mounts the
    /// same projects begins its new log with the very same bytes, so the
    /// head alone cannot tell; the new log passing our offset between two
    /// polls (size never seen below it) has different bytes here.
    #[serde(default)]
    pub last: u64,
}

/// Where a child session reveille made for one step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildState {
    /// Recorded before its `s/new` is written; not yet seen to exist.
    Planned,
    /// Seen to exist, its step open.
    Working,
    /// Its step is checked: killed once it is idle (or kept).
    Done,
    /// Gone (killed from outside, or could not be created) before its step
    /// was checked: the step went back to the parent, and goes there again
    /// if it is announced anew.
    HandedBack,
}

impl ChildState {
    pub fn as_str(self) -> &'static str {
        match self {
            ChildState::Planned => "planned",
            ChildState::Working => "working",
            ChildState::Done => "done",
            ChildState::HandedBack => "handed back",
        }
    }
}

/// A child session reveille made for one step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Child {
    /// The session of the plan, which fanned the step out.
    pub parent: String,
    /// The plan.
    pub source: Source,
    /// The step, by its key.
    pub item: Item,
    /// The id agents see (`s2`).
    pub step: String,
    /// The plan file name, for logs and status.
    pub plan: String,
    pub state: ChildState,
    /// When it was seen to exist (unix milliseconds, from the shell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_unix_ms: Option<u64>,
}

/// One durable change. Appended to the journal before the shell acts on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "r", rename_all = "snake_case")]
pub enum Record {
    /// An item entered the announced set, with its prompt when it has one.
    Announce {
        source: Source,
        item: Item,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        baseline: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pending: Option<Pending>,
    },
    /// An item left the announced set (checked, closed, gone).
    Forget { source: Source, item: Item },
    /// A whole source is gone (plan deleted).
    DropSource { source: Source },
    /// A prompt reached its session.
    Delivered { session: String, seq: u64 },
    /// A pending prompt was withdrawn before it could be delivered.
    Withdrawn { session: String, seq: u64 },
    /// The tracker's event log was consumed up to here.
    Cursor { cursor: Cursor },
    /// The first-start baseline is complete.
    Baselined,
    /// Reminder `n` of an announced item, with its prompt: recorded before
    /// it is written, like an announcement.
    Remind {
        source: Source,
        item: Item,
        session: String,
        n: u32,
        pending: Pending,
    },
    /// An announced item still open after its last reminder was given up
    /// on, and the person told: recorded so a restart does not tell again.
    GaveUp {
        source: Source,
        item: Item,
        session: String,
    },
    /// The session made progress in the source (a step checked): its
    /// reminder counts there start again (and what was given up on there
    /// may be told again).
    RemindReset { source: Source, session: String },
    /// A child session, as it stands now (recorded before it is created,
    /// and at every move after).
    Child { id: String, child: Child },
    /// A child session is no longer followed (reaped, or gone after its
    /// step was done).
    ChildEnded { id: String },
    /// Everything remembered under `from` is remembered under `to` from
    /// now on (items `to` already has are kept as they are), and its
    /// pending prompts are `to`'s: a 9beads mount followed by name before
    /// is the project's mount found by its directory now.
    Adopt { from: Source, to: Source },
}
