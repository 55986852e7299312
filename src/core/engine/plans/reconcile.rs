//! The wake rule for one plan (`reconcile_plan`): its ready steps diffed
//! against what was announced for it — leave, withdraw the stale, announce
//! the new (to the plan's session, or a child for parallel work), nudge
//! when all is done; on a first start, the baseline instead.

use std::collections::BTreeSet;
use std::path::Path;

use super::text::{display_name, done_name, render_queue, render_step};
use super::{Origin, Plans};
use crate::core::engine::children;
use crate::core::engine::config::{EngineConfig, Mode};
use crate::core::engine::context::Cx;
use crate::core::engine::ledger::Wake;
use crate::core::engine::reminders;
use crate::core::lifecycle::Lifecycle;
use crate::core::plan::{Plan, Step, StepStatus};
use crate::core::prompt;
use crate::core::record::{Item, Note, Work};
use crate::core::source::Source;

impl Plans {
    /// The wake rule for one plan: diff its ready set against what was
    /// announced for it — leave, withdraw the stale, announce the new, nudge
    /// when all is done. Returns whether announced steps missing from `plan`
    /// were kept because the read was not `complete`.
    pub(super) fn reconcile_plan(
        &mut self,
        source: &Source,
        plan: &Plan,
        complete: bool,
        cx: &mut Cx,
    ) -> bool {
        let Some(state) = self.plans.get(source) else {
            return false;
        };
        let live = state.lifecycle.is_live();
        let nudge_kind =
            state.lifecycle == Lifecycle::Wip && matches!(state.origin, Origin::Markdown(_));
        let path = state.path.clone();
        // A plan without steps has nothing to be done: no nudge.
        let all_checked = !plan.steps.is_empty() && plan.all_checked();
        let kept_missing = self.leave(source, plan, complete, all_checked, cx);
        if !live {
            return kept_missing;
        }
        let candidates = Self::candidates(cx.config, plan);
        if cx.config.mode == Mode::Reactive {
            self.withdraw_stale(source, plan, &candidates, cx);
        }
        let new: Vec<usize> = candidates
            .into_iter()
            .filter(|&i| {
                !cx.ledger
                    .plans()
                    .is_step_announced(source, &plan.steps[i].key)
            })
            .collect();
        let nudge = all_checked
            && cx.config.nudge_done
            && nudge_kind
            && !cx.ledger.plans().told_all_done(source);
        if new.is_empty() && !nudge {
            return kept_missing;
        }
        if cx.baseline {
            self.take_baseline(source, plan, &new, nudge, cx);
            return kept_missing;
        }
        let Some(session) = self.route(source, cx) else {
            return kept_missing;
        };
        if self.announce_steps(source, plan, &new, &session, &path, cx) && nudge {
            self.announce_done(source, plan, &session, &path, cx);
        }
        kept_missing
    }

