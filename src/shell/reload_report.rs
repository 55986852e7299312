//! `reload.json` in the state directory: the running daemon's answer to
//! each SIGHUP — reloaded, unchanged, or refused and why — so that
//! `reveille reload` (the unit's `ExecReload=`) can wait for the answer
//! and report a refusal with its reason and a non-zero exit, and `status`
//! can say that the configuration running is the previous one.
//!
//! Written whole (a temporary file renamed over it) at the start and after
//! every reload; `seq` counts the reloads of the process `pid`, so an
//! answer is never mistaken for one of an earlier daemon.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file's name in the state directory.
pub const FILE: &str = "reload.json";

/// Why a reload was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The configuration has errors (each with its file and line).
    Configuration,
    /// The new roots could not be watched.
    Watch,
}

/// What the daemon did with the last SIGHUP (or its start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// No reload yet: the configuration it started with.
    Started,
    /// The new configuration is running.
    Reloaded,
    /// The configuration read was the one running.
    Unchanged,
    /// The new configuration was refused; the previous one still runs.
    Refused { cause: Cause, error: String },
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The daemon that answered.
    pub pid: u32,
    /// Reloads this process has answered (0: none, only its start).
    pub seq: u64,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// When (unix milliseconds).
    pub at_unix_ms: u64,
}

impl Report {
    /// Whether the configuration running is not the one last asked for.
    pub fn refused(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Refused { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Write `report` into `dir`, replacing the last one whole.
pub fn write(dir: &Path, report: &Report) -> io::Result<()> {
    let text = serde_json::to_vec(report).map_err(io::Error::other)?;
    let tmp = dir.join(format!("{FILE}.tmp"));
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, dir.join(FILE)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The last report in `dir`, if there is a readable one.
pub fn read(dir: &Path) -> Option<Report> {
    let bytes = std::fs::read(dir.join(FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_survives_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), None);
        let report = Report {
            pid: 7,
            seq: 2,
            outcome: Outcome::Refused {
                cause: Cause::Configuration,
                error: "project.colour: unknown key".into(),
            },
            at_unix_ms: 1,
        };
        write(dir.path(), &report).unwrap();
        assert_eq!(read(dir.path()), Some(report.clone()));
        assert_eq!(report.refused(), Some("project.colour: unknown key"));
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert!(text.contains("\"outcome\":\"refused\""), "{text}");
        assert!(!dir.path().join("reload.json.tmp").exists());
    }
}
