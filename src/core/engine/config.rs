//! What the engine needs to know of the configuration, and its clock type.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::core::effect::Level;
use crate::core::prompt;

/// Monotonic time since an arbitrary origin, supplied by the caller.
pub type Now = Duration;

/// Reactive (announce steps as they unblock) or queue (the old fallback:
/// everything at once, in topological order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Reactive,
    Queue,
}

/// Prompt templates, already checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates {
    pub step: String,
    pub done: String,
    pub task: String,
    pub claim: String,
    pub completed: String,
    /// The reminder of an announced step or task still open.
    pub remind: String,
}

impl Default for Templates {
    fn default() -> Templates {
        Templates {
            step: prompt::DEFAULT_STEP.into(),
            done: prompt::DEFAULT_DONE.into(),
            task: prompt::DEFAULT_TASK.into(),
            claim: prompt::DEFAULT_CLAIM.into(),
            completed: prompt::DEFAULT_COMPLETED.into(),
            remind: prompt::DEFAULT_REMIND.into(),
        }
    }
}

/// Fan-out: child sessions for the parallel steps of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fanout {
    /// Working children per plan; 0 = off.
    pub max_children: usize,
    /// Working children across the project.
    pub max_total: usize,
    /// Keep a child after its step is checked.
    pub keep_children: bool,
}

impl Default for Fanout {
    fn default() -> Fanout {
        Fanout {
            max_children: 0,
            max_total: 8,
            keep_children: false,
        }
    }
}

/// What the engine needs to know of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Where plan files live (directly in it).
    pub plan_dir: PathBuf,
    /// One directory per session id.
    pub sessions_dir: PathBuf,
    /// Also treat `<sessions_dir>/<id>/plan` as a plan.
    pub session_plans: bool,
    /// Session for plans and tasks with no other route.
    pub default_session: Option<String>,
    pub mode: Mode,
    /// Prompt when every step of a wip plan is checked.
    pub nudge_done: bool,
    /// Larger plan files are refused.
    pub max_plan_bytes: usize,
    /// How long a file modified without a close is left to settle.
    pub settle: Duration,
    /// How long a plan whose file vanished waits for the other half of a
    /// rename before a directory listing decides.
    pub rename_grace: Duration,
    /// First retry delay for an undeliverable prompt; doubles up to `retry_max`.
    pub retry_initial: Duration,
    pub retry_max: Duration,
    /// How long after a prompt reached an agent whose state is known its
    /// turn is expected to be seen starting; past it the journal says it
    /// was not seen (nothing waits for it).
    pub confirm_timeout: Duration,
    /// Pending prompts kept per session; beyond it new wake-ups wait
    /// (unannounced, so nothing is lost) until the outbox drains.
    pub outbox_cap: usize,
    pub templates: Templates,
    /// The 9beads mounts of this project by name (`[events] mounts`);
    /// events for others are ignored. Empty (the default): the project's
    /// mounts are the ones `mtab` shows for its directory, followed across
    /// `mount`, `umount` and tracker restarts (`Input::MountTable`).
    pub mounts: Vec<String>,
    /// `events.beads_root` as prompts show it: a task is closed with
    /// `echo <id> > <beads_root>/<mount>/complete`.
    pub beads_root: String,
    /// Tracker assignee → session id.
    pub assignees: BTreeMap<String, String>,
    /// Tell a session when a task announced to it was completed elsewhere.
    pub notify_completed: bool,
    /// Read every mount's ready list this often even with no event
    /// (`events.resync_ms`): catches the changes 9beads writes no event
    /// for in a quiet project. `None` (the default) never wakes for it.
    pub resync: Option<Duration>,
    /// The beads `issues.jsonl` file name, for prompts (`None`: not watched).
    pub beads_file: Option<String>,
    /// How long an observed session is idle with announced work open
    /// before its first reminder (`None`: never remind).
    pub remind_after: Option<Duration>,
    /// Reminders per item, at most, until the session makes progress.
    pub remind_max: u32,
    /// Busy this long with no step checked: the person is told the
    /// session is stuck (`[notify] stuck_after_ms`; `None`: never).
    pub stuck_after: Option<Duration>,
    /// Child sessions for parallel steps (off by default).
    pub fanout: Fanout,
    /// The least severe journal entry the shell keeps (the configured
    /// filter drops the others): entries below it are not even built.
    pub log_level: Level,
}

impl EngineConfig {
    /// A configuration for tests and `reveille ready`: everything default.
    pub fn new(plan_dir: impl Into<PathBuf>, sessions_dir: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            plan_dir: plan_dir.into(),
            sessions_dir: sessions_dir.into(),
            session_plans: true,
            default_session: None,
            mode: Mode::Reactive,
            nudge_done: true,
            max_plan_bytes: 4 << 20,
            settle: Duration::from_millis(50),
            rename_grace: Duration::from_millis(100),
            retry_initial: Duration::from_millis(50),
            retry_max: Duration::from_secs(2),
            confirm_timeout: Duration::from_secs(2),
            outbox_cap: 1000,
            templates: Templates::default(),
            mounts: Vec::new(),
            beads_root: "/beads".into(),
            assignees: BTreeMap::new(),
            notify_completed: false,
            resync: None,
            beads_file: None,
            remind_after: None,
            remind_max: 3,
            stuck_after: None,
            fanout: Fanout::default(),
            log_level: Level::Debug,
        }
    }

    /// Whether a journal entry of `level` would be kept.
    pub fn logs(&self, level: Level) -> bool {
        level >= self.log_level
    }
}
