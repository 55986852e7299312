//! Every deadline of the engine in one table, as quinn-proto's
//! `TimerTable`: `poll_timeout` is its minimum, and `Tick` takes what is
//! due. Each timer names what it is for.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::config::Now;
use crate::core::record::Item;
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
    /// A deferred beads issue comes due: judge the file again.
    BeadsDue,
    /// A plan's file vanished: a listing decides whether it moved.
    Vanished(Source),
    /// A session's lane backs off after a failed write.
    Retry(String),
    /// An item announced to an idle session may be due a reminder:
    /// (session, source, item).
    Remind(String, Source, Item),
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
