//! The engine: `(now, Input)` in, `Effect`s out.
//!
//! It owns every decision reveille makes — which file is which plan, which
//! steps are ready, what was announced, what is pending for which session and
//! when to retry — and none of the I/O. The shell feeds it inotify events,
//! file contents and delivery outcomes, and carries out the effects in order.
//!
//! Invariants (checked by the property tests):
//! - a step is announced only when it is unchecked and all its dependencies
//!   are checked (reactive mode), and only while its plan is live;
//! - `newly_ready = ready − announced`: each is announced once, in file order,
//!   and leaves the announced set when it is checked or disappears;
//! - a rename that keeps the plan identity never re-announces;
//! - every change to durable memory is emitted as a `Record` before any
//!   effect that depends on it.

use std::path::PathBuf;

use super::effect::{Delivery, Effect, Level, Log};
use super::input::{Observation, Reached, Seen, Undeliverable};
use super::lifecycle::Lifecycle;
use super::memory::Memory;
use super::record::{Record, Work};
use super::session::Kind;
use super::source::Source;
use super::taken::{self, Verdict};
pub use config::{EngineConfig, Fanout, Mode, Now, Templates};
use context::{cx, Cx};
use ledger::Ledger;
pub use outbox::{InFlight, Outcome, Told};
use plans::Plans;
pub use reminders::{human, ReminderView};
use reminders::{Open, Reminders};
use sessions::{Look, Sessions};
use tasks::Tasks;
use timers::{Timer, Timers};

/// One plan as `status` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PlanView {
    pub source: Source,
    pub path: PathBuf,
    pub lifecycle: Lifecycle,
    pub goal: String,
    pub session: Option<String>,
    pub error: Option<String>,
    pub steps: usize,
    pub checked: usize,
    /// Ready steps: (label, title).
    pub ready: Vec<(String, String)>,
}

/// The engine: a coordinator over parts that own their state and rules.
///
/// - `Ledger` (`engine/ledger.rs`): the durable memory (`core/memory.rs`,
///   in parts that each apply their share of the records) and the
///   delivery lanes (`engine/outbox.rs`: when a prompt goes out); the only
///   place records are applied.
/// - `Plans` (`engine/plans.rs`): the plan table, settle/vanish/recheck
///   bookkeeping, lifecycle, parse → reconcile (the wake rule).
/// - `Tasks` (`engine/tasks.rs`): tracker mounts and events, the beads
///   file, task titles, mounts known only by their events.
/// - `Sessions` (`engine/sessions.rs`): what is known of each session.
/// - `Reminders` (`engine/reminders.rs`): when prompts were heard, and the
///   reminder rule.
/// - children (`engine/children.rs`): fan-out's rules over the children's
///   share of the memory.
/// - `Timers` (`engine/timers.rs`): every deadline, in one table.
///
/// Each part gets what it needs of the others through a `Cx`, so borrows
/// stay simple and each part reads alone.
pub struct Engine {
    config: EngineConfig,
    ledger: Ledger,
    plans: Plans,
    tasks: Tasks,
    sessions: Sessions,
    /// When prompts were heard, for reminders (their counts are durable,
    /// in the ledger).
    reminders: Reminders,
    /// Every deadline: settles, re-reads, rename grace, retries, beads
    /// deferrals, the tracker resync.
    timers: Timers,
    /// Sessions busy with nothing checked, for `stuck`.
    stuck: stuck::Stuck,
    /// Waits for a person seen without a name, not told yet.
    waits: waiting::Waits,
    /// True from a first start (no memory) until `StartupDone`.
    baseline: bool,
}

impl Engine {
    /// A new engine. `memory` is what a previous run persisted, or `None` on
    /// the very first start, in which case what is ready at start-up becomes
    /// the baseline instead of being announced.
    pub fn new(config: EngineConfig, memory: Option<Memory>) -> Engine {
        let baseline = memory.as_ref().is_none_or(|m| !m.baselined());
        let mut memory = memory.unwrap_or_default();
        memory.version = Memory::VERSION;
        Engine {
            config,
            ledger: Ledger::new(memory),
            plans: Plans::default(),
            tasks: Tasks::default(),
            sessions: Sessions::default(),
            reminders: Reminders::default(),
            timers: Timers::default(),
            stuck: stuck::Stuck::default(),
            waits: waiting::Waits::default(),
            baseline,
        }
    }

