//! `sessions.json` in the state directory: every session the daemon knows
//! of — its kind, its state and since when, what it was last told and how
//! that went — written by the daemon (wall-clock times, whole and
//! atomically, only when it changed) for `reveille status`; never read
//! back by the daemon.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::core::engine::observed::{Absent, Observed};
use crate::core::engine::{Now, Outcome, Told};
use crate::core::session::Kind;

/// The file's name in the state directory.
pub const FILE: &str = "sessions.json";

/// One session as the daemon last saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionFile {
    /// `dir` (a pipe, a file or an ollie-9p session), `codex`, `claude`,
    /// `opencode`.
    pub kind: String,
    /// `idle`, `thinking`, `calling: <tool>`, `busy`, …; absent when it has
    /// no observable state (a named pipe) or is gone.
    pub state: Option<String>,
    /// Since when it is in that state (unix ms).
    pub since: Option<u64>,
    /// What it waits for a person for, when it does: `approval`,
    /// `question` (its `state` says what is asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    /// Why it has no state: `unreachable: <why>` (its program, with the
    /// address and the error) or `gone: <why>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<String>,
    /// The last prompt it was given, and how that went.
    pub told: Option<ToldFile>,
    /// The seq of the prompt being written to it: sent, whether it was
    /// taken not known yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writing: Option<u64>,
}

/// What a session was last told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToldFile {
    /// The step or task id.
    pub step: String,
    /// `written`, `accepted`, `in_inbox`, `turn_started`,
    /// `not_seen_starting`, or `refused: <why>`.
    pub outcome: String,
    /// When (unix ms).
    pub at: u64,
}

/// An outcome in words, as the file and `status` show it.
pub fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Written => "written".into(),
        Outcome::Accepted => "accepted".into(),
        Outcome::InInbox => "in_inbox".into(),
        Outcome::TurnStarted => "turn_started".into(),
        Outcome::NotSeenStarting => "not_seen_starting".into(),
        Outcome::Refused(why) => format!("refused: {why}"),
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Engine time `at` in wall-clock unix ms, given that engine time `now` is
/// wall-clock `wall`.
pub fn wall_ms(at: Now, now: Now, wall: SystemTime) -> u64 {
    let t = if at <= now {
        wall - (now - at)
    } else {
        wall + (at - now)
    };
    unix_ms(t)
}

/// The file's content from what the engine knows.
pub fn sessions(
    observed: &BTreeMap<String, Observed>,
    absent: &BTreeMap<String, Absent>,
    (told, in_flight): (&BTreeMap<String, Told>, &BTreeMap<String, u64>),
    (now, wall): (Now, SystemTime),
) -> BTreeMap<String, SessionFile> {
    let ids: BTreeSet<&String> = observed
        .keys()
        .chain(told.keys())
        .chain(absent.keys())
        .chain(in_flight.keys())
        .collect();
    ids.into_iter()
        .map(|id| {
            let o = observed.get(id);
            let file = SessionFile {
                kind: Kind::of(id).0.name().to_string(),
                state: o.map(|o| o.state.as_str().to_string()),
                since: o.map(|o| wall_ms(o.since, now, wall)),
                waiting: o
                    .and_then(|o| o.state.waiting())
                    .map(|w| w.on.name().to_string()),
                absent: absent.get(id).map(absent_text),
                told: told.get(id).map(|t| ToldFile {
                    step: t.step.clone(),
                    outcome: outcome_text(&t.outcome),
                    at: wall_ms(t.at, now, wall),
                }),
                writing: in_flight.get(id).copied(),
            };
            (id.clone(), file)
        })
        .collect()
}

/// Why a session has no state, in words.
pub fn absent_text(a: &Absent) -> String {
    let what = if a.unreachable { "unreachable" } else { "gone" };
    format!("{what}: {}", a.why)
}

/// Write the file if its content differs from what was last written.
pub fn write(dir: &Path, sessions: &BTreeMap<String, SessionFile>, last: &mut Vec<u8>) {
    let Ok(text) = serde_json::to_vec_pretty(sessions) else {
        return;
    };
    if text == *last {
        return;
    }
    let path = dir.join(FILE);
    let tmp = dir.join(format!("{FILE}.tmp"));
    if std::fs::write(&tmp, &text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .is_ok()
    {
        *last = text;
    } else {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// What the daemon last wrote (empty when it never did).
pub fn read(dir: &Path) -> BTreeMap<String, SessionFile> {
    std::fs::read(dir.join(FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}
