//! The one-line summary systemd shows as `Status:` (`STATUS=`), sent when
//! it changes, and with `READY=1` (so also after every reload: a refused
//! one stays in it until a reload succeeds).

use crate::shell::watch::RootMode;

use super::Daemon;

/// `1 plan`, `2 plans`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
impl Daemon {
    /// The one-line summary for `STATUS=`.
    pub(super) fn summary(&self) -> String {
        let mem = self.engine.memory();
        let mut s = format!(
            "{}, {} pending",
            count(self.engine.plan_count(), "plan"),
            count(mem.pending_total(), "prompt")
        );
        let invalid = self.engine.invalid_plans();
        if invalid > 0 {
            s.push_str(&format!(", {invalid} invalid"));
        }
        let failing = self.engine.failing_count();
        if failing > 0 {
            s.push_str(&format!(", {} unreachable", count(failing, "session")));
        }
        for (path, mode) in self.watching.watch.modes() {
            match mode {
                RootMode::Polled(why) => {
                    s.push_str(&format!("; polling {} ({why})", path.display()))
                }
                // A tracker never configured is no news (said once at start).
                RootMode::Missing(_) if self.settings.events.is_unchosen_log(&path) => {}
                RootMode::Missing(_) => s.push_str(&format!("; waiting for {}", path.display())),
                RootMode::NotADirectory(_) => {
                    s.push_str(&format!("; {} is not a directory", path.display()))
                }
                RootMode::BeneathNonDirectory { blocker, .. } => s.push_str(&format!(
                    "; {} cannot appear ({} is not a directory)",
                    path.display(),
                    blocker.display()
                )),
                RootMode::Inotify => {}
            }
        }
        if self.journal.failing {
            s.push_str("; STATE NOT PERSISTED");
        }
        // Until a reload succeeds: what runs is not what the file says.
        if let Some(refused) = &self.service.reloads.refused {
            s.push_str("; ");
            s.push_str(refused);
        }
        s
    }

    /// `READY=1` with the current `STATUS=` in the same datagram, so the
    /// status is in place when `systemctl start`/`reload` returns.
    pub(super) fn ready(&mut self) {
        let s = self.summary();
        self.service.notifier.ready_with_status(&s);
        self.service.status = s;
    }

    /// Send `STATUS=` when the summary changed. What it is made of is
    /// compared first (a handful of counters), so the string is only built
    /// when it may differ — this runs on every loop turn, the wake path too.
    pub(super) fn update_status(&mut self) {
        if !self.service.notifier.is_enabled() {
            return;
        }
        let key = [
            self.engine.plan_count(),
            self.engine.memory().pending_total(),
            self.engine.invalid_plans(),
            self.engine.failing_count(),
            self.watching.watch.generation(),
            usize::from(self.journal.failing),
        ];
        if key == self.service.status_key {
            return;
        }
        self.service.status_key = key;
        let s = self.summary();
        if s != self.service.status {
            self.service.notifier.status(&s);
            self.service.status = s;
        }
    }
}
