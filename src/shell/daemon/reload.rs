//! SIGHUP: the configuration read again and applied in the same process,
//! or refused with the running one kept.

use crate::config::{engine_config, Settings};
use crate::shell::checklists::{self, Claim};
use crate::shell::logging;
use crate::shell::tail::Tail;
use crate::shell::watch::{Watch, WatchEvents};

use super::life::{add_roots, dir_backend};
use super::Daemon;

impl Daemon {
    /// Session checklists of reloaded settings: kept if this instance owns
    /// those of the same directory, else claimed again (the owner may have
    /// stopped since).
    pub(super) fn claim_checklists(&mut self, mut new: Settings) -> Settings {
        let owned = matches!(self.checklists, Some(Claim::Owned(_)));
        if new.sessions.session_plans && !(owned && new.sessions.dir == self.settings.sessions.dir)
        {
            self.checklists = checklists::apply(&mut new);
        }
        new
    }

    /// SIGHUP: re-read the configuration; keep the old one if the new one
    /// is invalid. Returns the new watcher's events when the roots moved.
    pub(super) fn reload(
        &mut self,
        load: &dyn Fn() -> Result<Settings, String>,
    ) -> Option<WatchEvents> {
        self.notifier.reloading();
        let mut replaced = None;
        let project = self.settings.project.name.clone();
        match load().map(|s| self.claim_checklists(s)) {
            Err(e) => {
                tracing::error!(project = %project, "reload failed, keeping the running configuration: {e}");
            }
            Ok(new) if new == self.settings => {
                tracing::info!(project = %project, "reload: configuration unchanged");
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
                            self.watch = watch;
                            add_roots(&mut self.watch, &new);
                            self.watch.poll();
                            for (path, mode) in self.watch.take_changes() {
                                self.log_mode(&path, &mode);
                            }
                            replaced = Some(events);
                        }
                        Err(e) => {
                            tracing::error!(project = %project, "reload: cannot watch the new roots, keeping the old configuration: {e}");
                            self.ready();
                            return None;
                        }
                    }
                }
                // A fresh backend: its held sessions root is opened again.
                let dir = dir_backend(&new, &self.backends.reports);
                self.backends.reconfigure(dir, &new);
                if new.sessions.dir != self.settings.sessions.dir {
                    self.tree = None;
                }
                if new.events.path != self.settings.events.path {
                    self.tail = new.events.path.as_ref().map(|p| Tail::new(p, None));
                }
                self.engine
                    .reconfigure(engine_config(&new, logging::engine_level()));
                self.settings = new;
                tracing::info!(project = %project, "configuration reloaded");
                self.rescan();
            }
        }
        self.ready();
        replaced
    }
}
