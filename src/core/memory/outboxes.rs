//! The outboxes' share of the memory: per session, the prompts recorded
//! and not yet delivered, in order. A prompt enters with its `Announce` or
//! `Remind` record and leaves with `Delivered` or `Withdrawn`; `Adopt`
//! moves pending prompts to their source's new name. When each goes out is
//! decided in `core/engine/outbox.rs`.

use std::collections::{btree_map, BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::core::record::{Pending, Record};
use crate::core::source::Source;

/// Per session, its pending prompts in delivery order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Outboxes(BTreeMap<String, VecDeque<Pending>>);

impl Outboxes {
    /// Apply `record` if it queues or takes out a prompt. Idempotent: a
    /// prompt is queued once per sequence number.
    pub fn apply(&mut self, record: &Record) {
        match record {
            Record::Announce {
                session: Some(session),
                pending: Some(p),
                ..
            } => self.queue(session, p),
            Record::Remind {
                session, pending, ..
            } => self.queue(session, pending),
            Record::Delivered { session, seq } | Record::Withdrawn { session, seq } => {
                if let Some(queue) = self.0.get_mut(session) {
                    queue.retain(|p| p.seq != *seq);
                    if queue.is_empty() {
                        self.0.remove(session);
                    }
                }
            }
            Record::Adopt { from, to } if from != to => {
                for p in self.0.values_mut().flatten() {
                    if p.source == *from {
                        p.source = to.clone();
                    }
                }
            }
            _ => {}
        }
    }

    fn queue(&mut self, session: &str, p: &Pending) {
        let queue = self.0.entry(session.to_string()).or_default();
        if !queue.iter().any(|q| q.seq == p.seq) {
            queue.push_back(p.clone());
        }
    }

    /// The outbox of `session`.
    pub fn get(&self, session: &str) -> Option<&VecDeque<Pending>> {
        self.0.get(session)
    }

    /// How many prompts wait for `session`.
    pub fn len_of(&self, session: &str) -> usize {
        self.0.get(session).map_or(0, VecDeque::len)
    }

    /// The prompt `seq` of `session`.
    pub fn pending(&self, session: &str, seq: u64) -> Option<&Pending> {
        self.0.get(session)?.iter().find(|p| p.seq == seq)
    }

    /// The first prompt waiting for `session`.
    pub fn front(&self, session: &str) -> Option<&Pending> {
        self.0.get(session)?.front()
    }

    /// Every session with prompts pending, and its outbox, in order.
    pub fn iter(&self) -> btree_map::Iter<'_, String, VecDeque<Pending>> {
        self.0.iter()
    }

    /// Every session with prompts pending.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.keys()
    }

    /// Every pending prompt, session by session.
    pub fn prompts(&self) -> impl Iterator<Item = &Pending> {
        self.0.values().flatten()
    }

    /// The pending prompts about `source`, with their sessions.
    pub fn of_source<'a>(
        &'a self,
        source: &'a Source,
    ) -> impl Iterator<Item = (&'a str, &'a Pending)> + 'a {
        let all = self
            .0
            .iter()
            .flat_map(|(s, q)| q.iter().map(move |p| (s, p)));
        all.filter(move |(_, p)| p.source == *source)
            .map(|(s, p)| (s.as_str(), p))
    }

    /// Whether any prompt about `source` is pending.
    pub fn holds_source(&self, source: &Source) -> bool {
        self.prompts().any(|p| p.source == *source)
    }

    /// Total prompts pending across sessions.
    pub fn total(&self) -> usize {
        self.0.values().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a Outboxes {
    type Item = (&'a String, &'a VecDeque<Pending>);
    type IntoIter = btree_map::Iter<'a, String, VecDeque<Pending>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
