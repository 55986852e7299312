//! What a session's transcript says happened to the messages sent to it:
//! which prompts a turn took (by their `msg_id`), which texts wait in the
//! inbox, which are held for a person, which the inbox's guard dropped.
//!
//! The inbox lives in the process: what waits or is held is lost with it,
//! so those facts count only from the owning process's start (`since`,
//! unix ms, compared with each record's own timestamp). A prompt taken
//! into a turn stays taken whichever process took it.

use std::collections::HashSet;

use super::transcript::Record;

#[derive(Debug, Default)]
pub struct History {
    taken: HashSet<String>,
    /// Enqueued texts no turn has taken yet, with when.
    waiting: Vec<(String, u64)>,
    /// Previews of held messages not settled yet, with when.
    held: Vec<(String, u64)>,
    /// `(from, reason, at)` of each message the guard dropped.
    dropped: Vec<(String, String, u64)>,
}

impl History {
    /// Learn one record, in transcript order.
    pub fn apply(&mut self, record: Record) {
        match record {
            Record::Enqueued { content, at } => {
                self.held.retain(|(p, _)| !preview_matches(p, &content));
                self.waiting.push((content, at));
            }
            Record::Taken {
                content, msg_id, ..
            } => {
                if let Some(i) = self.waiting.iter().position(|(w, _)| content.contains(w)) {
                    self.waiting.remove(i);
                }
                self.taken.extend(msg_id);
            }
            Record::Held { preview, at } => self.held.push((preview, at)),
            // Which one was settled is not said: all of them are no longer
            // known to be held (a retry then finds out again).
            Record::Settled { .. } => self.held.clear(),
            Record::Dropped { from, reason, at } => self.dropped.push((from, reason, at)),
            // What a wait for a person is about: kept by the observer.
            Record::ToolUse { .. } | Record::ToolDone => {}
        }
    }

    /// Whether a turn took the prompt with `msg_id`.
    pub fn was_taken(&self, msg_id: &str) -> bool {
        self.taken.contains(msg_id)
    }

    /// Whether `text` waits in the inbox of the process started at `since`.
    pub fn is_waiting(&self, text: &str, since: u64) -> bool {
        self.waiting.iter().any(|(w, at)| w == text && *at >= since)
    }

    /// Whether `text` is held for a person in the process started at `since`.
    pub fn is_held(&self, text: &str, since: u64) -> bool {
        self.held
            .iter()
            .any(|(p, at)| *at >= since && preview_matches(p, text))
    }

    /// Why the guard dropped a message from `from` at or after `since`.
    pub fn dropped_since(&self, from: &str, since: u64) -> Option<&str> {
        self.dropped
            .iter()
            .rev()
            .find(|(f, _, at)| f == from && *at >= since)
            .map(|(_, reason, _)| reason.as_str())
    }
}

/// Whether a held message's preview (possibly cut short, with `…`) is the
/// start of `text`, whitespace aside.
fn preview_matches(preview: &str, text: &str) -> bool {
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let p = words(preview.trim_end_matches('…'));
    !p.is_empty() && words(text).starts_with(&p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enq(c: &str, at: u64) -> Record {
        Record::Enqueued {
            content: c.into(),
            at,
        }
    }

    #[test]
    fn a_text_waits_from_its_enqueue_until_a_turn_takes_it_in_this_process() {
        let mut h = History::default();
        h.apply(enq("do s2", 10));
        assert!(h.is_waiting("do s2", 5));
        assert!(!h.is_waiting("do s2", 11), "enqueued before this process");
        h.apply(Record::Taken {
            content: "Another Claude session sent a message:\ndo s2\n\nThis came…".into(),
            msg_id: Some("id2".into()),
            at: 12,
        });
        assert!(!h.is_waiting("do s2", 5));
        assert!(h.was_taken("id2"));
    }

    #[test]
    fn held_until_enqueued_or_settled_and_drops_are_told_by_sender() {
        let mut h = History::default();
        h.apply(Record::Held {
            preview: "do  s3 now…".into(),
            at: 10,
        });
        assert!(h.is_held("do s3 now, please", 10));
        assert!(!h.is_held("do s4", 10));
        h.apply(enq("do s3 now, please", 11));
        assert!(!h.is_held("do s3 now, please", 10));
        h.apply(Record::Held {
            preview: "x".into(),
            at: 12,
        });
        h.apply(Record::Settled { at: 13 });
        assert!(!h.is_held("x", 0));
        h.apply(Record::Dropped {
            from: "reveille-p".into(),
            reason: "rate".into(),
            at: 14,
        });
        assert_eq!(h.dropped_since("reveille-p", 14), Some("rate"));
        assert_eq!(h.dropped_since("reveille-p", 15), None);
        assert_eq!(h.dropped_since("other", 0), None);
    }
}
