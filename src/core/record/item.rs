//! What can be announced within a source: work an agent is woken for and
//! can be reminded of (`Work`), or a note — a prompt that tells something
//! (the all-done nudge, a claim, a completion, a child's step done) or
//! bookkeeping with no prompt (who holds a task).
//!
//! Both persist as one string (`step:<key>`, `held:<id>\t<title>`, …), also
//! as a JSON map key, so state and journals written before the split read
//! back unchanged.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Work an agent is woken for: open until it is checked or closed, and
/// reminded of while its session sits idle.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Work {
    /// A plan step, by its key (normalised title, `#k` for duplicates).
    Step(String),
    /// A tracker bead or beads issue entering the ready set, by id.
    Task(String),
    /// A tracker task claimed by an assignee that maps to the session it
    /// is announced to: that session's open work until the task is
    /// completed, failed or deleted, or returns to the ready set. No prompt
    /// of its own; the `Claim` note told it.
    Claimed(String),
}

/// A note in the announced set: told once, never reminded of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Note {
    /// The "every step is checked" prompt of a wip plan.
    AllDone,
    /// A task assigned to someone by someone else: (id, assignee).
    Claim(String, String),
    /// A task completed elsewhere, told to the session it was announced to.
    Completed(String),
    /// A plan step a child session completed, told to the parent, by the
    /// step's key.
    ChildDone(String),
    /// Who has a tracker task that left the ready set without being closed
    /// (claimed, blocked again): the claimer's session, else the session
    /// it was announced to. No prompt of its own; it tells a later
    /// `completed` event whom to tell: (id, title), the title kept here so
    /// that the engine's title cache need not grow with held tasks.
    Held(String, String),
}

/// One thing that can be announced, within a source, as records and
/// pending prompts name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Item {
    Work(Work),
    Note(Note),
}

impl From<Work> for Item {
    fn from(work: Work) -> Item {
        Item::Work(work)
    }
}

impl From<Note> for Item {
    fn from(note: Note) -> Item {
        Item::Note(note)
    }
}

impl Item {
    /// A plan step's item.
    pub fn step(key: impl Into<String>) -> Item {
        Item::Work(Work::Step(key.into()))
    }

    /// A tracker task's item.
    pub fn task(id: impl Into<String>) -> Item {
        Item::Work(Work::Task(id.into()))
    }

    /// The work this item is, if it is work.
    pub fn work(&self) -> Option<&Work> {
        match self {
            Item::Work(w) => Some(w),
            Item::Note(_) => None,
        }
    }

    /// The key of the plan step this item is, if it is one.
    pub fn step_key(&self) -> Option<&str> {
        match self {
            Item::Work(Work::Step(k)) => Some(k),
            _ => None,
        }
    }

    /// The step or task id the journal shows for this item.
    pub fn label(&self) -> &str {
        match self {
            Item::Work(Work::Step(k)) | Item::Note(Note::ChildDone(k)) => k,
            Item::Note(Note::AllDone) => "all-done",
            Item::Work(Work::Task(id) | Work::Claimed(id))
            | Item::Note(Note::Claim(id, _) | Note::Completed(id) | Note::Held(id, _)) => id,
        }
    }

    /// The place of this item's kind in every walk over an announced set:
    /// the order the kinds were declared in before work and notes were
    /// told apart, so those walks (and the state file) keep their order.
    fn rank(&self) -> u8 {
        match self {
            Item::Work(Work::Step(_)) => 0,
            Item::Note(Note::AllDone) => 1,
            Item::Work(Work::Task(_)) => 2,
            Item::Note(Note::Claim(..)) => 3,
            Item::Note(Note::Completed(_)) => 4,
            Item::Note(Note::ChildDone(_)) => 5,
            Item::Note(Note::Held(..)) => 6,
            Item::Work(Work::Claimed(_)) => 7,
        }
    }

    /// Parse the `Display` form back (the persisted map key).
    pub fn parse(s: &str) -> Option<Item> {
        if s == "all-done" {
            return Some(Note::AllDone.into());
        }
        let (kind, rest) = s.split_once(':')?;
        let pair = || {
            let (id, other) = rest.split_once('\t')?;
            Some((id.to_string(), other.to_string()))
        };
        Some(match kind {
            "step" => Work::Step(rest.to_string()).into(),
            "task" => Work::Task(rest.to_string()).into(),
            "claimed" => Work::Claimed(rest.to_string()).into(),
            "completed" => Note::Completed(rest.to_string()).into(),
            "child-done" => Note::ChildDone(rest.to_string()).into(),
            "held" => pair().map(|(id, title)| Note::Held(id, title))?.into(),
            "claim" => pair().map(|(id, who)| Note::Claim(id, who))?.into(),
            _ => return None,
        })
    }
}

impl Ord for Item {
    fn cmp(&self, other: &Item) -> Ordering {
        let by_payload = || match (self, other) {
            (Item::Work(a), Item::Work(b)) => a.cmp(b),
            (Item::Note(a), Item::Note(b)) => a.cmp(b),
            // Different kinds have different ranks.
            _ => Ordering::Equal,
        };
        self.rank().cmp(&other.rank()).then_with(by_payload)
    }
}

impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Item) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Work(Work::Step(k)) => write!(f, "step:{k}"),
            Item::Work(Work::Task(id)) => write!(f, "task:{id}"),
            Item::Work(Work::Claimed(id)) => write!(f, "claimed:{id}"),
            Item::Note(Note::AllDone) => f.write_str("all-done"),
            Item::Note(Note::Claim(id, who)) => write!(f, "claim:{id}\t{who}"),
            Item::Note(Note::Completed(id)) => write!(f, "completed:{id}"),
            Item::Note(Note::ChildDone(k)) => write!(f, "child-done:{k}"),
            Item::Note(Note::Held(id, title)) => write!(f, "held:{id}\t{title}"),
        }
    }
}

impl Serialize for Item {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Item, D::Error> {
        let s = String::deserialize(d)?;
        Item::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("bad item key {s:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<Item> {
        vec![
            Item::step("a:b\tc"),
            Note::AllDone.into(),
            Item::task("bd-1"),
            Note::Claim("bd-1".into(), "agent".into()).into(),
            Note::Completed("bd-2".into()).into(),
            Note::ChildDone("step two".into()).into(),
            Note::Held("bd-3".into(), "A\ttitle".into()).into(),
            Work::Claimed("bd-4".into()).into(),
        ]
    }

    #[test]
    fn every_item_reads_back_from_its_persisted_form() {
        for item in every_kind() {
            assert_eq!(Item::parse(&item.to_string()), Some(item));
        }
        assert_eq!(Item::parse("claim:no-tab"), None);
        assert_eq!(Item::parse("nothing:x"), None);
    }

    /// Kinds sort as they were declared before work and notes were split
    /// (step, all-done, task, claim, completed, child-done, held, claimed),
    /// and items of one kind by their payload.
    #[test]
    fn items_keep_the_order_of_the_kinds_before_the_split() {
        let kinds = every_kind();
        let mut sorted = kinds.clone();
        sorted.reverse();
        sorted.sort();
        assert_eq!(sorted, kinds);
        assert!(Item::step("a") < Item::step("b"));
        let held = |id: &str, t: &str| Item::from(Note::Held(id.into(), t.into()));
        assert!(held("bd-1", "z") < held("bd-2", ""));
    }
}
