//! A tracker task's notes in the announced set: the claims and completions
//! told about it (kept so a truncated log read again tells nothing twice)
//! and who holds it (`Note::Held`), so a `completed` event, which names no
//! one, reaches the session that had the task. The notes are the tasks'
//! share of the memory (`core/memory/tasks.rs`); here, their rules.

use crate::core::engine::context::Cx;
use crate::core::record::{Item, Note, Record, Work};
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
    let item = Note::Held(id.to_string(), title[..cut].to_string()).into();
    cx.ledger.mark(source, item, Some(session), cx.fx);
}

/// Mark task `id` as claimed by `session`'s own assignee: its open work.
pub(super) fn mark_claimed(source: &Source, id: &str, session: &str, cx: &mut Cx) {
    let item = Work::Claimed(id.to_string()).into();
    cx.ledger.mark(source, item, Some(session), cx.fx);
}

/// Task `id` is no longer claimed work (closed).
pub(super) fn unmark_claimed(source: &Source, id: &str, cx: &mut Cx) {
    let item = Work::Claimed(id.to_string()).into();
    if cx.ledger.tasks().contains(source, &item) {
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
    if let Some(item) = cx.ledger.tasks().held(source, id) {
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
    let notes = cx.ledger.tasks().notes_of(source, id);
    forget(source, notes, cx);
}

/// Keep the notes of one source bounded.
pub(super) fn prune_notes(source: &Source, cx: &mut Cx) {
    let notes = cx.ledger.tasks().notes(source);
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
