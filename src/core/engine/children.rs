//! Children: the sessions reveille creates for the parallel steps of a
//! plan (fan-out), and everything that happens to them.
//!
//! When several steps of one live plan are ready at once, the first goes to
//! the plan's session (the parent) and each further one, while the caps
//! allow, to a child created through ollie-9p `s/new` (`assign`). A child's
//! life is durable, in the memory's `children` (recorded before its create
//! is written, again once it is seen to exist), so a crash at any point
//! never makes a second child for one step: its id is derived from parent,
//! plan and step, and a second create of the same name creates nothing.
//!
//! Then: its step checked → the parent is told once, and the child is
//! killed once it is idle (`reap_idle`) unless children are kept; the child
//! gone (killed from outside, or never created) before its step is checked
//! → the step is handed back to the parent (`hand_back`) and stays with the
//! parent if it is announced again.
//!
//! The state is the children's share of the durable memory
//! (`core/memory/children.rs`: it must survive restarts and change only
//! through records), so this part is its rules over a `Cx`.

use crate::core::fnv::Fnv;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::context::Cx;
use super::ledger::Wake;
use super::observed::Observed;
use crate::core::close::Close;
use crate::core::effect::{Effect, Level, Log, Spawn};
use crate::core::plan::Plan;
use crate::core::prompt;
use crate::core::record::{Child, ChildState, Item, Note, Record};
use crate::core::session::Kind;
use crate::core::source::Source;

/// The longest part of the parent's id a child's id repeats, so a child's
/// id stays short whatever the parent's.
const PARENT_PREFIX_BYTES: usize = 48;

/// The id of the child for step `key` (shown as `label`) of `source`,
/// fanned out by `parent`: the same every time, so a retried create is a
/// no-op. It starts with the parent's id, so it is never one of ollie-9p's
/// fixed names under `s/` (`new`, `idx`, …), and holds only characters that
/// `s/new` (split on whitespace) and a path component take. It is of the
/// parent's kind (`codex:…` for a Codex parent, `opencode:ses_x` →
/// `opencode:ses_x.s2-…`): the child is created, reached and reaped through
/// the parent's backend.
pub(super) fn child_id(parent: &str, source: &Source, key: &str, label: &str) -> String {
    let mut h = Fnv::default();
    for part in [parent, &source.to_string(), key] {
        h.write(part.as_bytes());
        h.write(&[0]);
    }
    let (kind, bare) = Kind::of(parent);
    let mut head: String = bare
        .chars()
        .map(|c| if safe(c) { c } else { '_' })
        .collect();
    if head.len() > PARENT_PREFIX_BYTES {
        let mut end = PARENT_PREFIX_BYTES;
        while !head.is_char_boundary(end) {
            end -= 1;
        }
        head.truncate(end);
    }
    let label: String = label.chars().filter(|&c| safe(c)).take(16).collect();
    kind.qualify(&format!(
        "{head}.{label}-{:012x}",
        h.finish() & 0xffff_ffff_ffff
    ))
}

fn safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// Whether the parent already holds an open step of `source`: then further
/// ready steps are parallel work for children.
pub(super) fn parent_busy(cx: &Cx, source: &Source, parent: &str) -> bool {
    // The plans' share knows which steps are announced to whom.
    cx.ledger.plans().holds_step(source, parent)
}

/// The step a new child is for.
pub(super) struct StepRef<'a> {
    pub(super) item: &'a Item,
    pub(super) key: &'a str,
    pub(super) label: &'a str,
    pub(super) file: &'a str,
}

