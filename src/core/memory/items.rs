//! The announced items of one source: a sorted list while there are few,
//! a map once there are many.
//!
//! A plan has a step or two announced at a time, and a `BTreeMap` with one
//! entry still allocates a whole node (eleven keys and values, ~750 bytes
//! here): with 10,000 plans that was a third of the daemon's memory. A
//! tracker mount can have thousands of tasks announced, where a sorted
//! list would make every insert a long copy; past `FEW` entries the map
//! takes over. Both iterate in key order, and both serialize as the same
//! JSON object, so the persisted state does not change.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Announced;
use crate::core::record::Item;

/// Up to this many entries are kept in a sorted list.
const FEW: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Items(Repr);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Repr {
    Few(Vec<(Item, Announced)>),
    Many(BTreeMap<Item, Announced>),
}

impl Default for Items {
    fn default() -> Items {
        Items(Repr::Few(Vec::new()))
    }
}

impl Items {
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Few(v) => v.len(),
            Repr::Many(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, item: &Item) -> Option<&Announced> {
        match &self.0 {
            Repr::Few(v) => v
                .binary_search_by(|(k, _)| k.cmp(item))
                .ok()
                .map(|i| &v[i].1),
            Repr::Many(m) => m.get(item),
        }
    }

    pub fn get_mut(&mut self, item: &Item) -> Option<&mut Announced> {
        match &mut self.0 {
            Repr::Few(v) => match v.binary_search_by(|(k, _)| k.cmp(item)) {
                Ok(i) => Some(&mut v[i].1),
                Err(_) => None,
            },
            Repr::Many(m) => m.get_mut(item),
        }
    }

    pub fn contains_key(&self, item: &Item) -> bool {
        self.get(item).is_some()
    }

    /// Insert or replace; returns the entry it replaced.
    pub fn insert(&mut self, item: Item, announced: Announced) -> Option<Announced> {
        match &mut self.0 {
            Repr::Few(v) => match v.binary_search_by(|(k, _)| k.cmp(&item)) {
                Ok(i) => Some(std::mem::replace(&mut v[i].1, announced)),
                Err(i) if v.len() < FEW => {
                    v.insert(i, (item, announced));
                    None
                }
                Err(_) => {
                    let mut m: BTreeMap<Item, Announced> = std::mem::take(v).into_iter().collect();
                    m.insert(item, announced);
                    self.0 = Repr::Many(m);
                    None
                }
            },
            Repr::Many(m) => m.insert(item, announced),
        }
    }

    pub fn remove(&mut self, item: &Item) -> Option<Announced> {
        match &mut self.0 {
            Repr::Few(v) => match v.binary_search_by(|(k, _)| k.cmp(item)) {
                Ok(i) => Some(v.remove(i).1),
                Err(_) => None,
            },
            Repr::Many(m) => m.remove(item),
        }
    }

    /// The first entry at or after `from`, in key order.
    pub fn first_from(&self, from: &Item) -> Option<(&Item, &Announced)> {
        match &self.0 {
            Repr::Few(v) => v
                .get(v.partition_point(|(k, _)| k < from))
                .map(|(k, a)| (k, a)),
            Repr::Many(m) => m.range(from..).next(),
        }
    }

    /// Keep the entries `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&Item, &mut Announced) -> bool) {
        match &mut self.0 {
            Repr::Few(v) => v.retain_mut(|(k, a)| keep(k, a)),
            Repr::Many(m) => m.retain(|k, a| keep(k, a)),
        }
    }

    /// In key order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.0 {
            Repr::Few(v) => Iter::Few(v.iter()),
            Repr::Many(m) => Iter::Many(m.iter()),
        }
    }

    /// In key order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&Item, &mut Announced)> {
        let (few, many) = match &mut self.0 {
            Repr::Few(v) => (Some(v.iter_mut().map(|(k, a)| (&*k, a))), None),
            Repr::Many(m) => (None, Some(m.iter_mut())),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }

    pub fn keys(&self) -> impl Iterator<Item = &Item> {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &Announced> {
        self.iter().map(|(_, a)| a)
    }
}

/// The entries of `Items` in key order.
pub enum Iter<'a> {
    Few(std::slice::Iter<'a, (Item, Announced)>),
    Many(std::collections::btree_map::Iter<'a, Item, Announced>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Item, &'a Announced);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Few(it) => it.next().map(|(k, a)| (k, a)),
            Iter::Many(it) => it.next(),
        }
    }
}

impl<'a> IntoIterator for &'a Items {
    type Item = (&'a Item, &'a Announced);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl std::ops::Index<&Item> for Items {
    type Output = Announced;

    fn index(&self, item: &Item) -> &Announced {
        self.get(item).expect("no such announced item")
    }
}

impl FromIterator<(Item, Announced)> for Items {
    fn from_iter<I: IntoIterator<Item = (Item, Announced)>>(iter: I) -> Items {
        let mut items = Items::default();
        for (k, a) in iter {
            items.insert(k, a);
        }
        items
    }
}

impl Serialize for Items {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Items {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Items, D::Error> {
        let map = BTreeMap::<Item, Announced>::deserialize(d)?;
        Ok(if map.len() <= FEW {
            Items(Repr::Few(map.into_iter().collect()))
        } else {
            Items(Repr::Many(map))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn announced(n: u32) -> Announced {
        Announced {
            session: Some(format!("s{n}")),
            baseline: false,
            reminded: n,
            gave_up: false,
        }
    }

    proptest! {
        /// Whatever is inserted and removed, `Items` holds what a
        /// `BTreeMap` would, in the same order, and serializes alike,
        /// across the change from list to map.
        #[test]
        fn items_behave_as_a_btreemap(ops in proptest::collection::vec((any::<bool>(), 0u32..40), 0..120)) {
            let mut items = Items::default();
            let mut model = BTreeMap::new();
            for (insert, k) in ops {
                let key = Item::step(format!("step {k}"));
                if insert {
                    prop_assert_eq!(items.insert(key.clone(), announced(k)), model.insert(key, announced(k)));
                } else {
                    prop_assert_eq!(items.remove(&key), model.remove(&key));
                }
                prop_assert_eq!(items.len(), model.len());
                let got: Vec<_> = items.iter().collect();
                let want: Vec<_> = model.iter().collect();
                prop_assert_eq!(got, want);
                let from = Item::step(format!("step {}", k / 2));
                prop_assert_eq!(items.first_from(&from), model.range(&from..).next());
            }
            let json = serde_json::to_string(&items).unwrap();
            prop_assert_eq!(&json, &serde_json::to_string(&model).unwrap());
            let back: Items = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(back.iter().collect::<Vec<_>>(), model.iter().collect::<Vec<_>>());
        }
    }
}
