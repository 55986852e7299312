//! Every deadline of the engine in one table, as quinn-proto's
//! `TimerTable`: `poll_timeout` is its minimum, and `Tick` takes what is
//! due. Each timer names what it is for.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::config::Now;
use crate::core::record::Work;
use crate::core::source::Source;

/// What a deadline is for. The order of the variants is the order in which
/// due timers are acted on in one `Tick`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Timer {
    /// A file modified without a close: read it once it has settled.
    Settle(PathBuf),
    /// A fresh read to confirm with a complete re-read.
    Recheck(PathBuf),
    /// A mount's ready file read fresh, to read again once settled.
    MountRecheck(String),
    /// `events.resync_ms`: read every mount's ready list with no event
    /// asking (armed by the first mount read).
    Resync,
    /// A deferred beads issue comes due: judge the file again.
    BeadsDue,
    /// A plan's file vanished: a listing decides whether it moved.
    Vanished(Source),
    /// A prompt handed out again waits for its kind's `unseen` window
    /// (`core::confirm`) after its last write: its lane may send then.
    Unseen(String),
    /// A session's lane backs off after a failed write.
    Retry(String),
    /// Work announced to an idle session may be due a reminder:
    /// (session, source, work).
    Remind(String, Source, Work),
    /// A prompt sent into an agent whose record will tell
    /// (`Evidence::Sent`): its `record` window is over, look for it there.
    Look(String, u64),
    /// A prompt reached an agent whose state is known: by now its turn
    /// should have been seen starting (for the journal only).
    Confirm(String),
    /// A session busy since it was given work may be stuck by now.
    Stuck(String),
    /// A wait for a person seen without what it is for: told as it is
    /// if not named by now.
    Naming(String),
}

/// The deadlines.
#[derive(Debug, Default)]
pub(super) struct Timers {
    at: BTreeMap<Timer, Now>,
}

impl Timers {
    /// Arm (or re-arm) `timer` for `at`.
    pub(super) fn set(&mut self, timer: Timer, at: Now) {
        self.at.insert(timer, at);
    }

    /// Arm `timer` unless it is armed already (a settle is not pushed back
    /// by further writes).
    pub(super) fn set_once(&mut self, timer: Timer, at: Now) {
        self.at.entry(timer).or_insert(at);
    }

    pub(super) fn cancel(&mut self, timer: &Timer) {
        self.at.remove(timer);
    }

    pub(super) fn get(&self, timer: &Timer) -> Option<Now> {
        self.at.get(timer).copied()
    }

    /// The earliest deadline.
    pub(super) fn next(&self) -> Option<Now> {
        self.at.values().min().copied()
    }

    /// Disarm and return the timers due at `now`, keeping those `keep`
    /// says must wait, in `Timer` order.
    pub(super) fn take_due(&mut self, now: Now, keep: impl Fn(&Timer) -> bool) -> Vec<Timer> {
        let due: Vec<Timer> = self
            .at
            .iter()
            .filter(|(t, at)| **at <= now && !keep(t))
            .map(|(t, _)| t.clone())
            .collect();
        for t in &due {
            self.at.remove(t);
        }
        due
    }
}

/// A re-read asked for because a read was fresh: how many in a row, and
/// whether the read is already asked for (its answer resets or re-arms it).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Recheck {
    pub(super) count: u32,
    pub(super) asked: bool,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_next_deadline_is_the_earliest_and_a_settle_is_not_pushed_back() {
        let mut t = Timers::default();
        assert_eq!(t.next(), None);
        t.set_once(Timer::Settle("/p/a".into()), ms(50));
        t.set_once(Timer::Settle("/p/a".into()), ms(90));
        t.set(Timer::Retry("s1".into()), ms(70));
        assert_eq!(t.get(&Timer::Settle("/p/a".into())), Some(ms(50)));
        assert_eq!(t.next(), Some(ms(50)));
        t.cancel(&Timer::Settle("/p/a".into()));
        assert_eq!(t.next(), Some(ms(70)));
    }

    #[test]
    fn due_timers_come_out_once_in_their_order_and_kept_ones_wait() {
        let mut t = Timers::default();
        t.set(Timer::Retry("s1".into()), ms(10));
        t.set(Timer::Vanished(Source::Plan("x".into())), ms(10));
        t.set(Timer::BeadsDue, ms(10));
        t.set(Timer::Settle("/p/a".into()), ms(10));
        t.set(Timer::Recheck("/p/b".into()), ms(99));
        let due = t.take_due(ms(10), |t| matches!(t, Timer::Vanished(_)));
        assert_eq!(
            due,
            [
                Timer::Settle("/p/a".into()),
                Timer::BeadsDue,
                Timer::Retry("s1".into()),
            ]
        );
        assert!(t.take_due(ms(10), |_| false) == [Timer::Vanished(Source::Plan("x".into()))]);
        assert_eq!(t.next(), Some(ms(99)));
    }
}
