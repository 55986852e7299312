//! What reveille remembers across restarts, and the journal records that
//! change it.
//!
//! The engine keeps its durable memory *as* a `Memory` and changes it only by
//! applying `Record`s — the same records the shell appends to the journal
//! before acting on them. Replaying the journal over the last snapshot is
//! therefore exactly the live path, and every record is idempotent (keyed by
//! source, item or sequence number), so a record replayed twice after a crash
//! during compaction changes nothing.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::source::Source;

mod items;
pub use items::Items;

/// One thing that can be announced, within a source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Item {
    /// A plan step, by its key (normalised title, `#k` for duplicates).
    Step(String),
    /// The "every step is checked" prompt of a wip plan.
    AllDone,
    /// A tracker bead or beads issue entering the ready set, by id.
    Task(String),
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
    /// A tracker task claimed by an assignee that maps to the session it
    /// is announced to: that session's open work (reminded of like a ready
    /// task) until the task is completed, failed or deleted, or returns to
    /// the ready set. No prompt of its own; the `Claim` note told it.
    Claimed(String),
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Step(k) => write!(f, "step:{k}"),
            Item::AllDone => f.write_str("all-done"),
            Item::Task(id) => write!(f, "task:{id}"),
            Item::Claim(id, who) => write!(f, "claim:{id}\t{who}"),
            Item::Completed(id) => write!(f, "completed:{id}"),
            Item::ChildDone(k) => write!(f, "child-done:{k}"),
            Item::Held(id, title) => write!(f, "held:{id}\t{title}"),
            Item::Claimed(id) => write!(f, "claimed:{id}"),
        }
    }
}

impl Item {
    /// Parse the `Display` form back (the persisted map key).
    pub fn parse(s: &str) -> Option<Item> {
        if s == "all-done" {
            return Some(Item::AllDone);
        }
        let (kind, rest) = s.split_once(':')?;
        Some(match kind {
            "step" => Item::Step(rest.to_string()),
            "task" => Item::Task(rest.to_string()),
            "completed" => Item::Completed(rest.to_string()),
            "child-done" => Item::ChildDone(rest.to_string()),
            "claimed" => Item::Claimed(rest.to_string()),
            "held" => {
                let (id, title) = rest.split_once('\t')?;
                Item::Held(id.to_string(), title.to_string())
            }
            "claim" => {
                let (id, who) = rest.split_once('\t')?;
                Item::Claim(id.to_string(), who.to_string())
            }
            _ => return None,
        })
    }

    /// The step or task id the journal shows for this item.
    pub fn label(&self) -> &str {
        match self {
            Item::Step(k) | Item::ChildDone(k) => k,
            Item::AllDone => "all-done",
            Item::Task(id)
            | Item::Claim(id, _)
            | Item::Completed(id)
            | Item::Held(id, _)
            | Item::Claimed(id) => id,
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

/// What is remembered about one announced item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announced {
    /// The session it was announced to; `None` for baseline entries of
    /// sources that had no route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Recorded on the very first start without a prompt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline: bool,
    /// Reminders sent for it since the session last made progress in its
    /// source: durable, so a restart neither repeats nor resets them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reminded: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A prompt recorded in a session's outbox and not yet delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// Global, increasing: the delivery order and the idempotency key.
    pub seq: u64,
    /// The source the prompt is about.
    pub source: Source,
    /// The item within the source.
    pub item: Item,
    /// The id agents see (`s3`, `t2`, `bd-a1b2`), for jsonl framing and logs.
    pub step: String,
    /// The plan file name or tracker source, for jsonl framing and logs.
    pub plan: String,
    /// The rendered prompt.
    pub text: String,
}

/// Where the tracker's event log was read up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Cursor {
    pub dev: u64,
    pub ino: u64,
    /// The start of the first line not yet consumed.
    pub offset: u64,
    /// A hash of the log's first bytes: a synthetic FUSE file keeps its
    /// inode when the tracker restarts, but not its first event.
    #[serde(default)]
    pub head: u64,
    /// A hash of the bytes just before `offset` (the end of the last line
    /// consumed), 0 when unknown. A restarted tracker that re-mounts the
    /// same projects begins its new log with the very same bytes, so the
    /// head alone cannot tell; the new log passing our offset between two
    /// polls (size never seen below it) has different bytes here.
    #[serde(default)]
    pub last: u64,
}

/// Where a child session reveille made for one step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildState {
    /// Recorded before its `s/new` is written; not yet seen to exist.
    Planned,
    /// Seen to exist, its step open.
    Working,
    /// Its step is checked: killed once it is idle (or kept).
    Done,
    /// Gone (killed from outside, or could not be created) before its step
    /// was checked: the step went back to the parent, and goes there again
    /// if it is announced anew.
    HandedBack,
}