/// Fan a ready step out to a new child, if fan-out is on and the caps
/// allow: records the child (before it exists), asks for it, and returns
/// its id — the session the step's prompt goes to. `None`: the step goes to
/// the parent (off, capped, or handed back once already).
pub(super) fn assign(cx: &mut Cx, source: &Source, step: StepRef, parent: &str) -> Option<String> {
    let fan = cx.config.fanout;
    // Only plans of the plan directory: a session's own checklist (and a
    // plan.json, which `task_complete` does not tick) stays with its session.
    if fan.max_children == 0 || cx.baseline || !matches!(source, Source::Plan(_)) {
        return None;
    }
    let children = cx.ledger.children();
    let handed_back = children
        .of_step(source, step.item)
        .any(|(_, c)| c.state == ChildState::HandedBack);
    if handed_back {
        return None;
    }
    let of_plan = children
        .of_plan(source)
        .filter(|(_, c)| c.working())
        .count();
    let total = children.working();
    if of_plan >= fan.max_children || total >= fan.max_total {
        cx.fx.push(Effect::Log(
            Log::new(
                Level::Info,
                format!(
                    "{} goes to the parent: {of_plan} of max_children = {} children of this plan and {total} of max_total = {} work already",
                    step.label, fan.max_children, fan.max_total
                ),
            )
            .plan(source)
            .step(step.label)
            .session(parent),
        ));
        return None;
    }
    let id = child_id(parent, source, step.key, step.label);
    let child = Child {
        parent: parent.to_string(),
        source: source.clone(),
        item: step.item.clone(),
        step: step.label.to_string(),
        plan: step.file.to_string(),
        state: ChildState::Planned,
        since_unix_ms: None,
    };
    cx.ledger.record(
        Record::Child {
            id: id.clone(),
            child,
        },
        cx.fx,
    );
    cx.fx.push(Effect::Log(
        Log::new(
            Level::Info,
            format!("creating child session {id} for {}", step.label),
        )
        .plan(source)
        .step(step.label)
        .session(&id)
        .parent(parent)
        .file(step.file),
    ));
    cx.fx.push(Effect::Spawn(Spawn {
        child: id.clone(),
        parent: parent.to_string(),
    }));
    Some(id)
}

/// At start-up: children recorded but never seen to exist (a crash between
/// the record and the confirmation) are asked for again — the same id, so
/// one that was in fact created is only confirmed.
/// The children a read of `idx` begun at `begun_unix_ms` did not list,
/// though they were seen created before it began (`Input::IndexRead`): a
/// child confirmed after the read began may simply be too new for it.
pub(super) fn unlisted(cx: &Cx, begun_unix_ms: u64, listed: &BTreeSet<String>) -> Vec<String> {
    let children = cx.ledger.children().iter();
    children
        .filter(|(id, c)| {
            matches!(c.state, ChildState::Working | ChildState::Done)
                && c.since_unix_ms.is_none_or(|t| t < begun_unix_ms)
                && !listed.contains(*id)
        })
        .map(|(id, _)| id.clone())
        .collect()
}

pub(super) fn respawn_planned(cx: &mut Cx) {
    for (id, c) in cx.ledger.children().iter() {
        if c.state == ChildState::Planned {
            cx.fx.push(Effect::Spawn(Spawn {
                child: id.clone(),
                parent: c.parent.clone(),
            }));
        }
    }
}

/// The shell's answer to a `Spawn`. Returns the plan to read again when the
/// step was handed back to the parent.
pub(super) fn on_spawned(cx: &mut Cx, id: &str, outcome: Result<u64, String>) -> Option<Source> {
    let child = cx.ledger.children().get(id)?.clone();
    match outcome {
        Ok(at) if child.state == ChildState::Planned => {
            let log = Log::new(
                Level::Info,
                format!("child session {id} exists, working on {}", child.step),
            )
            .plan(&child.source)
            .step(&child.step)
            .session(id)
            .parent(&child.parent);
            let child = Child {
                state: ChildState::Working,
                since_unix_ms: Some(at),
                ..child
            };
            let id = id.to_string();
            cx.ledger.record(
                Record::Child {
                    id: id.clone(),
                    child,
                },
                cx.fx,
            );
            cx.fx.push(Effect::Log(log));
            // Its prompt waited for it to exist.
            cx.ledger.wake_lane(id);
            None
        }
        Ok(_) => None,
        Err(why) => hand_back(cx, id, &format!("it could not be created ({why})")),
    }
}

/// A session's observed state changed (`None`: no longer listed). Returns
/// the plan to read again when a step was handed back.
pub(super) fn on_state(cx: &mut Cx, id: &str, listed: bool) -> Option<Source> {
    let child = cx.ledger.children().get(id)?;
    if listed {
        return None;
    }
    match child.state {
        ChildState::Planned | ChildState::Working => {
            hand_back(cx, id, "it is gone (killed from outside)")
        }
        ChildState::Done => {
            let id = id.to_string();
            cx.ledger.record(Record::ChildEnded { id }, cx.fx);
            None
        }
        ChildState::HandedBack => None,
    }
}

