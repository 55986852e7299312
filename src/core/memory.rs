//! What reveille remembers across restarts: the durable memory, made of
//! parts that each own their share and apply their own records.
//!
//! - `plans` (`memory/plans.rs`): per plan, the steps announced and the
//!   plan's notes;
//! - `tasks` (`memory/tasks.rs`): per tracker source, the tasks announced
//!   and their notes (claims and completions told, who holds a task);
//! - `outbox` (`memory/outboxes.rs`): per session, the prompts pending;
//! - `children` (`memory/children.rs`): the child sessions made (fan-out);
//! - `position` (`memory/position.rs`): the sequence, the event log
//!   cursor, the baseline mark.
//!
//! The engine keeps its durable memory *as* a `Memory` and changes it only
//! by applying `Record`s — the same records the shell appends to the
//! journal before acting on them — and every part sees every record and
//! applies its share. Replaying the journal over the last snapshot is
//! therefore exactly the live path, and every record is idempotent (keyed
//! by source, item or sequence number), so a record replayed twice after a
//! crash during compaction changes nothing. The state file's shape and
//! its migrations are in `memory/stored.rs`.

use super::record::{Cursor, Item, Record, Work};
use super::source::Source;

mod announced;
mod children;
mod items;
mod outboxes;
mod plans;
mod position;
mod stored;
mod tasks;
#[cfg(test)]
mod tests;

pub use announced::{Announced, Announcements};
pub use children::Children;
pub use items::Items;
pub use outboxes::Outboxes;
pub use plans::PlanMemory;
pub use position::Position;
pub use tasks::TaskMemory;

/// The durable memory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Memory {
    /// Format version, so a change can migrate instead of guessing: the
    /// version read, until the engine takes the memory over.
    pub version: u32,
    /// Per plan, its announced steps and notes.
    pub plans: PlanMemory,
    /// Per tracker source, its announced tasks and notes.
    pub tasks: TaskMemory,
    /// Per session, prompts recorded and not yet delivered, in order.
    pub outbox: Outboxes,
    /// The child sessions reveille made, by session id.
    pub children: Children,
    /// The sequence, the cursor, the baseline mark.
    pub position: Position,
}

impl Memory {
    /// The format written now (`memory/stored.rs` says what each version
    /// changed).
    pub const VERSION: u32 = 3;

    /// Apply one record: each part applies its share. Idempotent: applying
    /// the same record twice leaves the same memory as applying it once.
    pub fn apply(&mut self, record: &Record) {
        self.plans.apply(record);
        self.tasks.apply(record);
        self.outbox.apply(record);
        self.children.apply(record);
        self.position.apply(record);
    }

    /// The memory of a daemon that took its first-start baseline and
    /// remembers nothing else.
    pub fn started() -> Memory {
        let mut memory = Memory::default();
        memory.apply(&Record::Baselined);
        memory
    }

    /// Whether `item` of `source` is in the announced set (of the share
    /// `source`'s kind says).
    pub fn is_announced(&self, source: &Source, item: &Item) -> bool {
        self.announced_of(source)
            .is_some_and(|items| items.contains_key(item))
    }

    /// The announced items of `source`.
    pub fn announced_of(&self, source: &Source) -> Option<&Items> {
        match source.is_plan() {
            true => self.plans.get(source),
            false => self.tasks.get(source),
        }
    }

    /// Every source's announced items in source order, plans' and tasks'
    /// interleaved as one map of them would hold them.
    pub fn announced(&self) -> impl Iterator<Item = (&Source, &Items)> {
        let mut plans = self.plans.iter().peekable();
        let mut tasks = self.tasks.iter().peekable();
        std::iter::from_fn(move || match (plans.peek(), tasks.peek()) {
            (Some((p, _)), Some((t, _))) if t < p => tasks.next(),
            (Some(_), _) => plans.next(),
            (None, _) => tasks.next(),
        })
    }

    /// How many items are announced, plans' and tasks'.
    pub fn announced_count(&self) -> usize {
        self.plans.count() + self.tasks.count()
    }

    /// The work announced to `session`, with its reminder counts, in
    /// source order.
    pub fn work_of<'a>(
        &'a self,
        session: &'a str,
    ) -> impl Iterator<Item = (&'a Source, &'a Work, &'a Announced)> + 'a {
        self.announced()
            .flat_map(|(s, items)| items.iter().map(move |(i, a)| (s, i, a)))
            .filter(move |(_, _, a)| a.session.as_deref() == Some(session))
            .filter_map(|(s, i, a)| Some((s, i.work()?, a)))
    }

    /// Total prompts pending across sessions.
    pub fn pending_total(&self) -> usize {
        self.outbox.total()
    }

    /// Where the tracker's event log was read up to.
    pub fn cursor(&self) -> Option<Cursor> {
        self.position.cursor()
    }

    /// Whether the first-start baseline was taken.
    pub fn baselined(&self) -> bool {
        self.position.baselined()
    }
}