    /// Rule 1, leave: checked steps, and (on a complete read) steps that no
    /// longer exist, leave the announced set; so does the all-done nudge of
    /// a plan no longer all done. A settle read may be a truncated file, so
    /// absence proves nothing then. Returns whether absent steps were kept.
    fn leave(
        &mut self,
        source: &Source,
        plan: &Plan,
        complete: bool,
        all_checked: bool,
        cx: &mut Cx,
    ) -> bool {
        // Whether the step of a key is open (`None`: no such step). A few
        // announced items (the common case: the step in progress) are
        // looked up step by step; more, in one sorted table of the steps
        // (keys are unique).
        let is_open = |s: &Step| s.status != StepStatus::Checked;
        let few = cx.ledger.plans().len_of(source) <= 4;
        let mut steps: Vec<(&str, bool)> = Vec::new();
        if !few {
            steps = plan
                .steps
                .iter()
                .map(|s| (s.key.as_str(), is_open(s)))
                .collect();
            steps.sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        let find = |k: &str| match few {
            true => plan.steps.iter().find(|s| s.key == k).map(is_open),
            false => steps
                .binary_search_by(|s| s.0.cmp(k))
                .ok()
                .map(|i| steps[i].1),
        };
        let open = |k: &str| find(k) == Some(true);
        let existing = |k: &str| find(k).is_some();
        let kept_missing = !complete && cx.ledger.plans().step_keys(source).any(|k| !existing(k));
        let leaving = cx.ledger.plans().items_where(source, |item| match item {
            Item::Work(Work::Step(k)) => !open(k) && (complete || existing(k)),
            Item::Note(Note::AllDone) => !all_checked,
            // A child's completion told: forgotten once the step is open
            // again, so its next completion is told too.
            Item::Note(Note::ChildDone(k)) => open(k),
            _ => false,
        });
        for item in leaving {
            let entry = cx.ledger.plans().entry(source, &item);
            let holder = entry.and_then(|a| a.session.clone());
            cx.ledger
                .unannounce(source, item.clone(), "its step was checked", cx.fx);
            // A step checked is progress: its session's reminder counts
            // in this plan start again.
            if let Some(session) = &holder {
                reminders::progress(cx.ledger, source, session, cx.fx);
            }
            if let Some(key) = item.step_key() {
                let checked = existing(key);
                children::step_left(cx, source, plan, key, checked, holder.as_deref());
            }
        }
        kept_missing
    }

    /// The steps that should be announced: the ready ones (reactive), or
    /// every open step in topological order (queue).
    fn candidates(config: &EngineConfig, plan: &Plan) -> Vec<usize> {
        match config.mode {
            Mode::Reactive => plan.ready(),
            Mode::Queue => plan
                .topo_order()
                .into_iter()
                .filter(|&i| plan.steps[i].status == StepStatus::Open)
                .collect(),
        }
    }

    /// Rule 2, stale: a prompt still waiting in an outbox for a step that
    /// is no longer ready (a dependency was unchecked) would now be early:
    /// withdraw it and un-announce, so it is announced again when it is
    /// ready again.
    fn withdraw_stale(&mut self, source: &Source, plan: &Plan, ready: &[usize], cx: &mut Cx) {
        // Nothing of this plan waiting (the common case): nothing stale.
        let outbox = cx.ledger.outbox();
        if !outbox.holds_source(source) {
            return;
        }
        let ready: BTreeSet<&str> = ready.iter().map(|&i| plan.steps[i].key.as_str()).collect();
        let stale: BTreeSet<Item> = outbox
            .of_source(source)
            .filter(|(_, p)| p.item.step_key().is_some_and(|k| !ready.contains(k)))
            .map(|(_, p)| p.item.clone())
            .collect();
        for item in stale {
            cx.ledger
                .unannounce(source, item, "its step is no longer ready", cx.fx);
        }
    }

    /// On a first start, what is ready is recorded, not announced.
    fn take_baseline(
        &mut self,
        source: &Source,
        plan: &Plan,
        new: &[usize],
        nudge: bool,
        cx: &mut Cx,
    ) {
        let items = new.iter().map(|&i| Item::step(&plan.steps[i].key));
        let all_done = nudge.then_some(Note::AllDone.into());
        let items: Vec<Item> = items.chain(all_done).collect();
        for item in items {
            cx.ledger.mark(source, item, None, cx.fx);
        }
    }

    /// Rule 3, announce: the new steps, in order, to `session`. Returns
    /// false when the session's outbox is full (the rest wait, unannounced).
    fn announce_steps(
        &mut self,
        source: &Source,
        plan: &Plan,
        new: &[usize],
        session: &str,
        path: &Path,
        cx: &mut Cx,
    ) -> bool {
        let file = display_name(path);
        // Queue mode puts the goal on the first prompt of the plan's dump.
        let first_dump = cx.config.mode == Mode::Queue && !cx.ledger.plans().has(source);
        // Fan-out: once the parent holds one ready step of this plan, each
        // further one may go to a child.
        let mut parent_busy = children::parent_busy(cx, source, session);
        for (n, &i) in new.iter().enumerate() {
            let step = &plan.steps[i];
            let item = Item::step(&step.key);
            let child = match cx.config.mode {
                Mode::Reactive if parent_busy => {
                    let at = children::StepRef {
                        item: &item,
                        key: &step.key,
                        label: &step.label,
                        file: &file,
                    };
                    children::assign(cx, source, at, session)
                }
                _ => None,
            };
            parent_busy |= child.is_none();
            let to = child.as_deref().unwrap_or(session);
            let (label, text) = match cx.config.mode {
                Mode::Reactive if child.is_some() => (
                    step.label.clone(),
                    children::child_prompt(plan, i, path, session),
                ),
                Mode::Reactive => {
                    let t = &cx.config.templates.step;
                    let text = render_step(t, plan, i, &file, path, source, session);
                    (step.label.clone(), text)
                }
                Mode::Queue => (
                    format!("q{}", step.num),
                    render_queue(plan, i, &file, first_dump && n == 0),
                ),
            };
            let wake = Wake {
                item,
                session: to,
                label,
                plan: file.clone(),
                text,
            };
            if !cx
                .ledger
                .announce(cx.config.outbox_cap, source, wake, cx.fx)
            {
                return false;
            }
        }
        true
    }

    /// Rule 4, all done: one prompt asking for the rename to `__done`.
    fn announce_done(
        &mut self,
        source: &Source,
        plan: &Plan,
        session: &str,
        path: &Path,
        cx: &mut Cx,
    ) {
        let file = display_name(path);
        let done_file = done_name(&file);
        let text = prompt::render(
            &cx.config.templates.done,
            &[
                ("goal", &plan.goal),
                ("file", &file),
                ("path", &path.display().to_string()),
                ("plan", &source.to_string()),
                ("session", session),
                ("done_file", &done_file),
            ],
        );
        let wake = Wake {
            item: Note::AllDone.into(),
            session,
            label: "all-done".into(),
            plan: file,
            text,
        };
        cx.ledger
            .announce(cx.config.outbox_cap, source, wake, cx.fx);
    }
}
