//! Which part of the engine each input goes to: `Engine::handle` sorts
//! an input into plan files and time, a session and the prompts written to
//! it, or the task tracker, and each of these hands it to the part that
//! owns it.

use std::collections::BTreeSet;

use super::config::Now;
use super::context::cx;
use super::plans::ReadKind;
use super::{baseline_taken, children, read_again, Engine};
use crate::core::effect::Effect;
use crate::core::input::{Input, Observation, Observer, Seen, UNLISTED};

impl Engine {
    /// Handle one input; the returned effects are to be carried out in order.
    pub fn handle(&mut self, now: Now, input: Input) -> Vec<Effect> {
        let mut fx = Vec::new();
        let refill = match input {
            Input::Delivered { .. }
            | Input::TurnStarted { .. }
            | Input::Evidence { .. }
            | Input::Undeliverable { .. }
            | Input::SessionActivity { .. }
            | Input::Observed(_)
            | Input::IndexRead { .. }
            | Input::ChildSpawned { .. } => self.on_session_input(now, input, &mut fx),
            Input::TrackerLines { .. }
            | Input::TrackerRestarted { .. }
            | Input::MountTable { .. }
            | Input::MountRead { .. }
            | Input::MountListRead { .. }
            | Input::BeadsRead { .. } => {
                self.on_tracker_input(now, input, &mut fx);
                false
            }
            Input::Changed { .. }
            | Input::PlanRead { .. }
            | Input::Listed { .. }
            | Input::StartupDone
            | Input::Tick => {
                self.on_plan_input(now, input, &mut fx);
                false
            }
        };
        self.after_input(now, refill, &mut fx);
        fx
    }

    /// An input about plan files, the start-up reconcile, or time.
    fn on_plan_input(&mut self, now: Now, input: Input, fx: &mut Vec<Effect>) {
        let mut cx = cx!(self, &mut *fx);
        match input {
            Input::Changed { path, change } => self.plans.on_changed(now, path, change, &mut cx),
            Input::PlanRead {
                path,
                read,
                complete,
                fresh,
            } => {
                let how = ReadKind { complete, fresh };
                self.plans.on_read(now, path, read, how, &mut cx);
            }
            Input::Listed { paths, read_all } => self.plans.on_listed(paths, read_all, &mut cx),
            Input::StartupDone => {
                if std::mem::take(&mut self.baseline) {
                    baseline_taken(&mut cx);
                }
                children::respawn_planned(&mut cx);
            }
            Input::Tick => {}
            other => unreachable!("not a plan input: {other:?}"),
        }
    }

    /// An input about a session or a prompt written to one. Returns
    /// whether a capped outbox drained.
    fn on_session_input(&mut self, now: Now, input: Input, fx: &mut Vec<Effect>) -> bool {
        match input {
            Input::Delivered {
                session,
                seq,
                reached,
            } => self.on_delivered(now, session, seq, reached, fx),
            Input::TurnStarted { session, seq } => self.on_turn_started(now, session, seq, fx),
            Input::Evidence {
                session,
                seq,
                evidence,
            } => {
                let observed = self.sessions.observed();
                let verdict = (self.ledger).judge(now, &session, seq, evidence, observed);
                self.on_verdict(now, session, seq, verdict, fx)
            }
            Input::Undeliverable { session, seq, why } => {
                self.on_undeliverable(now, session, seq, why, fx);
                false
            }
            Input::SessionActivity { session } => {
                let (ledger, timers) = (&mut self.ledger, &mut self.timers);
                self.sessions.on_activity(now, session, ledger, timers);
                false
            }
            Input::Observed(look) => self.on_observed(now, look, fx),
            Input::IndexRead {
                begun_unix_ms,
                listed,
            } => self.on_index_read(now, begun_unix_ms, &listed, fx),
            Input::ChildSpawned { child, outcome } => {
                let mut cx = cx!(self, &mut *fx);
                let back = children::on_spawned(&mut cx, &child, outcome);
                read_again(&self.plans, back, cx.fx);
                false
            }
            other => unreachable!("not a session input: {other:?}"),
        }
    }

    /// A read of `idx`: each child it should have listed and did not is
    /// gone, as a look by the `idx` poll. Returns whether a capped outbox
    /// drained.
    fn on_index_read(
        &mut self,
        now: Now,
        begun_unix_ms: u64,
        listed: &BTreeSet<String>,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let gone = children::unlisted(&cx!(self, &mut *fx), begun_unix_ms, listed);
        let mut refill = false;
        for session in gone {
            let seen = Seen::Gone(UNLISTED.into());
            let look = Observation {
                session,
                seen,
                by: Observer::Index,
                at: now,
            };
            refill |= self.on_observed(now, look, fx);
        }
        refill
    }

    /// An input from the task tracker.
    fn on_tracker_input(&mut self, now: Now, input: Input, fx: &mut Vec<Effect>) {
        let mut cx = cx!(self, &mut *fx);
        match input {
            Input::TrackerLines { lines, cursor } => {
                self.tasks.on_tracker_lines(lines, cursor, &mut cx)
            }
            Input::TrackerRestarted { why } => self.tasks.on_tracker_restarted(&why, &mut cx),
            Input::MountTable { table } => self.tasks.on_mount_table(table, &mut cx),
            Input::MountRead { mount, read, fresh } => {
                self.tasks.on_mount_read(now, &mount, read, fresh, &mut cx)
            }
            Input::MountListRead { mount, read } => {
                self.tasks.on_mount_list_read(&mount, read, &mut cx)
            }
            Input::BeadsRead { read, now_unix } => {
                self.tasks.on_beads_read(now, read, now_unix, &mut cx)
            }
            other => unreachable!("not a tracker input: {other:?}"),
        }
    }
}
