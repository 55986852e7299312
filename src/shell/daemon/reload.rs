//! SIGHUP: the configuration read again and applied in the same process,
//! or refused with the running one kept — and the answer told: in the
//! journal, in `reload.json` (which `reveille reload` waits for) and in
//! `STATUS=` until a reload succeeds.

use crate::config::{engine_config, ConfigErrors, Settings};
use crate::shell::checklists::{self, Claim};
use crate::shell::logging;
use crate::shell::reload_report::{self, Cause, Outcome, Report};
use crate::shell::tail::Tail;
use crate::shell::watch::{Watch, WatchEvents};

use super::watching::add_roots;
use super::Daemon;

/// The reloads this process answered, and whether the configuration
/// running is the previous one because the last was refused.
#[derive(Debug, Default)]
pub(super) struct Reloads {
    /// SIGHUPs answered so far.
    seq: u64,
    /// The refusal, as `STATUS=` says it, until a reload succeeds.
    pub(super) refused: Option<String>,
    /// Whether writing `reload.json` failed (said once).
    write_failing: bool,
}

/// A refusal in one short phrase for `STATUS=`: the first problem, and
/// how many more there are.
fn refusal_line(first: &str, more: usize) -> String {
    let more = match more {
        0 => String::new(),
        n => format!(" (and {n} more)"),
    };
    format!("reload refused, running the previous configuration: {first}{more}")
}

impl Daemon {
    /// Session checklists of reloaded settings: kept if this instance owns
    /// those of the same directory, else claimed again (the owner may have
    /// stopped since).
    pub(super) fn claim_checklists(&mut self, mut new: Settings) -> Settings {
        let owned = matches!(self.agents.checklists, Some(Claim::Owned(_)));
        if new.sessions.session_plans && !(owned && new.sessions.dir == self.settings.sessions.dir)
        {
            self.agents.checklists = checklists::apply(&mut new);
        }
        new
    }

    /// SIGHUP: re-read the configuration; keep the old one if the new one
    /// is invalid. Returns the new watcher's events when the roots moved.
    pub(super) fn reload(
        &mut self,
        load: &dyn Fn() -> Result<Settings, ConfigErrors>,
    ) -> Option<WatchEvents> {
        self.service.notifier.reloading();
        let mut replaced = None;
        let project = self.settings.project.name.clone();
        match load().map(|s| self.claim_checklists(s)) {
            Err(e) => {
                tracing::error!(project = %project, "reload failed, keeping the running configuration: {e}");
                let first = e.0.first().map(ToString::to_string).unwrap_or_default();
                self.service.reloads.refused =
                    Some(refusal_line(&first, e.0.len().saturating_sub(1)));
                let outcome = Outcome::Refused {
                    cause: Cause::Configuration,
                    error: e.to_string(),
                };
                self.answer_reload(outcome);
            }
            Ok(new) if new == self.settings => {
                tracing::info!(project = %project, "reload: configuration unchanged");
                self.answer_reload(Outcome::Unchanged);
            }
            Ok(new) => {
                if new.state.dir != self.settings.state.dir {
                    tracing::warn!(project = %project, "reload: state.dir changed; it takes effect at the next restart");
                }
                if new.log != self.settings.log {
                    tracing::warn!(project = %project, "reload: [log] changed; it takes effect at the next restart");
                }
                let roots_changed = new.project.plan_dir != self.settings.project.plan_dir
                    || new.sessions.dir != self.settings.sessions.dir
                    || new.events.path != self.settings.events.path
                    || new.beads.issues_jsonl != self.settings.beads.issues_jsonl
                    || new.sessions.enqueue != self.settings.sessions.enqueue
                    || new.sessions.session_plans != self.settings.sessions.session_plans;
                if roots_changed {
                    let fresh = Watch::new(&new.sessions.enqueue, new.sessions.session_plans)
                        .and_then(|w| w.events().map(|e| (w, e)));
                    match fresh {
                        Ok((watch, events)) => {
                            self.watching.watch = watch;
                            add_roots(&mut self.watching.watch, &new);
                            self.watching.watch.poll();
                            for (path, mode) in self.watching.watch.take_changes() {
                                self.log_mode(&path, &mode);
                            }
                            replaced = Some(events);
                        }
                        Err(e) => {
                            tracing::error!(project = %project, "reload: cannot watch the new roots, keeping the old configuration: {e}");
                            let error = format!("cannot watch the new roots: {e}");
                            self.service.reloads.refused = Some(refusal_line(&error, 0));
                            let cause = Cause::Watch;
                            self.answer_reload(Outcome::Refused { cause, error });
                            self.ready();
                            return None;
                        }
                    }
                }
                // A backend whose section changed is made again (a
                // directory session's: its held sessions root opened again).
                self.agents.backends.reconfigure(&new);
                if new.events.path != self.settings.events.path {
                    self.tracker.tail = new.events.path.as_ref().map(|p| Tail::new(p, None));
                }
                self.engine
                    .reconfigure(engine_config(&new, logging::engine_level()));
                self.settings = new;
                self.follow_tree();
                tracing::info!(project = %project, "configuration reloaded");
                self.answer_reload(Outcome::Reloaded);
                self.rescan();
            }
        }
        self.ready();
        replaced
    }

    /// Tell what became of the last SIGHUP (or of the start: `Started`):
    /// `reload.json` for `reveille reload`, and — through `refused`, which
    /// a good reload clears — `STATUS=`.
    pub(super) fn answer_reload(&mut self, outcome: Outcome) {
        if outcome != Outcome::Started {
            self.service.reloads.seq += 1;
        }
        if !matches!(outcome, Outcome::Refused { .. }) {
            self.service.reloads.refused = None;
        }
        let report = Report {
            pid: std::process::id(),
            seq: self.service.reloads.seq,
            outcome,
            at_unix_ms: crate::shell::wall::unix_ms(),
        };
        match reload_report::write(self.journal.store.dir(), &report) {
            Ok(()) => self.service.reloads.write_failing = false,
            Err(e) if !self.service.reloads.write_failing => {
                self.service.reloads.write_failing = true;
                tracing::warn!(project = %self.settings.project.name, file = %self.journal.store.dir().join(reload_report::FILE).display(), "cannot write {}: {e}; `reveille reload` cannot see this daemon's answers", reload_report::FILE);
            }
            Err(_) => {}
        }
    }
}
