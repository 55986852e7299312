//! Where reveille stands: the next sequence number to hand out, how far
//! the tracker's event log was consumed, and whether the first-start
//! baseline was taken. Moved by the records that queue prompts (their
//! numbers), `Cursor` and `Baselined`.

use crate::core::record::{Cursor, Record};

/// The sequence, the cursor and the baseline mark.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Position {
    /// The next sequence number to hand out.
    pub(super) next_seq: u64,
    /// The tracker event log position.
    pub(super) cursor: Option<Cursor>,
    /// Whether the first-start baseline was taken.
    pub(super) baselined: bool,
}

impl Position {
    /// Apply `record` if it moves the position. Idempotent: the sequence
    /// only grows past the numbers recorded.
    pub fn apply(&mut self, record: &Record) {
        match record {
            Record::Announce {
                session: Some(_),
                pending: Some(p),
                ..
            } => self.next_seq = self.next_seq.max(p.seq + 1),
            Record::Remind { pending, .. } => {
                self.next_seq = self.next_seq.max(pending.seq + 1);
            }
            Record::Cursor { cursor } => self.cursor = Some(*cursor),
            Record::Baselined => self.baselined = true,
            _ => {}
        }
    }

    /// The sequence number the next prompt gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Where the tracker's event log was read up to.
    pub fn cursor(&self) -> Option<Cursor> {
        self.cursor
    }

    /// Whether the first-start baseline was taken.
    pub fn baselined(&self) -> bool {
        self.baselined
    }
}