    /// The durable memory, for snapshots and `status`.
    pub fn memory(&self) -> &Memory {
        self.ledger.memory()
    }

    /// The configuration in force.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Replace the configuration (SIGHUP reload). Plans are re-read by the
    /// shell afterwards (a `Listed { read_all: true }`), since routes,
    /// templates or the mode may have changed.
    pub fn reconfigure(&mut self, config: EngineConfig) {
        if config.resync.is_none() {
            // Turned off: no deadline left behind.
            self.timers.cancel(&Timer::Resync);
        }
        self.config = config;
        // Reminders may have been turned on or their interval changed:
        // judge every observed session again (armed timers are judged
        // again when they fire).
        for (session, observed) in self.sessions.observed() {
            self.reminders.rearm(
                &self.config,
                session,
                Some(observed),
                &self.ledger,
                &mut self.timers,
            );
        }
    }

    /// Whether the first-start baseline is still being taken.
    pub fn in_baseline(&self) -> bool {
        self.baseline
    }

    /// Whether `session`'s lane is backing off after a failed write: only
    /// then does activity on its enqueue file (a reader arriving) change
    /// anything (`Input::SessionActivity` retries it at once).
    pub fn backing_off(&self, session: &str) -> bool {
        self.timers
            .get(&Timer::Retry(session.to_string()))
            .is_some()
    }

    /// The next instant at which `Tick` has work to do.
    pub fn poll_timeout(&self) -> Option<Now> {
        self.timers.next()
    }

    /// The next prompt to write, if a lane can send — asked by the shell
    /// when it is ready to write (as quinn's `poll_transmit`), so a prompt
    /// withdrawn by an input handled in the meantime is never written. Each
    /// answer marks that session's lane busy until `Delivered` or
    /// `Undeliverable` comes back: one prompt per session at a time, never
    /// interleaved, and one stuck session never holds up another.
    pub fn poll_delivery(&mut self, now: Now) -> Option<Delivery> {
        self.ledger
            .poll_delivery(now, &mut self.timers, self.sessions.observed())
    }

    /// What every input is followed by: reminder clocks restarted by
    /// progress, idle children reaped, a drained outbox refilled, and the
    /// timers that are due.
    fn after_input(&mut self, now: Now, refill: bool, fx: &mut Vec<Effect>) {
        self.after_progress(now);
        let mut cx = cx!(self, &mut *fx);
        children::reap_idle(&mut cx, self.sessions.observed());
        if refill {
            self.refill(fx);
        }
        self.run_timers(now, fx);
        self.say_held(fx);
    }

    /// Prompts that wait for their session to be idle (it would fold them
    /// into its running turn), said once each: the journal tells why a
    /// prompt is not going out.
    fn say_held(&mut self, fx: &mut Vec<Effect>) {
        if self.config.logs(Level::Info) {
            self.ledger.say_held(self.sessions.observed(), fx);
        }
    }

    /// A prompt reached its session: recorded (a prompt in an agent's
    /// inbox only once its turn starts), and for an observed session, when
    /// it was heard starts its item's reminder clock. Returns whether a
    /// capped outbox drained (every source is diffed again).
    fn on_delivered(
        &mut self,
        now: Now,
        session: String,
        seq: u64,
        reached: Reached,
        fx: &mut Vec<Effect>,
    ) -> bool {
        self.heard(now, &session, seq, reached != Reached::Inbox);
        let step = self.ledger.pending(&session, seq).map(|p| p.step.clone());
        let observed = self.sessions.observed().get(&session).cloned();
        if let Some(step) = step.filter(|_| Kind::of(&session).0.waits_for_idle()) {
            let handed = self.ledger.lanes().handed_at(&session, seq);
            self.sessions.prompted(now, &session, &step, handed);
        }
        let observed = observed.as_ref();
        let (config, timers) = (&self.config, &mut self.timers);
        let (_, refill) = self
            .ledger
            .on_delivered(now, &session, seq, reached, observed, config, timers, fx);
        self.rearm(&session);
        refill
    }

