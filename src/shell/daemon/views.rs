//! The views `reveille status` reads while the daemon runs —
//! `sessions.json` (every session's kind, state and last delivery) and
//! `reminders.json` (open items and their reminders) — written from the
//! engine, whatever kind the sessions are, at most once per
//! `VIEWS_DELAY` after something they show changed, so a burst of
//! wake-ups costs one write.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::core::input::Input;
use crate::core::session::Kind;
use crate::shell::{reminders, session_view};

use super::Daemon;

/// How long after a change the views are written.
pub(super) const VIEWS_DELAY: Duration = Duration::from_millis(200);

/// Whether `input` can change what the views show.
pub(super) fn shows(input: &Input) -> bool {
    matches!(
        input,
        Input::Observed(_)
            | Input::Delivered { .. }
            | Input::Evidence { .. }
            | Input::TurnStarted { .. }
            | Input::Undeliverable { .. }
            | Input::ChildSpawned { .. }
            | Input::Tick
    )
}

impl Daemon {
    /// Something the views show may have changed: write them soon.
    pub(super) fn views_changed(&mut self) {
        if self.views_at.is_none() {
            self.views_at = Some(Instant::now() + VIEWS_DELAY);
        }
    }

    /// Write both views (each only if its content changed).
    pub(super) fn write_views(&mut self) {
        self.views_at = None;
        let (now, wall) = (self.now(), SystemTime::now());
        let told = self.engine.told();
        let mut sessions = session_view::sessions(
            self.engine.sessions(),
            self.engine.absent(),
            &told,
            (now, wall),
        );
        // An agent program's backend may follow every session of that
        // program (Claude Code's registry holds every running one): this
        // project's view lists those it names (the default session, the
        // assignees'), told something or has work for.
        let mut ours = self.engine.sessions_with_work();
        ours.extend(self.settings.project.default_session.clone());
        ours.extend(self.settings.events.assignees.values().cloned());
        sessions.retain(|id, _| {
            Kind::of(id).0 == Kind::Dir || told.contains_key(id) || ours.contains(id)
        });
        session_view::write(self.store.dir(), &sessions, &mut self.sessions_written);
        let items = reminders::items(self.engine.reminders(), now, wall, self.engine.sessions());
        reminders::write(self.store.dir(), &items, &mut self.reminders_written);
    }
}
