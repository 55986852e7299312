//! Stage two of the configuration: the validated [`Settings`] the daemon
//! runs on — paths expanded, enums parsed, numbers range-checked, names
//! validated — and the name check the daemon reuses for data.
//!
//! Here: the settings and how each section is derived from its raw form.
//! Beside it: the configuration's enums and their spellings (`enums.rs`)
//! and what each kind of value must be (`values.rs`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::expand::EnvSnapshot;
use super::raw::{RawConfig, RawEvents, RawFanout, RawNotify, RawProject, RawSessions};
use super::secret::SecretSource;
use crate::core::prompt;
use crate::core::session::check_name;
pub use crate::core::session::MAX_NAME_BYTES;

/// Checks a name that becomes one path component: a project name, a session
/// id, a mount name, the enqueue file name. `kind` says what the name is, for
/// the message ("session id", "mount", …). It is the same rule the engine
/// applies to names from data ([`check_name`]), so a name accepted in the
/// configuration is never refused at wake time.
pub fn validate_name(kind: &str, s: &str) -> Result<(), String> {
    check_name(s).map_err(|problem| {
        let shown: String = s.chars().take(64).collect();
        format!("{kind} {shown:?} {problem}")
    })
}

/// The validated configuration of one project. Compared on SIGHUP reload,
/// hence `PartialEq`.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `[project]`: what the project is and how its plans are treated.
    pub project: ProjectSettings,
    /// `[sessions]`: where prompts go and how.
    pub sessions: SessionSettings,
    /// `[events]`: the tracker's event stream and mounts.
    pub events: EventSettings,
    /// `[beads]`: a plain beads `issues.jsonl` to watch.
    pub beads: BeadsSettings,
    /// `[prompt]`: prompt templates.
    pub prompt: PromptSettings,
    /// `[state]`: durable state and its fsync policy.
    pub state: StateSettings,
    /// `[log]`: logging target and filter.
    pub log: LogSettings,
    /// `[fanout]`: child sessions for parallel steps of a plan.
    pub fanout: FanoutSettings,
    /// `[codex]`: the app-server owning `codex:` sessions.
    pub codex: CodexSettings,
    /// `[claude]`: the registry of running `claude:` sessions.
    pub claude: ClaudeSettings,
    /// `[opencode]`: the server owning `opencode:` sessions.
    pub opencode: OpencodeSettings,
    /// `[notify]`: how the person is told of a session waiting for them.
    pub notify: NotifySettings,
}

/// `[notify]`.
#[derive(Debug, Clone, PartialEq)]
pub struct NotifySettings {
    /// The program and its arguments, run once per notice with the
    /// notice in its environment; empty: none.
    pub command: Vec<String>,
    /// Desktop notifications.
    pub desktop: Desktop,
    /// Busy this long with no step checked: "stuck"; `None`: never.
    pub stuck_after: Option<Duration>,
}

/// `[codex]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CodexSettings {
    /// `CODEX_HOME`: the TUI's app-server daemon listens at
    /// `<home>/app-server-control/app-server-control.sock`.
    pub home: PathBuf,
    /// An explicit `codex app-server --listen` address (`ws://…`,
    /// `wss://…` or `unix://…`) instead; `None` = the daemon under `home`.
    pub endpoint: Option<String>,
    /// The capability token sent as `Authorization: Bearer` (`token_file`,
    /// else the `codex-token` systemd credential); `None` = none.
    pub token: Option<SecretSource>,
    /// The CA a `wss://` server's certificate must chain to; `None` = the
    /// system's roots.
    pub ca_file: Option<PathBuf>,
}

/// `[claude]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaudeSettings {
    /// `CLAUDE_CONFIG_DIR`: running sessions register in `<dir>/sessions/<pid>.json`.
    pub config_dir: PathBuf,
}

/// `[opencode]`.
#[derive(Debug, Clone, PartialEq)]
pub struct OpencodeSettings {
    /// The `opencode serve` / `opencode --port` server owning the sessions.
    pub url: String,
    /// HTTP Basic user name (opencode's `OPENCODE_SERVER_USERNAME`).
    pub username: String,
    /// The password (`password_file`, else the `opencode-password` systemd
    /// credential); `None` = none.
    pub password: Option<SecretSource>,
    /// The CA an `https://` server's certificate must chain to; `None` =
    /// the system's roots.
    pub ca_file: Option<PathBuf>,
}

