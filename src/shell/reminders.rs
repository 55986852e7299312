//! `reminders.json` in the state directory: every open announced step or
//! task, when it was announced, its session's state and since when, the
//! reminders sent and the next one due — written by the daemon (wall-clock
//! times, whole and atomically, only when it changed) for `reveille
//! status`, never read back by the daemon: the durable reminder counts
//! live in the journal, this is a view for people.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::core::engine::observed::Observed;
use crate::core::engine::{human, Now, ReminderView};
use crate::shell::session_view::wall_ms;

/// The file's name in the state directory.
pub const FILE: &str = "reminders.json";

/// One open announced item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenItem {
    pub session: String,
    pub source: String,
    pub id: String,
    pub title: String,
    /// When its prompt was first delivered in this daemon's run (unix ms);
    /// absent when that was before a restart, or it is not delivered yet.
    pub announced_ms: Option<u64>,
    /// The session's state (`idle`, `thinking`, …); absent when it has no
    /// observable state (a named pipe) or is not listed.
    pub state: Option<String>,
    /// Since when it is in that state (unix ms).
    pub state_since_ms: Option<u64>,
    pub reminders_sent: u32,
    pub reminders_max: u32,
    /// When the next reminder is due (unix ms); absent when none will be as
    /// things stand (busy, no observable state, capped, disabled).
    pub next_due_ms: Option<u64>,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The views in wall-clock time: engine time `at` is `now − at` ago.
pub fn items(
    views: Vec<ReminderView>,
    now: Now,
    wall: SystemTime,
    observed: &std::collections::BTreeMap<String, Observed>,
) -> Vec<OpenItem> {
    let at = |t: Now| wall_ms(t, now, wall);
    views
        .into_iter()
        .map(|v| {
            let o = observed.get(&v.session);
            OpenItem {
                source: v.source.to_string(),
                id: v.id,
                title: v.title,
                announced_ms: v.heard_at.map(at),
                state: o.map(|o| o.state.as_str().to_string()),
                state_since_ms: o.map(|o| at(o.since)),
                reminders_sent: v.sent,
                reminders_max: v.max,
                next_due_ms: v.next_at.map(at),
                session: v.session,
            }
        })
        .collect()
}

/// Write the file if `text` differs from what was last written.
pub fn write(dir: &Path, items: &[OpenItem], last: &mut Vec<u8>) {
    let Ok(text) = serde_json::to_vec_pretty(items) else {
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
pub fn read(dir: &Path) -> Vec<OpenItem> {
    std::fs::read(dir.join(FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// `s1 "title" (plan:…) to agent: announced 2m 5s ago; idle for 1m 3s;
/// reminders 1/3, next in 58s`.
pub fn line(item: &OpenItem, now: SystemTime) -> String {
    let now = unix_ms(now);
    let ago = |ms: u64| human(Duration::from_millis(now.saturating_sub(ms)));
    let announced = match item.announced_ms {
        Some(ms) => format!("announced {} ago", ago(ms)),
        None => "delivered before the daemon's last start".to_string(),
    };
    let state = match (&item.state, item.state_since_ms) {
        (Some(s), Some(ms)) => format!("{s} for {}", ago(ms)),
        _ => "state not observable".to_string(),
    };
    let next = match item.next_due_ms {
        Some(ms) if ms > now => format!("next in {}", human(Duration::from_millis(ms - now))),
        Some(_) => "next due now".to_string(),
        None => "no reminder due".to_string(),
    };
    format!(
        "{} {:?} ({}) to {}: {announced}; {state}; reminders {}/{}, {next}",
        item.id, item.title, item.source, item.session, item.reminders_sent, item.reminders_max
    )
}
