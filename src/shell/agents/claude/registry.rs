//! Claude Code's registry of running sessions: `<config>/sessions/<pid>.json`,
//! one file per running process, rewritten by it on every change of its
//! status (and removed when it exits cleanly), and its inbox token in
//! `<pid>.<sha256 of the socket path>.key`.
//!
//! An entry outlives a killed process, and after `claude --resume` two
//! entries name the same session: only an entry whose process is alive —
//! same pid, same start time (`procStart` is field 22 of
//! `/proc/<pid>/stat`), same boot and pid namespace (`pidDomain`) — is the
//! session's owner.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::core::session::{AgentState, Wait};

/// One registry entry, the fields reveille uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub pid: u32,
    pub session_id: String,
    pub cwd: PathBuf,
    /// Unix milliseconds.
    #[serde(default)]
    pub started_at: u64,
    #[serde(default)]
    pub proc_start: Option<String>,
    #[serde(default)]
    pub pid_domain: Option<String>,
    /// `idle`, `busy`, `waiting` — absent for the first moment after start.
    #[serde(default)]
    pub status: Option<String>,
    /// With `waiting`: what for (`permission prompt`, `input needed`, …).
    #[serde(default)]
    pub waiting_for: Option<String>,
    /// Absent when the session's inbox is off.
    #[serde(default)]
    pub messaging_socket_path: Option<PathBuf>,
}

/// What a `waitingFor` asks of the person. A permission prompt (and the
/// other requests to allow something: `sandbox request`, `worker
/// request`) is an approval — the registry does not say of which command;
/// `input needed` (AskUserQuestion) is a question; anything else (`dialog
/// open`, `goal proposal`, a word of a later version) is shown as said.
pub fn wait_of(waiting_for: &str) -> Wait {
    match waiting_for {
        "permission prompt" | "sandbox request" | "worker request" => Wait::approval(""),
        "input needed" => Wait::question(""),
        other => Wait::question(other),
    }
}

impl Entry {
    /// What the session does, in Claude Code's own words: `idle`, `busy`,
    /// or `waiting` for a person (a permission prompt, a question, a
    /// dialog holds the turn): see [`wait_of`].
    pub fn state(&self) -> Option<AgentState> {
        match (self.status.as_deref()?, self.waiting_for.as_deref()) {
            ("waiting", what) => Some(AgentState::Waiting(wait_of(what.unwrap_or("")))),
            (status, _) => AgentState::parse(status),
        }
    }

    /// Whether this entry's process is the one running now.
    pub fn is_alive(&self, host: &Host) -> bool {
        if let (Some(theirs), Some(ours)) = (&self.pid_domain, &host.pid_domain) {
            if theirs != ours {
                return false;
            }
        }
        match (&self.proc_start, proc_start(self.pid)) {
            (Some(recorded), Some(now)) => *recorded == now,
            (None, Some(_)) => true,
            (_, None) => false,
        }
    }
}

/// This machine's `pidDomain` as Claude Code writes it:
/// `linux:<machine id>:pid:[<pid namespace inode>]`.
#[derive(Debug, Clone, Default)]
pub struct Host {
    pub pid_domain: Option<String>,
}

impl Host {
    pub fn here() -> Host {
        let machine = std::fs::read_to_string("/etc/machine-id")
            .or_else(|_| std::fs::read_to_string("/var/lib/dbus/machine-id"))
            .ok();
        let ns = std::fs::read_link("/proc/self/ns/pid").ok();
        let pid_domain = machine
            .zip(ns)
            .map(|(m, ns)| format!("linux:{}:{}", m.trim(), ns.display()));
        Host { pid_domain }
    }
}

/// Field 22 of `/proc/<pid>/stat`, the process's start time; `None` when
/// there is no such process.
fn proc_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, field 2, may hold spaces and parentheses: count
    // from the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

/// Every readable entry of the registry directory `dir`, in pid order.
/// A missing directory is an empty registry; an entry torn mid-write is
/// skipped (its next write brings it back).
pub fn read(dir: &Path) -> std::io::Result<Vec<Entry>> {
    let listing = match std::fs::read_dir(dir) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut entries: Vec<Entry> = listing
        .flatten()
        .filter(|f| is_entry_name(&f.file_name().to_string_lossy()))
        .filter_map(|f| serde_json::from_slice(&std::fs::read(f.path()).ok()?).ok())
        .collect();
    entries.sort_by_key(|e| e.pid);
    Ok(entries)
}