/// `[project]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectSettings {
    /// The project name: state directory, unit instance.
    pub name: String,
    /// The project's working tree (`project.dir`, `""` = the parent of
    /// `plan_dir`): its 9beads mounts are the ones `mtab` shows for it.
    pub dir: PathBuf,
    /// The plan directory (doc/PLANS.md); may not exist yet.
    pub plan_dir: PathBuf,
    /// Session for plans and tasks with no other route; `None` = nobody.
    pub default_session: Option<String>,
    /// Reactive or queue announcements.
    pub mode: Mode,
    /// Prompt once when every step of a wip plan is checked.
    pub nudge_done: bool,
    /// Plan files larger than this are refused with an error.
    pub max_plan_bytes: u64,
    /// How long a file modified without a close settles before a re-read.
    pub settle: Duration,
}

/// `[sessions]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSettings {
    /// One directory per session id.
    pub dir: PathBuf,
    /// The enqueue file name inside a session directory.
    pub enqueue: String,
    /// How prompts are separated.
    pub framing: Framing,
    /// Pending prompts kept per session; beyond it new ones are refused.
    pub outbox_cap: usize,
    /// Also watch `<dir>/<id>/plan`.
    pub session_plans: bool,
    /// First retry delay for an undeliverable prompt.
    pub retry_initial: Duration,
    /// Longest retry delay (the backoff doubles up to it).
    pub retry_max: Duration,
    /// How prompts reach sessions: Submit to ollie-9p ones, or always the
    /// enqueue file.
    pub delivery: Delivery,
    /// How often an ollie-9p session tree's `idx` is read for states.
    pub state_poll: Duration,
    /// How long an observed session sits idle with announced work open
    /// before it is reminded; `None` (0 in the file): never.
    pub remind_after: Option<Duration>,
    /// Reminders per step or task, at most, until the session progresses.
    pub remind_max: u32,
}

/// `[events]`.
#[derive(Debug, Clone, PartialEq)]
pub struct EventSettings {
    /// The tracker's event log; `None` = disabled.
    pub path: Option<PathBuf>,
    /// Whether `path` names something other than the built-in default. The
    /// default place not existing is a tracker that was never set up: worth
    /// one info line, not warnings.
    pub path_set: bool,
    /// Holds `<mount>/ready` and `<mount>/<id>`.
    pub beads_root: PathBuf,
    /// 9beads mounts of this project by name; empty (the default): the
    /// mounts whose `mtab` directory is `project.dir`, whatever their name.
    pub mounts: Vec<String>,
    /// Poll interval for paths where inotify does not work.
    pub poll_interval: Duration,
    /// Tell a session when its task was completed elsewhere.
    pub notify_completed: bool,
    /// Read every mount's ready list this often with no event asking;
    /// `None` (0, the default) never.
    pub resync: Option<Duration>,
    /// Tracker assignee → session id.
    pub assignees: BTreeMap<String, String>,
}

impl EventSettings {
    /// Whether `path` is the event log at its built-in default place,
    /// which nobody chose: its absence is no news.
    pub fn is_unchosen_log(&self, path: &std::path::Path) -> bool {
        !self.path_set && self.path.as_deref() == Some(path)
    }
}

/// `[beads]`.
#[derive(Debug, Clone, PartialEq)]
pub struct BeadsSettings {
    /// A beads `.beads/issues.jsonl` to watch; `None` = disabled.
    pub issues_jsonl: Option<PathBuf>,
}

/// `[prompt]`: `None` means the built-in template.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptSettings {
    /// A step became ready.
    pub template: Option<String>,
    /// Every step of a wip plan is checked.
    pub done_template: Option<String>,
    /// A tracker task was assigned (claimed) to the session.
    pub claim_template: Option<String>,
    /// A task announced to the session was completed elsewhere.
    pub completed_template: Option<String>,
    /// An announced step or task is still open while its session idles.
    pub remind_template: Option<String>,
}

/// `[state]`.
#[derive(Debug, Clone, PartialEq)]
pub struct StateSettings {
    /// The state directory (lock, journal, state file, outboxes).
    pub dir: PathBuf,
    /// Group-commit interval: how long an acknowledged record may wait for fsync.
    pub sync_interval: Duration,
    /// Journal size that triggers compaction into the state file.
    pub compact_bytes: u64,
}

/// `[fanout]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FanoutSettings {
    /// Live children per plan; 0 turns fan-out off.
    pub max_children: usize,
    /// Live children across the project: each child costs money.
    pub max_total: usize,
    /// Keep a child after its step is checked instead of killing it.
    pub keep_children: bool,
    /// The children's backend; `None` = the parent's.
    pub backend: Option<String>,
    /// The children's model; `None` = the parent's.
    pub model: Option<String>,
}

/// `[log]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LogSettings {
    /// journald, stderr, or chosen automatically.
    pub target: LogTarget,
    /// A tracing filter: a level or `EnvFilter` directives.
    pub level: String,
}