/// The child is gone with its step open: the step goes back to the parent.
/// Its prompt is withdrawn and the step un-announced, so the plan's next
/// read announces it again — to the parent, since the record now says so.
fn hand_back(cx: &mut Cx, id: &str, why: &str) -> Option<Source> {
    let child = cx.ledger.children().get(id)?.clone();
    if !child.working() {
        return None;
    }
    cx.ledger.unannounce(
        &child.source,
        child.item.clone(),
        "its child session is gone",
        cx.fx,
    );
    cx.fx.push(Effect::Log(
        Log::new(
            Level::Warn,
            format!(
                "child session {id}: {why} before {} was checked; {} goes back to {}",
                child.step, child.step, child.parent
            ),
        )
        .plan(&child.source)
        .step(&child.step)
        .session(id)
        .parent(&child.parent),
    ));
    let source = child.source.clone();
    let child = Child {
        state: ChildState::HandedBack,
        ..child
    };
    let id = id.to_string();
    cx.ledger.record(Record::Child { id, child }, cx.fx);
    Some(source)
}

/// A step left the announced set (`checked`, or gone from its plan) while
/// `holder` held it. A child's step done: the parent is told once (not for
/// a step that was removed), and the child waits to be reaped. A step once
/// handed back forgets that.
pub(super) fn step_left(
    cx: &mut Cx,
    source: &Source,
    plan: &Plan,
    key: &str,
    checked: bool,
    holder: Option<&str>,
) {
    let item = Item::step(key);
    let handed: Vec<String> = cx
        .ledger
        .children()
        .of_step(source, &item)
        .filter(|(_, c)| c.state == ChildState::HandedBack)
        .map(|(id, _)| id.clone())
        .collect();
    for id in handed {
        cx.ledger.record(Record::ChildEnded { id }, cx.fx);
    }
    let Some(id) = holder else { return };
    let Some(child) = cx.ledger.children().get(id).cloned() else {
        return;
    };
    if child.item != item || !child.working() {
        return;
    }
    let parent = child.parent.clone();
    let text = completed_text(plan, key, &child, id);
    let child = Child {
        state: ChildState::Done,
        ..child
    };
    let (label, file) = (child.step.clone(), child.plan.clone());
    cx.ledger.record(
        Record::Child {
            id: id.to_string(),
            child,
        },
        cx.fx,
    );
    if !checked || cx.ledger.plans().told_child_done(source, key) {
        return;
    }
    let done = Note::ChildDone(key.to_string()).into();
    let wake = Wake {
        item: done,
        session: &parent,
        label,
        plan: file,
        text,
    };
    cx.ledger
        .announce(cx.config.outbox_cap, source, wake, cx.fx);
}

/// A plan ended (done, abandoned, deleted): its working children have
/// nothing left to do — they are killed once idle, like a child whose step
/// is done, and their steps are not handed back (the plan wakes no one).
pub(super) fn plan_ended(cx: &mut Cx, source: &Source, why: &str) {
    let of_plan: Vec<(String, Child)> = cx
        .ledger
        .children()
        .of_plan(source)
        .map(|(id, c)| (id.clone(), c.clone()))
        .collect();
    for (id, child) in of_plan {
        match child.state {
            ChildState::Planned | ChildState::Working => {
                cx.fx.push(Effect::Log(
                    Log::new(Level::Info, format!("child session {id} is done: {why}"))
                        .plan(source)
                        .step(&child.step)
                        .session(&id)
                        .parent(&child.parent),
                ));
                let child = Child {
                    state: ChildState::Done,
                    ..child
                };
                cx.ledger.record(Record::Child { id, child }, cx.fx);
            }
            ChildState::HandedBack => cx.ledger.record(Record::ChildEnded { id }, cx.fx),
            ChildState::Done => {}
        }
    }
}

