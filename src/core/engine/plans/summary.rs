//! What is kept of a plan's last valid parse: its goal, its session, how
//! many steps are checked, and the open steps a reminder may name — not
//! the parse itself, which 10,000 plans would make tens of megabytes.

use crate::core::plan::{Plan, Step, StepStatus};

/// The little that is kept of a plan's last valid parse.
#[derive(Debug, Clone)]
pub(super) struct Summary {
    pub(super) goal: String,
    /// The session named in the file, unvalidated.
    pub(super) session: Option<String>,
    pub(super) steps: usize,
    pub(super) checked: usize,
    /// Ready steps, in order.
    pub(super) ready: Vec<OpenStep>,
    /// Announced steps still unchecked that are not ready now (a
    /// dependency unchecked again, a fan-out child's step): with `ready`,
    /// every step a reminder may name. Not every unchecked step: their
    /// titles were most of the memory of 10,000 idle plans. Lists, not
    /// maps: each holds a step or two (an almost empty `BTreeMap` still
    /// costs a whole node, ~800 bytes here, per plan).
    pub(super) open: Vec<OpenStep>,
}

/// An unchecked step a reminder may name.
#[derive(Debug, Clone)]
pub(super) struct OpenStep {
    pub(super) key: String,
    pub(super) label: String,
    pub(super) title: String,
    /// `Step::written`: its line's text, when it differs from the title.
    pub(super) written: Option<String>,
}

impl OpenStep {
    fn of(step: &Step) -> OpenStep {
        OpenStep {
            key: step.key.clone(),
            label: step.label.clone(),
            title: step.title.clone(),
            written: step.written.clone(),
        }
    }
}

impl Summary {
    /// The summary of `plan`, which is the plan summarised with only
    /// statuses changed: goal and session are not copied again.
    pub(super) fn follow_ticks(&mut self, plan: &Plan, announced: impl Fn(&str) -> bool) {
        let again = Summary::steps_of(plan, announced);
        (self.checked, self.ready, self.open) = again;
    }

    /// Checked count, ready steps and the other open steps kept.
    fn steps_of(
        plan: &Plan,
        announced: impl Fn(&str) -> bool,
    ) -> (usize, Vec<OpenStep>, Vec<OpenStep>) {
        let ready = plan.ready();
        let checked = plan
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Checked)
            .count();
        let open = plan
            .steps
            .iter()
            .enumerate()
            .filter(|(i, s)| {
                s.status != StepStatus::Checked && !ready.contains(i) && announced(&s.key)
            })
            .map(|(_, s)| OpenStep::of(s))
            .collect();
        let ready = ready
            .iter()
            .map(|&i| OpenStep::of(&plan.steps[i]))
            .collect();
        (checked, ready, open)
    }

    /// `announced`: whether the step with this key is in the announced set.
    pub(super) fn of(plan: &Plan, announced: impl Fn(&str) -> bool) -> Summary {
        let (checked, ready, open) = Summary::steps_of(plan, announced);
        Summary {
            goal: plan.goal.clone(),
            session: plan.session.clone(),
            steps: plan.steps.len(),
            checked,
            ready,
            open,
        }
    }

    /// The ready or announced open step with this key.
    pub(super) fn open_step(&self, key: &str) -> Option<&OpenStep> {
        self.ready.iter().chain(&self.open).find(|s| s.key == key)
    }
}
