//! A tracker task's notes in the announced set: the claims and completions
//! told about it (kept so a truncated log read again tells nothing twice)
//! and who holds it (`Item::Held`), so a `completed` event, which names no
//! one, reaches the session that had the task.

use crate::core::engine::context::Cx;
use crate::core::record::{Announced, Item, Memory, Record};
use crate::core::source::Source;

/// Claim, completion and held notes kept per source; beyond this the
/// oldest ids are forgotten.
const MAX_NOTES: usize = 4096;

/// Longest title a `Held` note keeps, in bytes.
const MAX_HELD_TITLE: usize = 512;

/// Record that `session` holds task `id` now. The title is cut to
/// `MAX_HELD_TITLE` bytes: it is part of a key in the state file.
pub(super) fn hold(source: &Source, id: &str, title: &str, session: &str, cx: &mut Cx) {
    forget_held(source, id, cx);
    let mut cut = title.len().min(MAX_HELD_TITLE);
    while !title.is_char_boundary(cut) {
        cut -= 1;
    }
    let item = Item::Held(id.to_string(), title[..cut].to_string());
    cx.ledger.mark(source, item, Some(session), cx.fx);
}

/// The `Held` note of task `id`, if any: found by a range lookup (the
/// notes of one id sort together), not a scan of every announced item.
fn held_item<'m>(
    memory: &'m Memory,
    source: &Source,
    id: &str,
) -> Option<(&'m Item, &'m Announced)> {
    let items = memory.announced.get(source)?;
    let from = Item::Held(id.to_string(), String::new());
    items
        .first_from(&from)
        .filter(|(item, _)| matches!(item, Item::Held(c, _) if c == id))
}

/// Who holds task `id`: (session, title), if anyone.
pub(super) fn holder(memory: &Memory, source: &Source, id: &str) -> Option<(String, String)> {
    match held_item(memory, source, id)? {
        (Item::Held(_, title), a) => Some((a.session.clone()?, title.clone())),
        _ => None,
    }
}

/// Mark task `id` as claimed by `session`'s own assignee: its open work.
pub(super) fn mark_claimed(source: &Source, id: &str, session: &str, cx: &mut Cx) {
    let item = Item::Claimed(id.to_string());
    cx.ledger.mark(source, item, Some(session), cx.fx);
}

/// Task `id` is no longer claimed work (closed).
pub(super) fn unmark_claimed(source: &Source, id: &str, cx: &mut Cx) {
    let item = Item::Claimed(id.to_string());
    if cx.ledger.memory.is_announced(source, &item) {
        cx.ledger.record(
            Record::Forget {
                source: source.clone(),
                item,
            },
            cx.fx,
        );
    }
}

/// Forget who holds task `id` (it was closed, or is held anew).
pub(super) fn forget_held(source: &Source, id: &str, cx: &mut Cx) {
    if let Some((item, _)) = held_item(&cx.ledger.memory, source, id) {
        let item = item.clone();
        cx.ledger.record(
            Record::Forget {
                source: source.clone(),
                item,
            },
            cx.fx,
        );
    }
}

/// Forget every note of a task.
pub(super) fn forget_notes(source: &Source, id: &str, cx: &mut Cx) {
    let notes = cx.ledger.memory.announced_where(source, |i| match i {
        Item::Claim(c, _) | Item::Completed(c) | Item::Held(c, _) | Item::Claimed(c) => c == id,
        _ => false,
    });
    forget(source, notes, cx);
}

/// Keep the notes of one source bounded.
pub(super) fn prune_notes(source: &Source, cx: &mut Cx) {
    let notes = cx.ledger.memory.announced_where(source, |i| {
        matches!(
            i,
            Item::Claim(..) | Item::Completed(_) | Item::Held(..) | Item::Claimed(_)
        )
    });
    if notes.len() < MAX_NOTES {
        return;
    }
    forget(source, notes.into_iter().take(MAX_NOTES / 4).collect(), cx);
}

fn forget(source: &Source, items: Vec<Item>, cx: &mut Cx) {
    for item in items {
        cx.ledger.record(
            Record::Forget {
                source: source.clone(),
                item,
            },
            cx.fx,
        );
    }
}
