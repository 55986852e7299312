//! The tasks' share of the memory: per tracker source (a 9beads project, a
//! named mount, the beads file), the tasks announced and not yet closed,
//! the tasks claimed by a session's own assignee, and the notes about
//! them — claims and completions told (so a log read again tells nothing
//! twice) and who holds a task that left the ready set (so a `completed`
//! event, which names no one, reaches the session that had it). It
//! applies the records about tracker sources.

use std::ops::Deref;

use serde::Serialize;

use super::announced::Announcements;
use crate::core::record::{Item, Note, Record, Work};
use crate::core::source::Source;

/// Per tracker source, its announced tasks and their notes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(transparent)]
pub struct TaskMemory(Announcements);

/// Whether a source is a tracker's (not a plan's).
fn is_tracker(source: &Source) -> bool {
    !source.is_plan()
}

impl TaskMemory {
    /// The share of `announced` that is about tracker sources.
    pub(super) fn new(announced: Announcements) -> TaskMemory {
        TaskMemory(announced)
    }

    /// Apply `record` if it is about a tracker source.
    pub fn apply(&mut self, record: &Record) {
        self.0.apply(record, is_tracker);
    }

    /// Whether task `id` is announced as ready.
    pub fn is_task_announced(&self, source: &Source, id: &str) -> bool {
        self.0.contains(source, &Item::task(id))
    }

    /// The session task `id` was announced to as ready (not as baseline).
    pub fn task_announced_to(&self, source: &Source, id: &str) -> Option<&str> {
        self.0.announced_to(source, &Item::task(id))
    }

    /// The `Held` note of task `id`, if any: found by a range lookup (the
    /// notes of one id sort together), not a scan of every announced item.
    pub fn held(&self, source: &Source, id: &str) -> Option<&Item> {
        let from = Item::Note(Note::Held(id.to_string(), String::new()));
        let (item, _) = self.0.get(source)?.first_from(&from)?;
        matches!(item, Item::Note(Note::Held(c, _)) if c == id).then_some(item)
    }

    /// Who holds task `id`: (session, title), if anyone.
    pub fn holder(&self, source: &Source, id: &str) -> Option<(String, String)> {
        let item = self.held(source, id)?;
        let session = self.0.entry(source, item)?.session.clone()?;
        match item {
            Item::Note(Note::Held(_, title)) => Some((session, title.clone())),
            _ => None,
        }
    }

    /// Every note of task `id` (claims and completion told, who holds it,
    /// claimed work), in order.
    pub fn notes_of(&self, source: &Source, id: &str) -> Vec<Item> {
        self.0.items_where(source, |i| match i {
            Item::Note(Note::Claim(c, _) | Note::Completed(c) | Note::Held(c, _))
            | Item::Work(Work::Claimed(c)) => c == id,
            _ => false,
        })
    }

    /// Every note of `source`, and its claimed work, in order.
    pub fn notes(&self, source: &Source) -> Vec<Item> {
        self.0.items_where(source, |i| {
            matches!(
                i,
                Item::Note(Note::Claim(..) | Note::Completed(_) | Note::Held(..))
                    | Item::Work(Work::Claimed(_))
            )
        })
    }

    /// The ids of the tasks of `source` something is remembered of, but
    /// for held tasks (a `Held` note carries its own title).
    pub fn ids<'a>(&'a self, source: &Source) -> impl Iterator<Item = &'a str> + 'a {
        let items = self
            .0
            .get(source)
            .into_iter()
            .flat_map(|items| items.keys());
        items
            .filter(|i| !matches!(i, Item::Note(Note::Held(..))))
            .map(Item::label)
    }
}

impl Deref for TaskMemory {
    type Target = Announcements;

    fn deref(&self) -> &Announcements {
        &self.0
    }
}