impl ChildState {
    pub fn as_str(self) -> &'static str {
        match self {
            ChildState::Planned => "planned",
            ChildState::Working => "working",
            ChildState::Done => "done",
            ChildState::HandedBack => "handed back",
        }
    }
}

/// A child session reveille made for one step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Child {
    /// The session of the plan, which fanned the step out.
    pub parent: String,
    /// The plan.
    pub source: Source,
    /// The step, by its key.
    pub item: Item,
    /// The id agents see (`s2`).
    pub step: String,
    /// The plan file name, for logs and status.
    pub plan: String,
    pub state: ChildState,
    /// When it was seen to exist (unix milliseconds, from the shell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_unix_ms: Option<u64>,
}

/// One durable change. Appended to the journal before the shell acts on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "r", rename_all = "snake_case")]
pub enum Record {
    /// An item entered the announced set, with its prompt when it has one.
    Announce {
        source: Source,
        item: Item,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        baseline: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pending: Option<Pending>,
    },
    /// An item left the announced set (checked, closed, gone).
    Forget { source: Source, item: Item },
    /// A whole source is gone (plan deleted).
    DropSource { source: Source },
    /// A prompt reached its session.
    Delivered { session: String, seq: u64 },
    /// A pending prompt was withdrawn before it could be delivered.
    Withdrawn { session: String, seq: u64 },
    /// The tracker's event log was consumed up to here.
    Cursor { cursor: Cursor },
    /// The first-start baseline is complete.
    Baselined,
    /// Reminder `n` of an announced item, with its prompt: recorded before
    /// it is written, like an announcement.
    Remind {
        source: Source,
        item: Item,
        session: String,
        n: u32,
        pending: Pending,
    },
    /// The session made progress in the source (a step checked): its
    /// reminder counts there start again.
    RemindReset { source: Source, session: String },
    /// A child session, as it stands now (recorded before it is created,
    /// and at every move after).
    Child { id: String, child: Child },
    /// A child session is no longer followed (reaped, or gone after its
    /// step was done).
    ChildEnded { id: String },
    /// Everything remembered under `from` is remembered under `to` from
    /// now on (items `to` already has are kept as they are), and its
    /// pending prompts are `to`'s: a 9beads mount followed by name before
    /// is the project's mount found by its directory now.
    Adopt { from: Source, to: Source },
}

/// The durable memory: announced sets, outboxes, sequence, cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Memory {
    /// Format version, so a future change can migrate instead of guessing.
    #[serde(default)]
    pub version: u32,
    /// Per source, the items announced and not yet checked/closed.
    #[serde(default)]
    pub announced: BTreeMap<Source, Items>,
    /// Per session, prompts recorded and not yet delivered, in order.
    #[serde(default)]
    pub outbox: BTreeMap<String, VecDeque<Pending>>,
    /// The next sequence number to hand out.
    #[serde(default)]
    pub next_seq: u64,
    /// The tracker event log position.
    #[serde(default)]
    pub cursor: Option<Cursor>,
    /// Whether the first-start baseline was taken.
    #[serde(default)]
    pub baselined: bool,
    /// The child sessions reveille made, by session id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub children: BTreeMap<String, Child>,
}

impl Memory {
    /// The format written now. 2: 9beads sources (`9beads:<cwd>`) and the
    /// `adopt` record. A version-1 memory reads as it is; what it holds
    /// under `mount:<name>` (its default followed the mount named like the
    /// project) is adopted at run time by the project's 9beads source, once
    /// `mtab` shows the project's mount ([`Record::Adopt`]), since only
    /// `mtab` knows the directory such a name stood for.
    pub const VERSION: u32 = 2;