/// Kill every child whose step is done and which is idle now, unless
/// children are kept.
pub(super) fn reap_idle(cx: &mut Cx, observed: &BTreeMap<String, Observed>) {
    if cx.config.fanout.keep_children {
        return;
    }
    let due: Vec<(String, Child)> = cx
        .ledger
        .children()
        .iter()
        .filter(|(id, c)| {
            c.state == ChildState::Done && observed.get(*id).is_some_and(|o| o.state.is_idle())
        })
        .map(|(id, c)| (id.clone(), c.clone()))
        .collect();
    for (id, c) in due {
        cx.ledger
            .record(Record::ChildEnded { id: id.clone() }, cx.fx);
        cx.fx.push(Effect::Log(
            Log::new(
                Level::Info,
                format!(
                    "killing child session {id}: {} is checked and it is idle",
                    c.step
                ),
            )
            .plan(&c.source)
            .step(&c.step)
            .session(&id)
            .parent(&c.parent),
        ));
        cx.fx.push(Effect::Reap { child: id });
    }
}

/// What a child is told: it is a sub-agent for exactly one step.
pub(super) fn child_prompt(plan: &Plan, i: usize, path: &Path, parent: &str) -> String {
    let step = &plan.steps[i];
    let mut out = format!(
        "[reveille] You are a sub-agent of session {parent}, created for exactly one step of \"{}\": {}: {}\n",
        plan.goal, step.label, step.title
    );
    for line in step.description.lines() {
        out.push_str(line);
        out.push('\n');
    }
    let close = Close::PlanFile {
        title: step.as_written(),
        path,
    };
    out.push_str(&format!(
        "Plan file: {}\nDo this one step only: other steps of the plan belong to other sessions.\nWhen it is finished, {close}, then stop.\n{}\n",
        path.display(),
        prompt::SIGNATURE
    ));
    out
}

/// What the parent is told when a child's step is checked.
fn completed_text(plan: &Plan, key: &str, child: &Child, id: &str) -> String {
    let title = plan
        .steps
        .iter()
        .find(|s| s.key == key)
        .map_or(key, |s| s.title.as_str());
    format!(
        "[reveille] {} was completed by child {id}: {title}\nPlan: \"{}\" ({})\n",
        child.step, plan.goal, child.plan
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_ids_are_deterministic_bounded_and_safe() {
        let plan = Source::Plan("20261130T101500_a1b2c3d4".into());
        let a = child_id("agent", &plan, "write the docs", "s2");
        assert_eq!(a, child_id("agent", &plan, "write the docs", "s2"));
        assert_ne!(a, child_id("agent", &plan, "write the tests", "s3"));
        assert_ne!(a, child_id("other", &plan, "write the docs", "s2"));
        assert!(a.starts_with("agent.s2-"), "{a}");
        let long = child_id(&"é x".repeat(100), &plan, "k", "s1");
        assert!(
            long.len() <= PARENT_PREFIX_BYTES + 1 + 16 + 1 + 12,
            "{long}"
        );
        assert!(long.chars().all(safe), "{long}");
        assert!(crate::core::session::check_name(&long).is_ok());
        for reserved in [
            "new", "idx", "ls", "kill", "sh", "b", "bfg", "bbg", "cleanup",
        ] {
            assert_ne!(child_id(reserved, &plan, "k", "s1"), reserved);
        }
    }

    #[test]
    fn a_child_is_of_its_parents_kind() {
        let plan = Source::Plan("20261130T101500_a1b2c3d4".into());
        let parent = "codex:019a2b3c-0000-7000-8000-00000000abcd";
        let c = child_id(parent, &plan, "write the docs", "s2");
        let (kind, bare) = Kind::of(&c);
        assert_eq!(kind, Kind::Codex, "{c}");
        assert!(
            bare.starts_with("019a2b3c-0000-7000-8000-00000000abcd.s2-"),
            "{c}"
        );
        assert!(bare.chars().all(safe), "{c}");
        assert_ne!(
            c,
            child_id("opencode:019a2b3c", &plan, "write the docs", "s2")
        );
        assert_eq!(Kind::of(&child_id("agent", &plan, "k", "s1")).0, Kind::Dir);
        let o = child_id("opencode:ses_x", &plan, "write the docs", "s2");
        assert_eq!(Kind::of(&o).0, Kind::Opencode, "{o}");
        assert!(o.starts_with("opencode:ses_x.s2-"), "{o}");
        assert!(crate::core::session::check_session(&o).is_ok());
        // Another kind's parent of the same id is another child.
        assert_ne!(o, child_id("codex:ses_x", &plan, "write the docs", "s2"));
        let dir = child_id("ses_x", &plan, "write the docs", "s2");
        assert_eq!(Kind::of(&dir).0, Kind::Dir, "{dir}");
    }
}
