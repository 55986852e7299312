//! What the engine asks the shell to do, as plain data, in order.

use std::path::PathBuf;

use super::record::Record;
use super::session::WaitOn;
use super::source::Source;

/// Severity of a journal entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

/// One journal entry with its structured fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Log {
    pub level: Option<Level>,
    pub message: String,
    /// The plan or tracker source (`PLAN=` shows `Source::journal_name`).
    pub plan: Option<Source>,
    /// Step or task id.
    pub step: Option<String>,
    pub session: Option<String>,
    /// The parent of a child session the entry is about.
    pub parent: Option<String>,
    pub mount: Option<String>,
    /// The file the entry is about (a whole path, where it is known).
    pub file: Option<String>,
    /// A plan file's bare name (`PLAN_NAME=`), beside its whole path.
    pub plan_name: Option<String>,
    /// The line in that file.
    pub line: Option<usize>,
    /// Which reminder of its item this entry is about (1, 2, …).
    pub reminder: Option<u32>,
    /// What a session waits for a person for (`WAITING=`: `approval`,
    /// `question`).
    pub waiting: Option<&'static str>,
}

impl Log {
    pub fn new(level: Level, message: impl Into<String>) -> Log {
        Log {
            level: Some(level),
            message: message.into(),
            ..Log::default()
        }
    }
    pub fn plan(mut self, source: &Source) -> Log {
        self.plan = Some(source.clone());
        self
    }
    pub fn step(mut self, step: &str) -> Log {
        self.step = Some(step.to_string());
        self
    }
    pub fn session(mut self, session: &str) -> Log {
        self.session = Some(session.to_string());
        self
    }
    pub fn parent(mut self, parent: &str) -> Log {
        self.parent = Some(parent.to_string());
        self
    }
    pub fn file(mut self, file: &str) -> Log {
        self.file = Some(file.to_string());
        self
    }
    /// A plan file: its whole path (`FILE=`) and bare name (`PLAN_NAME=`).
    pub fn plan_file(mut self, path: &std::path::Path) -> Log {
        self.file = Some(path.display().to_string());
        self.plan_name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        self
    }
    pub fn mount(mut self, mount: &str) -> Log {
        self.mount = Some(mount.to_string());
        self
    }
    pub fn line(mut self, line: usize) -> Log {
        if line > 0 {
            self.line = Some(line);
        }
        self
    }
    pub fn reminder(mut self, n: u32) -> Log {
        self.reminder = Some(n);
        self
    }
    pub fn waiting(mut self, on: WaitOn) -> Log {
        self.waiting = Some(on.name());
        self
    }
    pub fn level(&self) -> Level {
        self.level.unwrap_or(Level::Info)
    }
}

/// A prompt to write to a session's enqueue file (`Engine::poll_delivery`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub session: String,
    pub seq: u64,
    pub text: String,
    /// For `jsonl` framing: the plan file name or tracker source.
    pub plan: String,
    /// For `jsonl` framing: the step or task id.
    pub step: String,
    /// The parent, when the session is a child reveille made (fan-out),
    /// for the journal.
    pub parent: Option<String>,
    /// It may have reached the agent already: it was handed out before
    /// without its outcome heard — by an earlier run of reveille (it was
    /// pending when this one began) or by an earlier try in this one. A
    /// backend that can find its own prompts in the agent looks for it
    /// before writing it again; a first delivery needs no look. The engine
    /// hands it out only once its kind's `unseen` window
    /// (`core::confirm::Windows`) has passed since its last possible
    /// write, so a prompt not found in the agent's record by then was not
    /// taken, and may be written.
    pub again: bool,
}

/// An effect for the shell to carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Append to the durable journal. Always emitted before any effect that
    /// relies on it (a `Deliver` after the `Announce` that queued it).
    Record(Record),
    /// Read this plan file and answer with `Input::PlanRead`.
    Read { path: PathBuf, complete: bool },
    /// Look for prompt `delivery`, which may have reached the agent
    /// (`Evidence::Sent`, or found absent once from one that may hide it:
    /// `Evidence::NotRecorded`), in the agent's own record — never write
    /// it — and answer with what the record shows: taken or waiting
    /// (`Input::Delivered`, `Input::TurnStarted`), refused
    /// (`Input::Undeliverable`), or not there (`Evidence::NotRecorded`).
    /// Asked by the engine's timer once the kind's `record` or `hidden`
    /// window (`core::confirm`) has passed, or once the session is seen
    /// idle (`core::taken::Verdict::LookWhenIdle`).
    Look(Delivery),
    /// List every plan file and answer with `Input::Listed`.
    List { read_all: bool },
    /// Write a journal entry.
    Log(Log),
    /// Read `<beads_root>/<mount>/ready`; answer with `Input::MountRead`.
    ReadMount { mount: String },
    /// Read `<beads_root>/<mount>/list` (every bead not closed, with its
    /// assignee); answer with `Input::MountListRead`. Asked for when a
    /// `claimed` event names no assignee: 9beads keeps it only there.
    ReadMountList { mount: String },
    /// Read `<beads_root>/mtab` and judge its mounts against the project's
    /// directory; answer with `Input::MountTable`. Asked for when the
    /// project's mounts are found by directory and may have changed (a
    /// `mount` or `umount` event, a tracker restart, a mount's files gone).
    ReadMountTable,
    /// Read the beads `issues.jsonl`; answer with `Input::BeadsRead`.
    ReadBeads,
    /// Create child session `child` with the parent's working directory;
    /// answer with `Input::ChildSpawned` once it is seen to exist (or not).
    Spawn(Spawn),
    /// Kill child session `child` (its step is done and it is idle).
    Reap { child: String },
    /// Tell the person (`[notify]`): in the background, never holding
    /// up anything after it.
    Notify(Notice),
}

/// Something the person is told (SPEC §12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub event: NoticeEvent,
    pub session: String,
    /// One line: what happened.
    pub summary: String,
    /// More: what it waits for in full, what it was woken for.
    pub body: String,
    /// The plan or tracker source of the work the session was woken for.
    pub plan: Option<Source>,
    /// That work's step or task id.
    pub step: Option<String>,
}

/// What a notice is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeEvent {
    /// A session began to wait for a person.
    Waiting,
    /// That wait ended (approved, denied, answered, the session gone).
    Resolved,
    /// A step still open after its last reminder.
    GaveUp,
    /// Busy past `[notify] stuck_after_ms` with nothing checked.
    Stuck,
}

impl NoticeEvent {
    /// As `REVEILLE_EVENT` says it.
    pub fn name(self) -> &'static str {
        match self {
            NoticeEvent::Waiting => "waiting",
            NoticeEvent::Resolved => "resolved",
            NoticeEvent::GaveUp => "gave-up",
            NoticeEvent::Stuck => "stuck",
        }
    }
}

/// A child session to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawn {
    /// Its id: `s/new name=`, deterministic, so a retry creates nothing.
    pub child: String,
    /// The session whose `cfg` gives its working directory (and, unless
    /// configured, backend, model and agent).
    pub parent: String,
}
