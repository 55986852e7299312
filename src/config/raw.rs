//! Stage one of the configuration: the keys exactly as a user writes them,
//! deserialised by figment. Unknown keys are errors (`deny_unknown_fields`);
//! nothing here is interpreted — stage two (`settings.rs`) does that.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Every configuration key, one struct per TOML section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    pub project: RawProject,
    pub sessions: RawSessions,
    pub events: RawEvents,
    pub beads: RawBeads,
    pub prompt: RawPrompt,
    pub state: RawState,
    pub log: RawLog,
    pub fanout: RawFanout,
    pub codex: RawCodex,
    pub claude: RawClaude,
    pub opencode: RawOpencode,
    pub notify: RawNotify,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProject {
    pub name: String,
    pub dir: String,
    pub plan_dir: String,
    pub default_session: String,
    pub mode: String,
    pub nudge_done: bool,
    pub max_plan_bytes: u64,
    pub settle_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSessions {
    pub dir: String,
    pub enqueue: String,
    pub framing: String,
    pub outbox_cap: u64,
    pub session_plans: bool,
    pub retry_initial_ms: u64,
    pub retry_max_ms: u64,
    pub delivery: String,
    pub state_poll_ms: u64,
    pub remind_after_ms: u64,
    pub remind_max: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEvents {
    pub path: String,
    pub beads_root: String,
    pub mounts: Vec<String>,
    pub poll_interval_ms: u64,
    pub notify_completed: bool,
    pub resync_ms: u64,
    pub assignees: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBeads {
    pub issues_jsonl: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPrompt {
    pub template: String,
    pub done_template: String,
    pub claim_template: String,
    pub completed_template: String,
    pub remind_template: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawState {
    pub dir: String,
    pub sync_interval_ms: u64,
    pub compact_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLog {
    pub target: String,
    pub level: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFanout {
    pub max_children: u64,
    pub max_total: u64,
    pub keep_children: bool,
    pub backend: String,
    pub model: String,
}

/// `[codex]`: where the Codex app-server that owns `codex:` sessions is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCodex {
    pub home: String,
    pub endpoint: String,
    pub token_file: String,
    pub ca_file: String,
}

/// `[claude]`: where Claude Code's registry of running sessions is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClaude {
    pub config_dir: String,
}

/// `[opencode]`: the opencode server that owns `opencode:` sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOpencode {
    pub url: String,
    pub username: String,
    pub password_file: String,
    pub ca_file: String,
}

/// `[notify]`: how the person is told of a session waiting for them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNotify {
    pub command: Vec<String>,
    pub desktop: String,
    pub stuck_after_ms: u64,
}

impl RawConfig {
    /// The built-in defaults for project `name`: the lowest layer. They must
    /// work on a fresh machine with nothing configured — the daemon creates
    /// nothing outside its state directory and watches a missing root through
    /// its nearest existing parent, so paths that do not exist yet are fine.
    pub fn defaults(name: &str) -> RawConfig {
        RawConfig {
            project: RawProject {
                name: name.to_string(),
                dir: String::new(),
                plan_dir: format!("~/src/{name}/pl"),
                default_session: String::new(),
                mode: "reactive".into(),
                nudge_done: true,
                max_plan_bytes: 4 * 1024 * 1024,
                settle_ms: 50,
            },
            sessions: RawSessions {
                dir: "~/mnt/ollie/s".into(),
                enqueue: "fifo.in".into(),
                framing: "auto".into(),
                outbox_cap: 1000,
                session_plans: true,
                retry_initial_ms: 50,
                retry_max_ms: 2000,
                delivery: "auto".into(),
                state_poll_ms: 1000,
                remind_after_ms: 600_000,
                remind_max: 3,
            },
            events: RawEvents {
                path: "~/mnt/beads/events".into(),
                beads_root: "~/mnt/beads".into(),
                mounts: Vec::new(),
                poll_interval_ms: 100,
                notify_completed: false,
                resync_ms: 0,
                assignees: BTreeMap::new(),
            },
            beads: RawBeads {
                issues_jsonl: String::new(),
            },
            prompt: RawPrompt {
                template: String::new(),
                done_template: String::new(),
                claim_template: String::new(),
                completed_template: String::new(),
                remind_template: String::new(),
            },
            state: RawState {
                dir: format!("$XDG_STATE_HOME/reveille/{name}"),
                sync_interval_ms: 100,
                compact_bytes: 1024 * 1024,
            },
            log: RawLog {
                target: "auto".into(),
                level: "info".into(),
            },
            fanout: RawFanout {
                max_children: 0,
                max_total: 8,
                keep_children: false,
                backend: String::new(),
                model: String::new(),
            },
            codex: RawCodex {
                home: "~/.codex".into(),
                endpoint: String::new(),
                token_file: String::new(),
                ca_file: String::new(),
            },
            claude: RawClaude {
                config_dir: "~/.claude".into(),
            },
            opencode: RawOpencode {
                url: "http://127.0.0.1:4096".into(),
                username: "opencode".into(),
                password_file: String::new(),
                ca_file: String::new(),
            },
            notify: RawNotify {
                command: Vec::new(),
                desktop: "auto".into(),
                stuck_after_ms: 0,
            },
        }
    }
}
