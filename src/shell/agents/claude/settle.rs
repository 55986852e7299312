//! The first moments of the backend, while a session's transcript may not
//! yet show what the previous reveille wrote into the session's inbox just
//! before it died (kill -9, a crash, a restart).
//!
//! Claude Code writes its transcript in batches — a 100 ms flush timer
//! (`FLUSH_INTERVAL_MS` in its session storage) started by the first entry
//! of a batch — so a prompt written shortly before reveille stopped can sit
//! in the inbox and be nowhere in the transcript yet. Written again, it is
//! a second copy: only Claude Code's own guard (an identical message from
//! the same sender within 30 s is dropped) keeps it from the model — two
//! copies waiting together would go to the model as one user message — and
//! the drop's notice would be taken for a failed delivery. So a prompt that
//! would be written in these moments waits until they have passed, and is
//! then judged again against the transcript.

use std::time::{Duration, Instant};

use crate::core::effect::Delivery;

/// How long after the backend's start a transcript may still lack an entry
/// made before it: the flush interval, the drain's own write, and a margin
/// for a machine under load. It is also what the first prompts after a
/// start of reveille may wait, so no more than that.
pub const SETTLE: Duration = Duration::from_millis(300);

/// The deliveries waiting for the transcripts to settle.
#[derive(Debug)]
pub struct Settling {
    until: Instant,
    held: Vec<Delivery>,
}

impl Settling {
    /// Settled `SETTLE` after `started`.
    pub fn new(started: Instant) -> Settling {
        Settling {
            until: started + SETTLE,
            held: Vec::new(),
        }
    }

    /// Whether `d`, about to be written at `now`, must wait; it is kept if so.
    pub fn hold(&mut self, now: Instant, d: &Delivery) -> bool {
        if now >= self.until {
            return false;
        }
        self.held.push(d.clone());
        true
    }

    /// When to look again, while a delivery waits.
    pub fn deadline(&self) -> Option<Instant> {
        (!self.held.is_empty()).then_some(self.until)
    }

    /// The deliveries whose wait is over at `now`, in the order they came.
    pub fn release(&mut self, now: Instant) -> Vec<Delivery> {
        if now < self.until {
            return Vec::new();
        }
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(seq: u64) -> Delivery {
        Delivery {
            session: "claude:s".into(),
            seq,
            text: format!("do s{seq}"),
            plan: String::new(),
            step: String::new(),
            parent: None,
            again: false,
        }
    }

    #[test]
    fn a_write_in_the_first_moments_waits_for_them_and_later_ones_do_not() {
        let t0 = Instant::now();
        let mut s = Settling::new(t0);
        assert_eq!(s.deadline(), None);
        assert!(s.hold(t0, &delivery(1)));
        assert!(s.hold(t0 + SETTLE / 2, &delivery(2)));
        assert_eq!(s.deadline(), Some(t0 + SETTLE));
        assert!(s.release(t0 + SETTLE / 2).is_empty());
        let out: Vec<u64> = s.release(t0 + SETTLE).iter().map(|d| d.seq).collect();
        assert_eq!(out, [1, 2]);
        assert_eq!(s.deadline(), None);
        assert!(!s.hold(t0 + SETTLE, &delivery(3)));
    }
}