    /// The agent started a turn on prompt `seq`: a prompt in its inbox is
    /// heard (and delivered) now.
    fn on_turn_started(
        &mut self,
        now: Now,
        session: String,
        seq: u64,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let in_inbox = self.ledger.lanes().in_inbox(&session, seq);
        self.heard(now, &session, seq, in_inbox);
        let (config, timers) = (&self.config, &mut self.timers);
        let (_, refill) = self
            .ledger
            .on_turn_started(now, &session, seq, config, timers, fx);
        self.rearm(&session);
        refill
    }

    /// Prompt `seq` was heard by its session (when `now_heard`): its
    /// item's reminder clock starts, and `status` says when it was
    /// announced — whether or not the session's state is seen yet (one
    /// seen only later is reminded from when it was first seen idle).
    fn heard(&mut self, now: Now, session: &str, seq: u64, now_heard: bool) {
        if !now_heard {
            return;
        }
        if let Some(p) = self.ledger.pending(session, seq) {
            self.reminders.heard(now, session, &p.source, &p.item);
        }
    }

    /// `session`'s reminders judged again.
    fn rearm(&mut self, session: &str) {
        let observed = self.sessions.observed().get(session);
        self.reminders.rearm(
            &self.config,
            session,
            observed,
            &self.ledger,
            &mut self.timers,
        );
    }

    /// What the one rule (`core::taken`) decided of prompt `seq`. Returns
    /// whether a capped outbox drained.
    fn on_verdict(
        &mut self,
        now: Now,
        session: String,
        seq: u64,
        verdict: Verdict,
        fx: &mut Vec<Effect>,
    ) -> bool {
        match verdict {
            Verdict::Delivered(reached) => {
                return self.on_delivered(now, session, seq, reached, fx)
            }
            Verdict::Retry(why) => self.on_undeliverable(now, session, seq, why, fx),
            Verdict::LookAgain(why) => {
                let then = "the session's next look says";
                self.ledger.on_doubt(now, &session, seq, (&why, then), fx)
            }
            Verdict::LookAfter(window) => {
                (self.ledger).await_record(now, &session, seq, window, &mut self.timers)
            }
            Verdict::LookWhenIdle => self.ledger.look_when_idle(&session, seq),
            Verdict::NotTaken(why) => self.ledger.on_not_taken(&session, seq, &why, fx),
            Verdict::LookAgainAfter(why, window) => {
                let timers = &mut self.timers;
                (self.ledger).on_doubt_record(now, &session, seq, (&why, window), timers, fx)
            }
            Verdict::WaitIdle(why) => self.ledger.on_busy(now, &session, seq, why, fx),
        }
        false
    }

    /// Prompt `seq` was not taken: it stays first, retried after a backoff.
    fn on_undeliverable(
        &mut self,
        now: Now,
        session: String,
        seq: u64,
        why: Undeliverable,
        fx: &mut Vec<Effect>,
    ) {
        let at = self
            .ledger
            .on_undeliverable(now, &session, seq, why, &self.config, fx);
        self.timers.set(Timer::Retry(session), at);
    }