impl Settings {
    /// Stage two: validates `raw` and derives the settings, resolving
    /// paths against `env`. Every invalid value is reported, not only the
    /// first.
    pub(crate) fn from_raw(raw: &RawConfig, env: &EnvSnapshot) -> Result<Settings, Vec<Invalid>> {
        let mut bad = Problems::default();
        let project = project(&raw.project, env, &mut bad);
        let sessions = sessions(&raw.sessions, env, &mut bad);
        let events = events(&raw.events, env, &mut bad);
        let beads = BeadsSettings {
            issues_jsonl: bad.keep(optional_path(
                "beads.issues_jsonl",
                &raw.beads.issues_jsonl,
                env,
            )),
        };
        let t = &raw.prompt;
        let prompt = PromptSettings {
            template: bad.keep(template("prompt.template", &t.template, prompt::STEP_VARS)),
            done_template: bad.keep(template(
                "prompt.done_template",
                &t.done_template,
                prompt::DONE_VARS,
            )),
            claim_template: bad.keep(template(
                "prompt.claim_template",
                &t.claim_template,
                prompt::TASK_VARS,
            )),
            completed_template: bad.keep(template(
                "prompt.completed_template",
                &t.completed_template,
                prompt::TASK_VARS,
            )),
            remind_template: bad.keep(template(
                "prompt.remind_template",
                &t.remind_template,
                prompt::REMIND_VARS,
            )),
        };
        let st = &raw.state;
        let state = StateSettings {
            dir: bad.keep(path("state.dir", &st.dir, env)),
            sync_interval: bad.keep(millis(
                "state.sync_interval_ms",
                st.sync_interval_ms,
                1,
                60_000,
            )),
            compact_bytes: bad.keep(range(
                "state.compact_bytes",
                st.compact_bytes,
                4096,
                1 << 40,
            )),
        };
        let log = LogSettings {
            target: bad.keep(parse_enum("log.target", &raw.log.target)),
            level: bad.keep(log_level(&raw.log.level)),
        };
        let fanout = fanout(&raw.fanout, &mut bad);
        let c = &raw.codex;
        let codex = CodexSettings {
            home: bad.keep(path("codex.home", &c.home, env)),
            endpoint: bad.keep(endpoint(&c.endpoint)),
            token: bad.keep(secret("codex.token_file", &c.token_file, CODEX_TOKEN, env)),
            ca_file: bad.keep(optional_path("codex.ca_file", &c.ca_file, env)),
        };
        let claude = ClaudeSettings {
            config_dir: bad.keep(path("claude.config_dir", &raw.claude.config_dir, env)),
        };
        let o = &raw.opencode;
        let opencode = OpencodeSettings {
            url: bad.keep(http_url("opencode.url", &o.url)),
            username: bad.keep(user_name("opencode.username", &o.username)),
            password: bad.keep(secret(
                "opencode.password_file",
                &o.password_file,
                OPENCODE_PASSWORD,
                env,
            )),
            ca_file: bad.keep(optional_path("opencode.ca_file", &o.ca_file, env)),
        };
        let notify = notify(&raw.notify, &mut bad);
        if !bad.0.is_empty() {
            return Err(bad.0);
        }
        Ok(Settings {
            project,
            sessions,
            events,
            beads,
            prompt,
            state,
            log,
            fanout,
            codex,
            claude,
            opencode,
            notify,
        })
    }
}

fn notify(n: &RawNotify, bad: &mut Problems) -> NotifySettings {
    if n.command.first().is_some_and(|p| p.trim().is_empty()) {
        bad.0.push(invalid(
            "notify.command",
            format!("{:?}", n.command),
            "must start with the program to run (or be [] for none)",
        ));
    }
    let stuck = bad.keep(range(
        "notify.stuck_after_ms",
        n.stuck_after_ms,
        0,
        7 * 24 * 3_600_000,
    ));
    NotifySettings {
        command: n.command.clone(),
        desktop: bad.keep(parse_enum("notify.desktop", &n.desktop)),
        stuck_after: (stuck > 0).then(|| Duration::from_millis(stuck)),
    }
}

fn fanout(f: &RawFanout, bad: &mut Problems) -> FanoutSettings {
    FanoutSettings {
        max_children: bad.keep(range("fanout.max_children", f.max_children, 0, 64)) as usize,
        max_total: bad.keep(range("fanout.max_total", f.max_total, 1, 256)) as usize,
        keep_children: f.keep_children,
        backend: bad.keep(word("fanout.backend", &f.backend)),
        model: bad.keep(word("fanout.model", &f.model)),
    }
}

