//! Pending prompts follow their task's mount. A prompt about a 9beads task
//! says where the task is closed (`<beads_root>/<mount>/complete`); once
//! the mount has a new name — 9beads restarted and the project was mounted
//! again — a prompt still waiting in an outbox would send its agent to a
//! mount that no longer exists, and 9beads would drop the write without a
//! word. So at a source's first ready read after its name changed (or
//! after this daemon started, when it cannot know which name a prompt was
//! written for), each of its pending prompts is rendered again, and one
//! whose text changed is withdrawn and announced anew with the new text.

use std::collections::BTreeSet;

use super::text::{self, Facts};
use super::{ReadyTask, Tasks};
use crate::core::engine::context::Cx;
use crate::core::engine::ledger::Wake;
use crate::core::record::{Item, Note, Pending, Work};
use crate::core::source::Source;

impl Tasks {
    /// Write `source`'s pending prompts again for `mount`, where their text
    /// changed. `ready` is the mount's ready list just read: a ready
    /// task's prompt takes its current title; one no longer ready is left
    /// to the ready-set diff, which withdraws it.
    pub(super) fn retell(
        &mut self,
        source: &Source,
        mount: &str,
        ready: &[ReadyTask],
        cx: &mut Cx,
    ) {
        let pending: Vec<(String, Pending)> = cx
            .ledger
            .outbox()
            .of_source(source)
            .map(|(s, p)| (s.to_string(), p.clone()))
            .collect();
        // Withdrawing takes every pending prompt of an item: once each.
        let mut done: BTreeSet<Item> = BTreeSet::new();
        for (session, p) in pending {
            if !done.insert(p.item.clone()) {
                continue;
            }
            let Some(text) = self.text_now(&p.item, source, mount, &session, ready, cx) else {
                continue;
            };
            if text != p.text {
                self.tell_again(source, &session, p, text, cx);
            }
        }
    }

    /// What a prompt about `item` says now, for the kinds that have one.
    fn text_now(
        &self,
        item: &Item,
        source: &Source,
        mount: &str,
        session: &str,
        ready: &[ReadyTask],
        cx: &Cx,
    ) -> Option<String> {
        let template = text::template(cx.config, item)?;
        let (id, assignee, title) = match item {
            Item::Work(Work::Task(id)) => {
                let task = ready.iter().find(|t| t.id == *id)?;
                (id, task.assignee.as_deref(), task.title.clone())
            }
            Item::Note(Note::Claim(id, who)) => (id, Some(who.as_str()), self.title_of(source, id)),
            Item::Note(Note::Completed(id)) => (id, None, self.title_of(source, id)),
            _ => return None,
        };
        let name = source.to_string();
        let facts = Facts {
            id,
            title: &title,
            mount,
            assignee,
            session,
            source: &name,
        };
        Some(text::render(cx.config, template, &facts))
    }

    /// Withdraw `p` and announce its item again with `text`. A prompt
    /// being written cannot be taken back: it is left as it is.
    fn tell_again(
        &mut self,
        source: &Source,
        session: &str,
        p: Pending,
        text: String,
        cx: &mut Cx,
    ) {
        let why = "its task's mount has a new name";
        if cx.ledger.withdraw_item(source, &p.item, why, cx.fx) == 0 {
            return;
        }
        let wake = Wake {
            item: p.item.clone(),
            session,
            label: p.step,
            // A tracker prompt's "plan" is its source, adopted or not.
            plan: source.to_string(),
            text,
        };
        if !cx
            .ledger
            .announce(cx.config.outbox_cap, source, wake, cx.fx)
        {
            // No room after all: unannounced, so it is told when there is.
            cx.ledger.unannounce(source, p.item, why, cx.fx);
        }
    }
}