    /// One look at a session, to its one owner (`Sessions`); unless an
    /// older look than the newest known: then a child gone before its step
    /// was done hands it back, a session gone or unreachable loses what
    /// was in its inbox, and its retries and reminders are judged again.
    /// Returns whether a capped outbox drained (a doubt settled).
    fn on_observed(&mut self, now: Now, look: Observation, fx: &mut Vec<Effect>) -> bool {
        let session = look.session.clone();
        // A prompt whose taking could not be told is settled by a look
        // made after the doubt: the one rule says what the look means.
        let mut refill = false;
        let settles = taken::settled_by_look(Kind::of(&session).0);
        if let Some(seq) = settles
            .then(|| self.ledger.settled_by(&session, look.at.min(now)))
            .flatten()
        {
            let verdict = taken::settle(Kind::of(&session).0, &look.seen);
            refill = self.on_verdict(now, session.clone(), seq, verdict, fx);
        }
        // The state before the look, so a wait for a person begun or
        // ended by it is told.
        let before = self
            .sessions
            .observed()
            .get(&session)
            .map(|o| o.state.clone());
        let busy = matches!(&look.seen, Seen::State(s) if !s.is_idle());
        let (ledger, timers) = (&mut self.ledger, &mut self.timers);
        let outcome = self.sessions.on_observed(now, look, ledger, timers);
        // A look that waited for the session to be idle (or gone) is made.
        if !matches!(outcome, Look::Stale) && !busy {
            fx.extend(self.ledger.idle_look(&session));
        }
        let mut cx = cx!(self, &mut *fx);
        match outcome {
            Look::Stale | Look::Same => return refill,
            Look::Changed => {}
            Look::Gone(news) => {
                let back = children::on_state(&mut cx, &session, false);
                read_again(&self.plans, back, cx.fx);
                cx.ledger.on_gone(&session, cx.timers, cx.fx);
                if news {
                    self.say_waiting(&session, fx);
                }
            }
            // As gone for delivery (its inbox went with the program), but
            // a child keeps its step.
            Look::Unreachable(news) => {
                cx.ledger.on_gone(&session, cx.timers, cx.fx);
                if news {
                    self.say_waiting(&session, fx);
                }
            }
        }
        let (config, ledger, timers) = (&self.config, &mut self.ledger, &mut self.timers);
        let after = self.sessions.observed().get(&session).map(|o| &o.state);
        let told = ledger.lanes().last_told(&session);
        let change = waiting::Change {
            session: &session,
            before: before.as_ref(),
            after,
            told,
            now,
        };
        self.waits.judge(change, timers, fx);
        self.stuck.on_state(config, now, &session, after, timers);
        self.reminders.prune(ledger);
        let observed = self.sessions.observed().get(&session);
        self.reminders
            .rearm(config, &session, observed, ledger, timers);
        refill
    }

    /// A session newly seen gone or unreachable with prompts waiting for
    /// it: why they wait, said once per episode (not per retry).
    fn say_waiting(&self, session: &str, fx: &mut Vec<Effect>) {
        let pending = self.ledger.outbox().len_of(session);
        let Some(absent) = self.sessions.absent().get(session) else {
            return;
        };
        if pending == 0 || !self.config.logs(Level::Info) {
            return;
        }
        let what = if absent.unreachable {
            "cannot be reached"
        } else {
            "is gone"
        };
        let message = format!(
            "session {session} {what} ({}); {pending} prompt(s) wait in its outbox until it is back",
            absent.why
        );
        fx.push(Effect::Log(Log::new(Level::Info, message).session(session)));
    }

    /// Sessions that checked a step restart their reminder clocks there.
    fn after_progress(&mut self, now: Now) {
        let mut progressed = self.ledger.take_progressed();
        if progressed.is_empty() {
            return;
        }
        // When each item was heard is kept for every session, pruned with
        // the announced set at each progress.
        self.reminders.prune(&self.ledger);
        // Only an observed session can be reminded, and one seen only later
        // counts from when its state was first seen, after this progress.
        progressed.retain(|(session, _)| self.sessions.observed().contains_key(session));
        for (session, source) in progressed {
            let timers = &mut self.timers;
            self.stuck.progressed(&self.config, now, &session, timers);
            self.reminders.progressed(now, session.clone(), source);
            let observed = self.sessions.observed().get(&session);
            self.reminders.rearm(
                &self.config,
                &session,
                observed,
                &self.ledger,
                &mut self.timers,
            );
        }
    }

    /// A capped outbox drained: wake-ups refused at the cap were left
    /// unannounced, so every source is read and diffed again.
    fn refill(&self, fx: &mut Vec<Effect>) {
        for path in self.plans.paths() {
            fx.push(Effect::Read {
                path: path.to_path_buf(),
                complete: true,
            });
        }
        for mount in self.tasks.mount_names(&self.config) {
            fx.push(Effect::ReadMount { mount });
        }
        if self.config.beads_file.is_some() {
            fx.push(Effect::ReadBeads);
        }
    }