    /// Apply one record. Idempotent: applying the same record twice leaves
    /// the same memory as applying it once.
    pub fn apply(&mut self, record: &Record) {
        match record {
            Record::Announce {
                source,
                item,
                session,
                baseline,
                pending,
            } => {
                let announced = Announced {
                    session: session.clone(),
                    baseline: *baseline,
                    reminded: 0,
                };
                self.announced
                    .entry(source.clone())
                    .or_default()
                    .insert(item.clone(), announced);
                if let (Some(session), Some(p)) = (session, pending) {
                    let queue = self.outbox.entry(session.clone()).or_default();
                    if !queue.iter().any(|q| q.seq == p.seq) {
                        queue.push_back(p.clone());
                    }
                    self.next_seq = self.next_seq.max(p.seq + 1);
                }
            }
            Record::Forget { source, item } => {
                if let Some(items) = self.announced.get_mut(source) {
                    items.remove(item);
                    if items.is_empty() {
                        self.announced.remove(source);
                    }
                }
            }
            Record::DropSource { source } => {
                self.announced.remove(source);
            }
            Record::Delivered { session, seq } | Record::Withdrawn { session, seq } => {
                if let Some(queue) = self.outbox.get_mut(session) {
                    queue.retain(|p| p.seq != *seq);
                    if queue.is_empty() {
                        self.outbox.remove(session);
                    }
                }
            }
            Record::Cursor { cursor } => self.cursor = Some(*cursor),
            Record::Baselined => self.baselined = true,
            Record::Remind {
                source,
                item,
                session,
                n,
                pending,
            } => {
                let entry = self.announced.get_mut(source).and_then(|i| i.get_mut(item));
                if let Some(a) = entry {
                    a.reminded = a.reminded.max(*n);
                }
                let queue = self.outbox.entry(session.clone()).or_default();
                if !queue.iter().any(|q| q.seq == pending.seq) {
                    queue.push_back(pending.clone());
                }
                self.next_seq = self.next_seq.max(pending.seq + 1);
            }
            Record::RemindReset { source, session } => {
                let items = self.announced.get_mut(source).into_iter();
                let entries = items.flat_map(Items::iter_mut);
                for (_, a) in entries.filter(|(_, a)| a.session.as_ref() == Some(session)) {
                    a.reminded = 0;
                }
            }
            Record::Child { id, child } => {
                self.children.insert(id.clone(), child.clone());
            }
            Record::ChildEnded { id } => {
                self.children.remove(id);
            }
            Record::Adopt { from, to } => self.adopt(from, to),
        }
    }

    /// Apply `Adopt`: idempotent, since `from` is empty once adopted.
    fn adopt(&mut self, from: &Source, to: &Source) {
        if from == to {
            return;
        }
        if let Some(items) = self.announced.remove(from) {
            let into = self.announced.entry(to.clone()).or_default();
            for (item, announced) in &items {
                if !into.contains_key(item) {
                    into.insert(item.clone(), announced.clone());
                }
            }
        }
        for p in self.outbox.values_mut().flatten() {
            if p.source == *from {
                p.source = to.clone();
            }
        }
    }

    /// Whether `item` of `source` is in the announced set.
    pub fn is_announced(&self, source: &Source, item: &Item) -> bool {
        self.announced
            .get(source)
            .is_some_and(|items| items.contains_key(item))
    }

    /// The announced items of `source` that `keep` picks, in order.
    pub fn announced_where(&self, source: &Source, keep: impl Fn(&Item) -> bool) -> Vec<Item> {
        self.announced
            .get(source)
            .map(|items| items.keys().filter(|i| keep(i)).cloned().collect())
            .unwrap_or_default()
    }

