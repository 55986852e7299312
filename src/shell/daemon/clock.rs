//! The loop's own deadlines besides the engine's: the watchdog, the poll
//! of polled roots, the look at awaited roots, the views and the group
//! commit (the session-state poll is a worker's: `agents::ollie::poll`) — one earliest instant for the loop's one timer.

use std::time::Duration;

use tokio::time::Instant;

use crate::core::input::Input;

use super::Daemon;

/// The loop's own deadlines besides the engine's: the watchdog, the poll
/// of polled roots, the awaited roots, the views and the group commit.
pub(super) struct Clock {
    watchdog: Option<Duration>,
    watchdog_at: Option<Instant>,
    poll_at: Instant,
    awaited_at: Instant,
}

/// How often a root that does not exist is looked for besides inotify: a
/// mount appearing is no inotify event (see `Watch::recheck_awaited`).
const AWAITED_LOOK: Duration = Duration::from_secs(1);

impl Clock {
    pub(super) fn new(watchdog: Option<Duration>, poll: Duration) -> Clock {
        let now = Instant::now();
        Clock {
            watchdog,
            watchdog_at: watchdog.map(|w| now + w),
            // The poller was primed when the roots were added.
            poll_at: now + poll,
            awaited_at: now + AWAITED_LOOK,
        }
    }

    /// The earliest deadline that applies now.
    pub(super) fn next(&self, d: &Daemon) -> Option<Instant> {
        let engine = d
            .engine
            .poll_timeout()
            .and_then(|t| d.service.started.checked_add(t));
        let polling = d.watching.watch.polling().then_some(self.poll_at);
        let awaited = d.watching.watch.awaiting().then_some(self.awaited_at);
        [
            self.watchdog_at,
            engine,
            polling,
            awaited,
            d.journal.sync_at,
            d.views.at,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Everything due at `now`, each moving its own deadline on.
    pub(super) fn fire(&mut self, d: &mut Daemon, now: Instant) {
        if self.watchdog_at.is_some_and(|t| t <= now) {
            // Fed from the loop itself: a stalled loop misses it and
            // systemd restarts the service.
            d.service.notifier.watchdog();
            self.watchdog_at = self.watchdog.map(|w| now + w);
        }
        let engine = d
            .engine
            .poll_timeout()
            .and_then(|t| d.service.started.checked_add(t));
        if engine.is_some_and(|t| t <= now) {
            d.feed(Input::Tick);
        }
        if d.watching.watch.polling() && self.poll_at <= now {
            self.poll_at = now + d.settings.events.poll_interval;
            for seen in d.watching.watch.poll() {
                d.on_seen(seen);
            }
            d.peek_events();
        }
        if d.watching.watch.awaiting() && self.awaited_at <= now {
            self.awaited_at = now + AWAITED_LOOK;
            d.recheck_awaited_roots();
        }
        if d.journal.sync_at.is_some_and(|t| t <= now) {
            d.sync();
        }
        if d.views.at.is_some_and(|t| t <= now) {
            d.write_views();
        }
    }
}