fn project(p: &RawProject, env: &EnvSnapshot, bad: &mut Problems) -> ProjectSettings {
    let default_session = if p.default_session.is_empty() {
        None
    } else {
        Some(bad.keep(session_id("project.default_session", &p.default_session)))
    };
    let plan_dir = bad.keep(path("project.plan_dir", &p.plan_dir, env));
    let dir = if p.dir.is_empty() {
        // The plan directory lives in the project's tree (`<tree>/pl`).
        plan_dir.parent().unwrap_or(&plan_dir).to_path_buf()
    } else {
        bad.keep(path("project.dir", &p.dir, env))
    };
    ProjectSettings {
        name: bad.keep(name("project.name", "project name", &p.name)),
        dir,
        plan_dir,
        default_session,
        mode: bad.keep(parse_enum("project.mode", &p.mode)),
        nudge_done: p.nudge_done,
        max_plan_bytes: bad.keep(range(
            "project.max_plan_bytes",
            p.max_plan_bytes,
            1024,
            1 << 30,
        )),
        settle: bad.keep(millis("project.settle_ms", p.settle_ms, 0, 60_000)),
    }
}

fn sessions(s: &RawSessions, env: &EnvSnapshot, bad: &mut Problems) -> SessionSettings {
    let retry_initial = bad.keep(millis(
        "sessions.retry_initial_ms",
        s.retry_initial_ms,
        1,
        3_600_000,
    ));
    let mut retry_max = millis("sessions.retry_max_ms", s.retry_max_ms, 1, 3_600_000);
    if matches!(retry_max, Ok(max) if max < retry_initial) {
        retry_max = Err(invalid(
            "sessions.retry_max_ms",
            s.retry_max_ms,
            format!(
                "must be at least sessions.retry_initial_ms ({})",
                s.retry_initial_ms
            ),
        ));
    }
    SessionSettings {
        dir: bad.keep(path("sessions.dir", &s.dir, env)),
        enqueue: bad.keep(name("sessions.enqueue", "enqueue file name", &s.enqueue)),
        framing: bad.keep(parse_enum("sessions.framing", &s.framing)),
        outbox_cap: bad.keep(range("sessions.outbox_cap", s.outbox_cap, 1, 1_000_000)) as usize,
        session_plans: s.session_plans,
        retry_initial,
        retry_max: bad.keep(retry_max),
        delivery: bad.keep(parse_enum("sessions.delivery", &s.delivery)),
        state_poll: bad.keep(millis(
            "sessions.state_poll_ms",
            s.state_poll_ms,
            10,
            600_000,
        )),
        remind_after: match s.remind_after_ms {
            0 => None,
            ms => Some(bad.keep(millis("sessions.remind_after_ms", ms, 1000, 604_800_000))),
        },
        remind_max: bad.keep(range("sessions.remind_max", s.remind_max, 0, 100)) as u32,
    }
}

fn events(e: &RawEvents, env: &EnvSnapshot, bad: &mut Problems) -> EventSettings {
    let mut mounts = Vec::new();
    for (i, m) in e.mounts.iter().enumerate() {
        mounts.push(bad.keep(name(&format!("events.mounts[{i}]"), "mount", m)));
    }
    let mut assignees = BTreeMap::new();
    for (who, session) in &e.assignees {
        let key = super::layers::entry_key("events.assignees", who);
        if who.is_empty() {
            bad.0.push(invalid(&key, "\"\"", "assignee name is empty"));
            continue;
        }
        assignees.insert(who.clone(), bad.keep(session_id(&key, session)));
    }
    EventSettings {
        path: bad.keep(optional_path("events.path", &e.path, env)),
        // Known only to the layers; `load` sets it.
        path_set: false,
        beads_root: bad.keep(path("events.beads_root", &e.beads_root, env)),
        mounts,
        poll_interval: bad.keep(millis(
            "events.poll_interval_ms",
            e.poll_interval_ms,
            10,
            3_600_000,
        )),
        notify_completed: e.notify_completed,
        resync: match e.resync_ms {
            0 => None,
            ms => Some(bad.keep(millis("events.resync_ms", ms, 1000, 86_400_000))),
        },
        assignees,
    }
}

mod enums;
#[cfg(test)]
mod tests;
mod values;

pub use enums::{Delivery, Desktop, Framing, LogTarget, Mode};
pub(crate) use values::Invalid;
use values::{
    endpoint, http_url, invalid, log_level, millis, name, optional_path, parse_enum, path, range,
    secret, session_id, template, user_name, word, Problems, CODEX_TOKEN, OPENCODE_PASSWORD,
};
