//! The children's share of the memory: each child session reveille made
//! for one step of a plan (fan-out), by id, as it stands now. Durable, so
//! a crash at any point never makes a second child for one step; moved
//! only by `Child` and `ChildEnded` records. The rules over it are in
//! `core/engine/children.rs`.

use std::collections::{btree_map, BTreeMap};

use serde::{Deserialize, Serialize};

use crate::core::record::{Child, ChildState, Item, Record};
use crate::core::source::Source;

/// The child sessions reveille made, by session id.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Children(BTreeMap<String, Child>);

impl Child {
    /// Whether it still works on its step (and so counts against the caps).
    pub fn working(&self) -> bool {
        matches!(self.state, ChildState::Planned | ChildState::Working)
    }
}

impl Children {
    /// Apply `record` if it is about a child. Idempotent: each record says
    /// where the child stands, not how it moved.
    pub fn apply(&mut self, record: &Record) {
        match record {
            Record::Child { id, child } => {
                self.0.insert(id.clone(), child.clone());
            }
            Record::ChildEnded { id } => {
                self.0.remove(id);
            }
            _ => {}
        }
    }

    /// The child `id`.
    pub fn get(&self, id: &str) -> Option<&Child> {
        self.0.get(id)
    }

    pub fn contains_key(&self, id: &str) -> bool {
        self.0.contains_key(id)
    }

    /// The parent of `id`, when it is a child reveille made.
    pub fn parent_of(&self, id: &str) -> Option<&str> {
        self.0.get(id).map(|c| c.parent.as_str())
    }

    /// Whether `id` is a child recorded but not yet seen to exist.
    pub fn is_planned(&self, id: &str) -> bool {
        self.0
            .get(id)
            .is_some_and(|c| c.state == ChildState::Planned)
    }

    /// Every child, by id, in order.
    pub fn iter(&self) -> btree_map::Iter<'_, String, Child> {
        self.0.iter()
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.keys()
    }

    /// The children of the step `item` of `source`.
    pub fn of_step<'a>(
        &'a self,
        source: &'a Source,
        item: &'a Item,
    ) -> impl Iterator<Item = (&'a String, &'a Child)> + 'a {
        self.of_plan(source).filter(move |(_, c)| c.item == *item)
    }

    /// The children of the plan `source`.
    pub fn of_plan<'a>(
        &'a self,
        source: &'a Source,
    ) -> impl Iterator<Item = (&'a String, &'a Child)> + 'a {
        self.0.iter().filter(move |(_, c)| c.source == *source)
    }

    /// How many children still work, in all.
    pub fn working(&self) -> usize {
        self.0.values().filter(|c| c.working()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a Children {
    type Item = (&'a String, &'a Child);
    type IntoIter = btree_map::Iter<'a, String, Child>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