    /// Act on the timers due at `now`, each by the part it belongs to.
    fn run_timers(&mut self, now: Now, fx: &mut Vec<Effect>) {
        // Vanished plans wait while a listing is already out.
        let listing = self.plans.listing();
        let mut list = false;
        for timer in self
            .timers
            .take_due(now, |t| listing && matches!(t, Timer::Vanished(_)))
        {
            match timer {
                Timer::Settle(path) => fx.push(Effect::Read {
                    path,
                    complete: false,
                }),
                Timer::Recheck(path) => fx.push(self.plans.recheck_due(path)),
                Timer::MountRecheck(mount) => fx.push(self.tasks.recheck_due(mount)),
                Timer::Resync => self.resync(now, fx),
                Timer::BeadsDue => fx.push(Effect::ReadBeads),
                Timer::Vanished(_) => list = true,
                Timer::Retry(session) | Timer::Unseen(session) => self.ledger.wake_lane(session),
                Timer::Remind(session, source, work) => {
                    let open = self.open_item(&session, &source, &work);
                    let observed = self.sessions.observed().get(&session);
                    let key = (session, source, work);
                    let mut cx = cx!(self, &mut *fx);
                    self.reminders.on_due(now, key, open, observed, &mut cx);
                }
                Timer::Look(session, seq) => fx.extend(self.ledger.look_due(&session, seq)),
                Timer::Confirm(session) => {
                    self.ledger.on_confirm_due(&session, &self.config, fx);
                }
                Timer::Stuck(session) => {
                    let told = self.ledger.lanes().last_told(&session);
                    self.stuck.on_due(&self.config, now, &session, told, fx);
                }
                Timer::Naming(session) => {
                    let told = self.ledger.lanes().last_told(&session);
                    self.waits.on_due(&session, told, fx);
                }
            }
        }
        if list {
            self.plans.list(fx);
        }
    }

    /// `events.resync_ms` came due: read every mount's ready list (9beads
    /// writes no event for `unclaim`, `open`, `reopen`, `defer`, `dep`,
    /// `undep`, `update`).
    fn resync(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Some(every) = self.config.resync else {
            return;
        };
        self.timers.set(Timer::Resync, now + every);
        for mount in self.tasks.mount_names(&self.config) {
            fx.push(Effect::ReadMount { mount });
        }
    }

    /// What a reminder to `session` names of announced work that is still
    /// open in a live source, from the part that owns it; `None` for a
    /// checked step, an ended plan, a task claimed by another session's
    /// assignee.
    fn open_item(&self, session: &str, source: &Source, work: &Work) -> Option<Open> {
        match work {
            Work::Step(key) => self.plans.open_step(source, key),
            Work::Task(_) | Work::Claimed(_) => {
                self.tasks.open_task(&self.config, session, source, work)
            }
        }
    }
}

/// The first-start baseline is complete: say how much it holds.
fn baseline_taken(cx: &mut Cx) {
    let n = cx.ledger.memory().announced_count();
    cx.ledger.record(Record::Baselined, cx.fx);
    let what = if n == 1 {
        "step or task"
    } else {
        "steps and tasks"
    };
    cx.fx.push(Effect::Log(Log::new(
        Level::Info,
        format!("first start: {n} already-ready {what} recorded as the baseline, not announced: what is ready at the very first start wakes nobody, what becomes ready from now on does"),
    )));
}

/// A step handed back by a child is announced again (to the parent) by its
/// plan's next read.
fn read_again(plans: &Plans, source: Option<Source>, fx: &mut Vec<Effect>) {
    let Some(path) = source.as_ref().and_then(|s| plans.path_of(s)) else {
        return;
    };
    fx.push(Effect::Read {
        path: path.to_path_buf(),
        complete: true,
    });
}

mod children;
mod config;
mod context;
mod inputs;
mod ledger;
pub mod observed;
mod outbox;
mod plans;
mod recent;
mod reminders;
mod sessions;
mod stuck;
mod tasks;
#[cfg(test)]
mod tests;
mod timers;
mod views;
mod waiting;
