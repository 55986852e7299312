//! The plans' share of the memory: per plan (markdown, plan.json, session
//! checklist), the steps announced and not yet checked, and the plan's
//! notes — the all-done nudge told, a child's step done told to the
//! parent. It applies the records about plan sources.

use std::ops::Deref;

use serde::Serialize;

use super::announced::Announcements;
use crate::core::record::{Item, Note, Record, Work};
use crate::core::source::Source;

/// Per plan, its announced steps and notes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(transparent)]
pub struct PlanMemory(Announcements);

impl PlanMemory {
    /// The share of `announced` that is about plans.
    pub(super) fn new(announced: Announcements) -> PlanMemory {
        PlanMemory(announced)
    }

    /// Apply `record` if it is about a plan.
    pub fn apply(&mut self, record: &Record) {
        self.0.apply(record, Source::is_plan);
    }

    /// Whether the step with `key` is announced.
    pub fn is_step_announced(&self, source: &Source, key: &str) -> bool {
        self.0.contains(source, &Item::step(key))
    }

    /// The keys of the announced steps of `source`, in order.
    pub fn step_keys<'a>(&'a self, source: &Source) -> impl Iterator<Item = &'a str> + 'a {
        let items = self
            .0
            .get(source)
            .into_iter()
            .flat_map(|items| items.keys());
        items.filter_map(Item::step_key)
    }

    /// Whether `session` holds an announced step of `source`.
    pub fn holds_step(&self, source: &Source, session: &str) -> bool {
        self.0.get(source).is_some_and(|items| {
            items.iter().any(|(i, a)| {
                matches!(i, Item::Work(Work::Step(_))) && a.session.as_deref() == Some(session)
            })
        })
    }

    /// Whether the all-done nudge of `source` was told (or is pending).
    pub fn told_all_done(&self, source: &Source) -> bool {
        self.0.contains(source, &Note::AllDone.into())
    }

    /// Whether the parent was told that a child completed step `key`.
    pub fn told_child_done(&self, source: &Source, key: &str) -> bool {
        self.0
            .contains(source, &Note::ChildDone(key.to_string()).into())
    }
}

impl Deref for PlanMemory {
    type Target = Announcements;

    fn deref(&self) -> &Announcements {
        &self.0
    }
}
