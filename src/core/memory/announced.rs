//! Per source, the items announced and not yet checked or closed — the
//! shape that plans' and tasks' shares of the memory both have — and the
//! records that move them: `Announce`, `Forget`, `DropSource`, `Remind`
//! (its count), `GaveUp`, `RemindReset` and `Adopt`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Items;
use crate::core::record::{Item, Record};
use crate::core::source::Source;

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
    /// Given up on (still open after its last reminder) and the person
    /// told, since the session last made progress in its source: durable,
    /// so a restart does not tell it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gave_up: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Per source, its announced items.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Announcements(BTreeMap<Source, Items>);

impl Announcements {
    /// Apply `record` if it is about a source `owns` says is this share's.
    /// Idempotent, as every record is.
    pub(super) fn apply(&mut self, record: &Record, owns: fn(&Source) -> bool) {
        match record {
            Record::Announce {
                source,
                item,
                session,
                baseline,
                ..
            } if owns(source) => {
                let announced = Announced {
                    session: session.clone(),
                    baseline: *baseline,
                    reminded: 0,
                    gave_up: false,
                };
                let items = self.0.entry(source.clone()).or_default();
                items.insert(item.clone(), announced);
            }
            Record::Forget { source, item } if owns(source) => {
                if let Some(items) = self.0.get_mut(source) {
                    items.remove(item);
                    if items.is_empty() {
                        self.0.remove(source);
                    }
                }
            }
            Record::DropSource { source } if owns(source) => {
                self.0.remove(source);
            }
            Record::Remind {
                source, item, n, ..
            } if owns(source) => {
                let entry = self.0.get_mut(source).and_then(|i| i.get_mut(item));
                if let Some(a) = entry {
                    a.reminded = a.reminded.max(*n);
                }
            }
            Record::GaveUp { source, item, .. } if owns(source) => {
                let entry = self.0.get_mut(source).and_then(|i| i.get_mut(item));
                if let Some(a) = entry {
                    a.gave_up = true;
                }
            }
            Record::RemindReset { source, session } if owns(source) => {
                let items = self.0.get_mut(source).into_iter();
                let entries = items.flat_map(Items::iter_mut);
                for (_, a) in entries.filter(|(_, a)| a.session.as_ref() == Some(session)) {
                    a.reminded = 0;
                    a.gave_up = false;
                }
            }
            Record::Adopt { from, to } if owns(from) && owns(to) => self.adopt(from, to),
            _ => {}
        }
    }

    /// Apply `Adopt`: idempotent, since `from` is empty once adopted.
    fn adopt(&mut self, from: &Source, to: &Source) {
        if from == to {
            return;
        }
        if let Some(items) = self.0.remove(from) {
            let into = self.0.entry(to.clone()).or_default();
            for (item, announced) in &items {
                if !into.contains_key(item) {
                    into.insert(item.clone(), announced.clone());
                }
            }
        }
    }

    /// Split into the sources `keep` picks and the rest (loading a state
    /// file, whose maps are checked against each source's kind).
    pub(super) fn split(self, keep: fn(&Source) -> bool) -> (Announcements, Announcements) {
        let (picked, rest) = self.0.into_iter().partition(|(s, _)| keep(s));
        (Announcements(picked), Announcements(rest))
    }

    /// Every source of `other` too (loading: a source listed twice keeps
    /// what was read first).
    pub(super) fn extend(&mut self, other: Announcements) {
        for (source, items) in other.0 {
            self.0.entry(source).or_insert(items);
        }
    }

    /// The announced items of `source`.
    pub fn get(&self, source: &Source) -> Option<&Items> {
        self.0.get(source)
    }

    /// What is remembered of `item` of `source`.
    pub fn entry(&self, source: &Source, item: &Item) -> Option<&Announced> {
        self.0.get(source).and_then(|items| items.get(item))
    }

    /// Whether `item` of `source` is in the announced set.
    pub fn contains(&self, source: &Source, item: &Item) -> bool {
        self.entry(source, item).is_some()
    }

    /// Whether anything of `source` is announced.
    pub fn has(&self, source: &Source) -> bool {
        self.0.contains_key(source)
    }

    /// How many items of `source` are announced.
    pub fn len_of(&self, source: &Source) -> usize {
        self.0.get(source).map_or(0, Items::len)
    }

    /// How many items are announced, over every source.
    pub fn count(&self) -> usize {
        self.0.values().map(Items::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every source with announced items, in order.
    pub fn sources(&self) -> impl Iterator<Item = &Source> {
        self.0.keys()
    }

    /// Every source and its announced items, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&Source, &Items)> {
        self.0.iter()
    }

    /// The announced items of `source` that `keep` picks, in order.
    pub fn items_where(&self, source: &Source, keep: impl Fn(&Item) -> bool) -> Vec<Item> {
        self.0
            .get(source)
            .map(|items| items.keys().filter(|i| keep(i)).cloned().collect())
            .unwrap_or_default()
    }

    /// The session `item` of `source` was announced to, unless it is a
    /// baseline entry.
    pub fn announced_to(&self, source: &Source, item: &Item) -> Option<&str> {
        let a = self.entry(source, item).filter(|a| !a.baseline)?;
        a.session.as_deref()
    }

    /// Whether `session` was reminded of anything of `source` since its
    /// last progress there.
    pub fn reminded_in(&self, source: &Source, session: &str) -> bool {
        self.0.get(source).is_some_and(|items| {
            items
                .values()
                .any(|a| a.session.as_deref() == Some(session) && (a.reminded > 0 || a.gave_up))
        })
    }
}
