//! Each agent kind woken by reveille running as users run it: the shipped
//! `systemd/reveille@.service`, unchanged, enabled as `reveille@proj` in a
//! real `systemd --user` manager (`util::systemd`, as the `nobody` user),
//! the real agent program started beside it, offline against the fake
//! model. A three-step plan in `~/pl` runs to its end by the agent ticking
//! each step with its own shell tool; each step reaches the model once;
//! the journal (the unit's own entries) says each was announced.
//!
//! - `opencode`: a real `opencode serve` on 127.0.0.1 (`[opencode] url`);
//! - `codex`: a real `codex app-server --listen ws://127.0.0.1:P`
//!   (`[codex] endpoint`);
//! - `claude`: a real Claude Code TUI run by the manager's user (the
//!   registry and messaging socket are that user's, as for a person).
//!
//! The agent program is started before the manager: both are exclusive
//! (one agent program at a time in this process, one manager on the
//! machine), always taken in that order.

mod claude;
mod codex;
mod opencode;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::util::plans::{plan_text, Step};
use crate::util::reveille_unit::{install_reveille, status_json, write_config, UNIT};
use crate::util::systemd::SystemdUser;
use crate::util::{try_wait_until, wait_until};

/// reveille@proj enabled and started in a real user manager.
pub struct Deployed {
    pub sd: SystemdUser,
}

impl Deployed {
    /// Installs the shipped unit and the daemon, writes the project's
    /// configuration (`default_session`, and `sections` such as `[opencode]
    /// url = …`), and `enable --now`s it as the README says. `None` (after
    /// the manager's `SKIPPED` line) where no manager can run.
    pub fn start(default_session: &str, sections: &str) -> Option<Deployed> {
        let sd = SystemdUser::start()?;
        install_reveille(&sd);
        write_config(&sd, default_session, "", sections);
        sd.make_home_dir("pl");
        sd.systemctl_ok(&["enable", "--now", "reveille@proj"]);
        Some(Deployed { sd })
    }

    /// A plan of `steps` in `~/pl`, as the planning tool writes it.
    pub fn plan(&self, uid: &str, goal: &str, steps: &[Step]) -> PathBuf {
        let name = format!("pl/20260101T000000_{uid}--plan__todo.md");
        self.sd
            .write_home_file(&name, &plan_text(goal, steps, ""), 0o644)
    }

    /// The messages of the unit's journal entries, oldest first.
    pub fn said(&self) -> Vec<String> {
        self.sd
            .journal_json(UNIT)
            .iter()
            .filter_map(|e| e.get("MESSAGE").and_then(Value::as_str))
            .map(str::to_owned)
            .collect()
    }

    /// Waits until the unit's journal has a message holding every one of
    /// `words`; the failure shows what it said.
    pub fn wait_said(&self, words: &[&str], timeout: Duration) -> String {
        let found = try_wait_until(timeout, || {
            self.said()
                .into_iter()
                .find(|m| words.iter().all(|w| m.contains(w)))
        });
        found.unwrap_or_else(|| {
            panic!(
                "the journal never said {words:?} within {timeout:?}; it said:\n{}",
                self.said().join("\n")
            )
        })
    }

    /// `session`'s entry in `reveille status --json`, run as the user.
    pub fn session_status(&self, session: &str) -> Value {
        let status = status_json(&self.sd);
        status["sessions"]
            .as_array()
            .and_then(|l| l.iter().find(|s| s["id"] == session).cloned())
            .unwrap_or_default()
    }

    /// Waits until `status` shows `session` in `state`.
    pub fn wait_state(&self, session: &str, state: &str, timeout: Duration) {
        wait_until(
            &format!("status to show {session} {state}"),
            timeout,
            || (self.session_status(session)["state"] == state).then_some(()),
        );
    }

    /// Waits until `status` shows `step` as the last prompt `session` was
    /// given (the views are written a moment after an outcome comes back:
    /// on a loaded machine, after the agent may have ticked the step).
    pub fn wait_last_delivery(&self, session: &str, step: &str, timeout: Duration) {
        let mut last = Value::Null;
        let shown = crate::util::try_wait_until(timeout, || {
            last = self.session_status(session);
            (last["last_delivery"]["step"] == step).then_some(())
        });
        assert!(
            shown.is_some(),
            "status never showed {step} as {session}'s last delivery: {last}\n{}",
            self.said().join("\n")
        );
    }

    /// The unit is still the one process it started as, running.
    pub fn still_running(&self) {
        assert_eq!(self.sd.property(UNIT, "ActiveState"), "active");
        assert_eq!(self.sd.property(UNIT, "NRestarts"), "0");
    }
}

/// Waits until `plan` has every one of `titles` ticked (`- [x] <title>`);
/// the failure shows the plan and `explain()`.
pub fn wait_ticked(
    plan: &std::path::Path,
    titles: &[&str],
    timeout: Duration,
    explain: impl Fn() -> String,
) {
    let ticked = try_wait_until(timeout, || {
        let text = std::fs::read_to_string(plan).ok()?;
        titles
            .iter()
            .all(|t| text.lines().any(|l| l.trim() == format!("- [x] {t}")))
            .then_some(())
    });
    if ticked.is_none() {
        panic!(
            "timed out after {timeout:?} waiting for the agent to tick {titles:?}; the plan:\n{}\n{}",
            std::fs::read_to_string(plan).unwrap_or_default(),
            explain()
        );
    }
}

/// What the default step prompt says of the step titled `title`.
pub fn ready_line(title: &str) -> String {
    format!("is ready: {title}\n")
}
