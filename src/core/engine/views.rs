//! What the engine shows of itself — for `status`, `why`, the live view
//! and the daemon's views: read-only, one `impl` apart from the engine's
//! decisions.

use std::collections::BTreeMap;

use super::observed;
use super::{Engine, PlanView, ReminderView, Told};

impl Engine {
    /// Every tracked plan, for `status`.
    pub fn plans(&self) -> Vec<PlanView> {
        self.plans.views(&self.config)
    }

    /// Every open announced step or task, its reminders sent and the next
    /// one due, for `status`.
    pub fn reminders(&self) -> Vec<ReminderView> {
        let observed = self.sessions.observed();
        self.reminders
            .views(&self.config, &self.ledger, observed, |who, s, i| {
                self.open_item(who, s, i)
            })
    }

    /// Every session last seen gone or unreachable, and why.
    pub fn absent(&self) -> &BTreeMap<String, observed::Absent> {
        self.sessions.absent()
    }

    /// Every session whose state is observed, and since when.
    pub fn sessions(&self) -> &BTreeMap<String, observed::Observed> {
        self.sessions.observed()
    }

    /// Wake-ups refused at the outbox cap, per session.
    pub fn refused(&self) -> BTreeMap<String, u64> {
        self.ledger.lanes().refused()
    }

    /// How many sessions are currently failing.
    pub fn failing_count(&self) -> usize {
        self.ledger.lanes().failing_count()
    }

    /// Sessions currently failing, with the reason.
    pub fn failing(&self) -> BTreeMap<String, String> {
        self.ledger.lanes().failing()
    }

    /// Every session with work announced and open, or a prompt pending, or
    /// a child of reveille's: the sessions whose state matters (walks the
    /// announced sets: for the start, not the wake path).
    pub fn sessions_with_work(&self) -> std::collections::BTreeSet<String> {
        let memory = self.ledger.memory();
        let announced = memory
            .announced()
            .flat_map(|(_, items)| items.iter())
            .filter(|(_, a)| !a.baseline)
            .filter_map(|(_, a)| a.session.clone());
        let pending = memory.outbox.keys().cloned();
        let children = memory.children.keys().cloned();
        announced.chain(pending).chain(children).collect()
    }

    /// What each session was last told and how it went, for `status`.
    pub fn told(&self) -> BTreeMap<String, Told> {
        self.ledger.lanes().told()
    }

    /// The prompt each session is being written, by seq: sent, and its
    /// outcome (taken or not) not known yet — for `status` and `why`.
    pub fn in_flight(&self) -> BTreeMap<String, u64> {
        self.ledger.lanes().in_flight()
    }

    /// Plans with a current error.
    pub fn invalid_plans(&self) -> usize {
        self.plans.invalid()
    }

    /// Number of tracked plans.
    pub fn plan_count(&self) -> usize {
        self.plans.count()
    }
}