/// `<digits>.json`, the only names Claude Code reads as entries.
fn is_entry_name(name: &str) -> bool {
    name.strip_suffix(".json")
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The live owner of each session: the entry whose process runs, the
/// latest started where two claim one session.
pub fn owners(entries: Vec<Entry>, host: &Host) -> BTreeMap<String, Entry> {
    let mut owners: BTreeMap<String, Entry> = BTreeMap::new();
    for e in entries.into_iter().filter(|e| e.is_alive(host)) {
        match owners.get(&e.session_id) {
            Some(have) if have.started_at >= e.started_at => {}
            _ => {
                owners.insert(e.session_id.clone(), e);
            }
        }
    }
    owners
}

/// The inbox token of `entry`'s process: `peerToken` of its key file, the
/// one written by that very process (same `procStart`).
pub fn token(dir: &Path, entry: &Entry) -> Result<String, String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Key {
        peer_token: String,
        #[serde(default)]
        proc_start: Option<String>,
    }
    let prefix = format!("{}.", entry.pid);
    let listing =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    listing
        .flatten()
        .filter(|f| {
            let name = f.file_name().to_string_lossy().into_owned();
            name.starts_with(&prefix) && name.ends_with(".key")
        })
        .filter_map(|f| serde_json::from_slice::<Key>(&std::fs::read(f.path()).ok()?).ok())
        .find(|k| k.proc_start.is_none() || k.proc_start == entry.proc_start)
        .map(|k| k.peer_token)
        .ok_or_else(|| {
            format!(
                "no inbox key for pid {} in {} (its messaging inbox is not published)",
                entry.pid,
                dir.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(json: &str) -> Entry {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn states_are_claude_codes_own_words() {
        let base = r#""pid":1,"sessionId":"s","cwd":"/w""#;
        let e = |rest: &str| entry(&format!("{{{base}{rest}}}")).state();
        assert_eq!(e(r#","status":"idle""#), Some(AgentState::Idle));
        assert_eq!(
            e(r#","status":"busy""#),
            Some(AgentState::Busy("busy".into()))
        );
        assert_eq!(
            e(r#","status":"waiting","waitingFor":"permission prompt""#),
            Some(AgentState::Waiting(Wait::approval("")))
        );
        assert_eq!(
            e(r#","status":"waiting","waitingFor":"input needed""#),
            Some(AgentState::Waiting(Wait::question("")))
        );
        assert_eq!(e(""), None);
    }

    #[test]
    fn only_a_running_process_owns_a_session_and_the_latest_wins() {
        let me = std::process::id();
        let start = proc_start(me).unwrap();
        let host = Host::here();
        let domain = host.pid_domain.clone().unwrap();
        let live = |at: u64| Entry {
            pid: me,
            session_id: "s".into(),
            cwd: "/w".into(),
            started_at: at,
            proc_start: Some(start.clone()),
            pid_domain: Some(domain.clone()),
            status: Some("idle".into()),
            waiting_for: None,
            messaging_socket_path: None,
        };
        // A recycled pid (another start time), another machine's entry.
        let recycled = Entry {
            proc_start: Some("1".into()),
            started_at: 9,
            ..live(0)
        };
        let foreign = Entry {
            pid_domain: Some("linux:0:pid:[1]".into()),
            started_at: 9,
            ..live(0)
        };
        assert!(live(0).is_alive(&host));
        assert!(!recycled.is_alive(&host));
        assert!(!foreign.is_alive(&host));
        let owners = owners(vec![live(1), recycled, foreign, live(2)], &host);
        assert_eq!(owners["s"].started_at, 2);
    }

    #[test]
    fn the_registry_reads_entries_only_and_skips_torn_ones() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("12.json", r#"{"pid":12,"sessionId":"a","cwd":"/w"}"#);
        write("13.json", r#"{"pid":13,"sessionId":"b""#);
        write("x.json", r#"{"pid":14,"sessionId":"c","cwd":"/w"}"#);
        write("12.0123.key", r#"{"peerToken":"t12"}"#);
        let entries = read(dir.path()).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].session_id, "a");
        assert_eq!(token(dir.path(), &entries[0]).unwrap(), "t12");
        assert!(read(&dir.path().join("missing")).unwrap().is_empty());
    }
}