    /// Total prompts pending across sessions.
    pub fn pending_total(&self) -> usize {
        self.outbox.values().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn announce(seq: u64) -> Record {
        Record::Announce {
            source: Source::Plan("p".into()),
            item: Item::Step(format!("step {seq}")),
            session: Some("s".into()),
            baseline: false,
            pending: Some(Pending {
                seq,
                source: Source::Plan("p".into()),
                item: Item::Step(format!("step {seq}")),
                step: format!("s{seq}"),
                plan: "p.md".into(),
                text: "hi".into(),
            }),
        }
    }

    #[test]
    fn replaying_records_twice_changes_nothing() {
        let records = [
            announce(0),
            announce(1),
            Record::Delivered {
                session: "s".into(),
                seq: 0,
            },
            Record::Forget {
                source: Source::Plan("p".into()),
                item: Item::Step("step 1".into()),
            },
            Record::Cursor {
                cursor: Cursor {
                    dev: 1,
                    ino: 2,
                    offset: 3,
                    head: 4,
                    last: 5,
                },
            },
        ];
        let mut once = Memory::default();
        records.iter().for_each(|r| once.apply(r));
        let mut twice = once.clone();
        records.iter().for_each(|r| twice.apply(r));
        assert_eq!(once, twice);
        assert_eq!(once.pending_total(), 1);
        assert_eq!(once.next_seq, 2);
        assert!(once.is_announced(&Source::Plan("p".into()), &Item::Step("step 0".into())));
        assert!(!once.is_announced(&Source::Plan("p".into()), &Item::Step("step 1".into())));
    }

    #[test]
    fn child_records_are_idempotent_and_round_trip() {
        let child = Child {
            parent: "agent".into(),
            source: Source::Plan("p".into()),
            item: Item::Step("beta".into()),
            step: "s2".into(),
            plan: "p.md".into(),
            state: ChildState::Working,
            since_unix_ms: Some(5),
        };
        let records = [
            Record::Child {
                id: "agent.s2-1".into(),
                child: Child {
                    state: ChildState::Planned,
                    since_unix_ms: None,
                    ..child.clone()
                },
            },
            Record::Child {
                id: "agent.s2-1".into(),
                child: child.clone(),
            },
        ];
        let mut once = Memory::default();
        records.iter().for_each(|r| once.apply(r));
        let mut twice = once.clone();
        records.iter().for_each(|r| twice.apply(r));
        assert_eq!(once, twice);
        assert_eq!(once.children["agent.s2-1"], child);
        for r in &records {
            let line = serde_json::to_string(r).unwrap();
            assert_eq!(&serde_json::from_str::<Record>(&line).unwrap(), r);
        }
        let text = serde_json::to_string(&once).unwrap();
        assert_eq!(serde_json::from_str::<Memory>(&text).unwrap(), once);
        once.apply(&Record::ChildEnded {
            id: "agent.s2-1".into(),
        });
        assert!(once.children.is_empty());
    }

    #[test]
    fn adopting_a_source_moves_its_items_and_pending_prompts_once() {
        let from = Source::Mount("proj".into());
        let to = Source::NineBeads("/src/proj".into());
        let task = |id: &str, source: &Source, seq: Option<u64>| Record::Announce {
            source: source.clone(),
            item: Item::Task(id.into()),
            session: Some("s".into()),
            baseline: false,
            pending: seq.map(|seq| Pending {
                seq,
                source: source.clone(),
                item: Item::Task(id.into()),
                step: id.into(),
                plan: source.to_string(),
                text: format!("{id} at {source}"),
            }),
        };
        let mut once = Memory::default();
        once.apply(&task("bd-1", &from, Some(0)));
        once.apply(&task("bd-2", &from, None));
        once.apply(&task("bd-2", &to, Some(1)));
        let adopt = Record::Adopt {
            from: from.clone(),
            to: to.clone(),
        };
        once.apply(&adopt);
        let mut twice = once.clone();
        twice.apply(&adopt);
        assert_eq!(once, twice);
        assert!(!once.announced.contains_key(&from));
        assert!(once.is_announced(&to, &Item::Task("bd-1".into())));
        // What `to` already had is kept as it was.
        assert!(once.announced[&to]
            .get(&Item::Task("bd-2".into()))
            .is_some());
        let sources: Vec<&Source> = once.outbox["s"].iter().map(|p| &p.source).collect();
        assert_eq!(sources, [&to, &to]);
        let line = serde_json::to_string(&adopt).unwrap();
        assert_eq!(
            line,
            r#"{"r":"adopt","from":"mount:proj","to":"9beads:/src/proj"}"#
        );
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), adopt);
    }

    /// A state file written by version 1 (mount sources, a pending prompt,
    /// the cursor) reads as it is.
    #[test]
    fn a_version_1_state_file_reads() {
        let text = r#"{"version":1,"announced":{"mount:proj":{"task:bd-1":{"session":"s"}}},
            "outbox":{"s":[{"seq":4,"source":"mount:proj","item":"task:bd-1","step":"bd-1",
            "plan":"mount:proj","text":"[reveille] Task bd-1 is ready"}]},"next_seq":5,
            "cursor":{"dev":1,"ino":2,"offset":300,"head":9,"last":8},"baselined":true}"#;
        let m: Memory = serde_json::from_str(text).unwrap();
        assert_eq!(m.version, 1);
        assert!(m.is_announced(&Source::Mount("proj".into()), &Item::Task("bd-1".into())));
        assert_eq!(m.pending_total(), 1);
        assert_eq!(m.cursor.map(|c| c.offset), Some(300));
    }

    #[test]
    fn records_and_memory_round_trip_through_json() {
        for item in [
            Item::Step("a:b\tc".into()),
            Item::AllDone,
            Item::Task("bd-1".into()),
            Item::Claim("bd-1".into(), "agent".into()),
            Item::Completed("bd-2".into()),
            Item::ChildDone("step two".into()),
            Item::Held("bd-3".into(), "A\ttitle".into()),
            Item::Claimed("bd-4".into()),
        ] {
            assert_eq!(Item::parse(&item.to_string()), Some(item));
        }
        let mut m = Memory::default();
        m.apply(&announce(7));
        let text = serde_json::to_string(&m).unwrap();
        let back: Memory = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
        let r = announce(3);
        let line = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
    }
}
