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
use crate::shell::{agents, reminders, session_view};

use super::Daemon;

/// How long after a change the views are written.
pub(super) const VIEWS_DELAY: Duration = Duration::from_millis(200);

/// The views as last written, and when they are next.
#[derive(Default)]
pub(super) struct Views {
    /// What `reminders.json` last held, so it is written only on change.
    pub(super) reminders_written: Vec<u8>,
    /// What `sessions.json` last held, likewise.
    pub(super) sessions_written: Vec<u8>,
    /// When they are next written.
    pub(super) at: Option<Instant>,
}

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
        if self.views.at.is_none() {
            self.views.at = Some(Instant::now() + VIEWS_DELAY);
        }
    }

    /// Write both views (each only if its content changed).
    pub(super) fn write_views(&mut self) {
        self.views.at = None;
        let (now, wall) = (self.now(), SystemTime::now());
        let told = self.engine.told();
        let in_flight = self.engine.in_flight();
        let mut sessions = session_view::sessions(
            self.engine.sessions(),
            self.engine.absent(),
            (&told, &in_flight),
            (now, wall),
        );
        // An agent program's backend may follow every session of that
        // program (Claude Code's registry holds every running one): this
        // project's view lists those it names (the default session, the
        // assignees'), told something or has work for — and every session
        // of a kind whose sessions are all the project's (its sessions
        // directory's).
        let mut ours = self.engine.sessions_with_work();
        ours.extend(self.settings.project.default_session.clone());
        ours.extend(self.settings.events.assignees.values().cloned());
        sessions.retain(|id, _| {
            agents::entry(Kind::of(id).0).is_some_and(|e| e.all_ours)
                || told.contains_key(id)
                || ours.contains(id)
        });
        session_view::write(
            self.journal.store.dir(),
            &sessions,
            &mut self.views.sessions_written,
        );
        let items = reminders::items(self.engine.reminders(), now, wall, self.engine.sessions());
        reminders::write(
            self.journal.store.dir(),
            &items,
            &mut self.views.reminders_written,
        );
    }
}
