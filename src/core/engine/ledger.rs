//! The ledger: the durable memory (`core/memory.rs`: plans', tasks',
//! outboxes', children's and the position's shares) and the delivery lanes
//! over it (`outbox.rs` decides when each session's next prompt goes out).
//! It is the only place records are applied (`Ledger::record`, to every
//! share at once); the other parts read the memory through its owners'
//! methods (`plans()`, `tasks()`, `outbox()`, `children()`, `position()`).
//! Announcing records a wake-up and queues its prompt; withdrawing takes
//! back one that went stale before it could be written; a delivery's
//! outcome is recorded and said here.

use std::collections::{BTreeMap, BTreeSet};

use super::config::{EngineConfig, Now};
use super::observed::Observed;
use super::outbox::Lanes;
use super::timers::Timers;
use crate::core::effect::{Delivery, Effect, Level, Log};
use crate::core::input::{Reached, Undeliverable};
use crate::core::memory::{Children, Memory, Outboxes, PlanMemory, Position, TaskMemory};
use crate::core::record::{Item, Pending, Record};
use crate::core::source::Source;

mod held;
mod look;

/// One wake-up to announce: what, to whom, and its prompt.
pub(super) struct Wake<'a> {
    pub(super) item: Item,
    pub(super) session: &'a str,
    /// The id agents see (`s3`, `q3`, `all-done`, a task id).
    pub(super) label: String,
    /// The plan file name or tracker source, for jsonl framing and logs.
    pub(super) plan: String,
    pub(super) text: String,
}

/// The durable memory and the delivery lanes.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    /// The durable part, changed only through `Record`s (`record`); the
    /// parts read it through its owners' methods (`plans()`, `tasks()`, …).
    memory: Memory,
    /// Each session's delivery lane: when its next prompt goes out.
    lanes: Lanes,
    /// Sessions whose outbox hit the cap since the last drain: when they
    /// drain, every source is diffed again.
    capped: BTreeSet<String>,
    /// Sessions told "outbox full" in the current streak (it ends when the
    /// outbox is empty).
    full_said: BTreeSet<String>,
    /// (session, source) pairs where the session checked a step since the
    /// coordinator last looked: their reminder clocks start again.
    progressed: Vec<(String, Source)>,
}

impl Ledger {
    pub(super) fn new(memory: Memory) -> Ledger {
        let lanes = Lanes::new(memory.outbox.keys().cloned(), memory.position.next_seq());
        Ledger {
            memory,
            lanes,
            ..Ledger::default()
        }
    }

    /// Apply a record to memory and emit it, in that order of truth: the
    /// shell writes it before carrying out anything emitted after it.
    pub(super) fn record(&mut self, record: Record, fx: &mut Vec<Effect>) {
        self.memory.apply(&record);
        fx.push(Effect::Record(record));
    }

    /// Say, once each, the front prompts that wait for their session to be
    /// idle: it would fold a prompt given during its turn into that turn.
    pub(super) fn say_held(&mut self, observed: &BTreeMap<String, Observed>, fx: &mut Vec<Effect>) {
        let outbox = &self.memory.outbox;
        let front = |s: &str| outbox.get(s).and_then(|q| q.front());
        for (session, p, state) in self.lanes.newly_held(front, observed) {
            let log = Log::new(
                Level::Info,
                format!(
                    "{} waits for session {session} to be idle: a prompt given during its turn would be folded into that turn ({state})",
                    p.step
                ),
            )
            .plan(&p.source)
            .step(&p.step)
            .session(&session);
            fx.push(Effect::Log(log));
        }
    }

    /// The delivery lanes, for what `status` shows of them.
    pub(super) fn lanes(&self) -> &Lanes {
        &self.lanes
    }

    /// The whole durable memory, for snapshots and `status`.
    pub(super) fn memory(&self) -> &Memory {
        &self.memory
    }

    /// The plans' share of the memory: announced steps and plan notes.
    pub(super) fn plans(&self) -> &PlanMemory {
        &self.memory.plans
    }

    /// The tasks' share of the memory: announced tasks and their notes.
    pub(super) fn tasks(&self) -> &TaskMemory {
        &self.memory.tasks
    }

    /// The pending prompts, per session.
    pub(super) fn outbox(&self) -> &Outboxes {
        &self.memory.outbox
    }

    /// The child sessions reveille made.
    pub(super) fn children(&self) -> &Children {
        &self.memory.children
    }

    /// The sequence, the event log cursor, the baseline mark.
    pub(super) fn position(&self) -> &Position {
        &self.memory.position
    }

    /// Put `item` in the announced set with no prompt: a first-start
    /// baseline entry (no session), or a note that tells later events
    /// whom they concern (who holds a task, who claimed it).
    pub(super) fn mark(
        &mut self,
        source: &Source,
        item: Item,
        session: Option<&str>,
        fx: &mut Vec<Effect>,
    ) {
        self.record(
            Record::Announce {
                source: source.clone(),
                item,
                session: session.map(str::to_string),
                baseline: session.is_none(),
                pending: None,
            },
            fx,
        );
    }

    /// `session` checked a step of `source`: its reminder clock there
    /// starts again once the input is handled (`take_progressed`).
    pub(super) fn progressed(&mut self, session: &str, source: &Source) {
        self.progressed.push((session.to_string(), source.clone()));
    }

    /// The (session, source) pairs that made progress since the last call.
    pub(super) fn take_progressed(&mut self) -> Vec<(String, Source)> {
        std::mem::take(&mut self.progressed)
    }

    /// A journal entry about `session` names its parent too when it is a
    /// child reveille made (`PARENT=`).
    fn with_parent(&self, log: Log, session: &str) -> Log {
        match self.memory.children.parent_of(session) {
            Some(parent) => log.parent(parent),
            None => log,
        }
    }

    /// A session showed signs of a reader: a lane backing off retries now.
    pub(super) fn poke(&mut self, now: Now, session: String, timers: &mut Timers) {
        self.lanes.poke(now, &session, timers);
    }

    /// Record an announcement and queue its prompt. Returns false when the
    /// session's outbox is full: the item stays unannounced, so it is
    /// announced once there is room, and nothing is lost.
    pub(super) fn announce(
        &mut self,
        cap: usize,
        source: &Source,
        wake: Wake,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let Wake {
            item,
            session,
            label: step,
            plan,
            text,
        } = wake;
        let queued = self.memory.outbox.len_of(session);
        // Said once per streak: a streak ends when the outbox is empty.
        if queued == 0 {
            self.full_said.remove(session);
        }
        if queued >= cap {
            self.lanes.refuse(session);
            if self.capped.insert(session.to_string()) && self.full_said.insert(session.to_string())
            {
                fx.push(Effect::Log(
                    Log::new(
                        Level::Error,
                        format!(
                            "outbox full for session {session} ({queued} prompts, outbox_cap = {cap}): its new wake-ups wait, unannounced, until it drains",
                        ),
                    )
                    .session(session),
                ));
            }
            return false;
        }
        let seq = self.memory.position.next_seq();
        let pending = Pending {
            seq,
            source: source.clone(),
            item: item.clone(),
            step: step.clone(),
            plan: plan.clone(),
            text,
        };
        self.record(
            Record::Announce {
                source: source.clone(),
                item,
                session: Some(session.to_string()),
                baseline: false,
                pending: Some(pending),
            },
            fx,
        );
        let log = Log::new(
            Level::Info,
            format!("announced {step} to session {session}"),
        )
        .plan(source)
        .step(&step)
        .session(session)
        .file(&plan);
        fx.push(Effect::Log(self.with_parent(log, session)));
        self.lanes.wake(session);
        true
    }

    /// Withdraw the pending prompts of `item` that are not being written;
    /// returns how many were withdrawn.
    pub(super) fn withdraw_item(
        &mut self,
        source: &Source,
        item: &Item,
        why: &str,
        fx: &mut Vec<Effect>,
    ) -> usize {
        let mut found = Vec::new();
        for (session, p) in self.memory.outbox.of_source(source) {
            let lane = self.lanes.get(session);
            // A prompt being written, or already in the agent's inbox,
            // cannot be taken back.
            if &p.item == item && !lane.is_some_and(|l| l.taken(p.seq)) {
                found.push((session.to_string(), p.seq, p.step.clone()));
            }
        }
        let n = found.len();
        for (session, seq, step) in found {
            self.record(
                Record::Withdrawn {
                    session: session.clone(),
                    seq,
                },
                fx,
            );
            fx.push(Effect::Log(
                Log::new(
                    Level::Info,
                    format!("withdrew pending prompt for {step} to session {session}: {why}"),
                )
                .plan(source)
                .step(&step)
                .session(&session),
            ));
        }
        n
    }

    pub(super) fn withdraw_source(&mut self, source: &Source, why: &str, fx: &mut Vec<Effect>) {
        let outbox = self.memory.outbox.of_source(source);
        let items: BTreeSet<Item> = outbox.map(|(_, p)| p.item.clone()).collect();
        // A withdrawn prompt was never heard: un-announce it, so a plan
        // that is reopened announces it again rather than losing it.
        for item in items {
            self.unannounce(source, item, why, fx);
        }
    }

    /// Take `item` out of the announced set, withdrawing its prompt if it
    /// is still pending: it is announced again if it becomes ready again.
    pub(super) fn unannounce(
        &mut self,
        source: &Source,
        item: Item,
        why: &str,
        fx: &mut Vec<Effect>,
    ) {
        self.withdraw_item(source, &item, why, fx);
        if self.memory.is_announced(source, &item) {
            self.record(
                Record::Forget {
                    source: source.clone(),
                    item,
                },
                fx,
            );
        }
    }

    /// A prompt reached its session: recorded as delivered (for a prompt
    /// in an inbox, once its turn starts) and said. Returns whether it
    /// counts as delivered now, and whether a capped outbox has drained far
    /// enough that every source must be diffed again.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_delivered(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        reached: Reached,
        observed: Option<&Observed>,
        config: &EngineConfig,
        timers: &mut Timers,
        fx: &mut Vec<Effect>,
    ) -> (bool, bool) {
        let Some(p) = self.pending(session, seq).cloned() else {
            // Withdrawn or recorded already (a repeated outcome).
            self.lanes.write_ended(session, seq);
            return (false, false);
        };
        if self.lanes.recovered(session) {
            let log = Log::new(Level::Info, format!("session {session} is reachable again"))
                .session(session);
            fx.push(Effect::Log(log));
        }
        // A prompt in an inbox is confirmed long after its write (Claude's
        // transcript, 60-400 ms), by when it may itself have made an idle
        // agent busy: judged by what the agent was doing when it was
        // handed over — not known then (just after a restart), not known,
        // never the busy its own turn brought. Any other outcome is the
        // write's own end, and the state now is the freshest there is (an
        // ollie-9p tree is polled).
        let at_write = self.lanes.seen_at_write(session, seq);
        let observed = match reached {
            Reached::Inbox => at_write.as_ref(),
            _ => observed,
        };
        let was_idle = observed.map(|o| o.state.is_idle());
        let now_delivered =
            self.lanes
                .delivered(now, session, &p, (reached, was_idle), config, timers);
        self.say_reached(session, &p, reached, observed, config, fx);
        if !now_delivered {
            return (false, false);
        }
        self.record(
            Record::Delivered {
                session: session.to_string(),
                seq,
            },
            fx,
        );
        (true, self.drained(session, config.outbox_cap))
    }

    /// The journal entry of a prompt reaching its session: for an agent
    /// seen busy, that it waits behind the running turn; for one of unknown
    /// state, that it was submitted; for one seen idle, nothing yet (its
    /// turn starting says it woke); for a pipe or file, `delivered` (debug).
    fn say_reached(
        &self,
        session: &str,
        p: &Pending,
        reached: Reached,
        observed: Option<&Observed>,
        config: &EngineConfig,
        fx: &mut Vec<Effect>,
    ) {
        let step = &p.step;
        let (level, message) = match (reached, observed) {
            (Reached::Written, _) => (
                Level::Debug,
                format!("delivered {step} to session {session}"),
            ),
            (_, Some(o)) if o.state.is_idle() => return,
            (Reached::Inbox, Some(o)) => (
                Level::Info,
                format!(
                    "{step} waits in the inbox of {session} for its running turn to end ({})",
                    o.state
                ),
            ),
            (_, Some(o)) => (
                Level::Info,
                format!(
                    "queued {step} behind the running turn of {session} ({})",
                    o.state
                ),
            ),
            (_, None) => (
                Level::Info,
                format!("submitted {step} to session {session} (its state is not known)"),
            ),
        };
        if !config.logs(level) {
            return;
        }
        let log = Log::new(level, message)
            .plan(&p.source)
            .step(step)
            .session(session);
        fx.push(Effect::Log(self.with_parent(log, session)));
    }

    /// The agent started a turn on `seq`, as its own signals show: a
    /// prompt in its inbox is delivered now; a wake-up awaited is said.
    /// Returns whether a prompt was delivered by it (and whether a capped
    /// outbox drained).
    pub(super) fn on_turn_started(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        config: &EngineConfig,
        timers: &mut Timers,
        fx: &mut Vec<Effect>,
    ) -> (bool, bool) {
        let (from_inbox, confirmed, told) = self.lanes.turn_started(now, session, seq, timers);
        // Its plan: from the prompt still pending, else from what was told.
        let source = self
            .pending(session, seq)
            .map(|p| p.source.clone())
            .or_else(|| told.as_ref().and_then(|t| t.source.clone()));
        let said = match (confirmed, told) {
            (Some(c), _) if c.was_idle => {
                let message = format!("woke idle session {session} for {}", c.step);
                Some((c.step, message))
            }
            (_, Some(t)) => {
                let message = format!("turn started on {} in session {session}", t.step);
                Some((t.step, message))
            }
            _ => None,
        };
        if let Some((step, message)) = said {
            let mut log = Log::new(Level::Info, message).step(&step).session(session);
            if let Some(source) = &source {
                log = log.plan(source);
            }
            fx.push(Effect::Log(self.with_parent(log, session)));
        }
        if !from_inbox {
            return (false, false);
        }
        self.record(
            Record::Delivered {
                session: session.to_string(),
                seq,
            },
            fx,
        );
        (true, self.drained(session, config.outbox_cap))
    }

    /// The turn awaited after a delivery to an idle agent was not seen
    /// starting in time: said (nothing waited for it).
    pub(super) fn on_confirm_due(
        &mut self,
        session: &str,
        config: &EngineConfig,
        fx: &mut Vec<Effect>,
    ) {
        let Some(c) = self.lanes.not_seen_starting(session) else {
            return;
        };
        if !c.was_idle {
            return;
        }
        let log = Log::new(
            Level::Info,
            format!(
                "submitted {} to idle session {session}; its turn was not seen starting within {:?}",
                c.step, config.confirm_timeout
            ),
        )
        .step(&c.step)
        .session(session);
        fx.push(Effect::Log(self.with_parent(log, session)));
    }

    /// The session went away (killed, renamed, its program stopped): a
    /// prompt in its inbox went with it and is delivered again when the
    /// session is back.
    pub(super) fn on_gone(&mut self, session: &str, timers: &mut Timers, fx: &mut Vec<Effect>) {
        let Some(seq) = self.lanes.gone(session, timers) else {
            return;
        };
        let Some(p) = self.pending(session, seq) else {
            return;
        };
        let log = Log::new(
            Level::Warn,
            format!(
                "session {session} went away with {} in its inbox; it is delivered again when the session is back",
                p.step
            ),
        )
        .plan(&p.source)
        .step(&p.step)
        .session(session);
        fx.push(Effect::Log(self.with_parent(log, session)));
    }

    /// The pending prompt `seq` of `session`.
    pub(super) fn pending(&self, session: &str, seq: u64) -> Option<&Pending> {
        self.memory.outbox.pending(session, seq)
    }

    /// Prompt `seq`, whose write just failed, is withdrawn if it is no
    /// longer wanted: its step was checked, or its plan ended, while it
    /// was being written (`withdraw_item` leaves a prompt being written
    /// alone, and its announcement is forgotten), so nothing would ever
    /// take it back, and it would reach the session once it came back.
    /// Whether it was.
    fn withdraw_unwanted(&mut self, session: &str, seq: u64, fx: &mut Vec<Effect>) -> bool {
        let Some(p) = self.pending(session, seq) else {
            return false;
        };
        if self.memory.is_announced(&p.source, &p.item) {
            return false;
        }
        let (source, step) = (p.source.clone(), p.step.clone());
        self.lanes.write_ended(session, seq);
        let withdrawn = Record::Withdrawn {
            session: session.to_string(),
            seq,
        };
        self.record(withdrawn, fx);
        let log = Log::new(
            Level::Info,
            format!("withdrew pending prompt for {step} to session {session}: it was closed while it was being written"),
        )
        .plan(&source)
        .step(&step)
        .session(session);
        fx.push(Effect::Log(log));
        true
    }

    /// A write failed: back off, say why once per streak. Returns when to
    /// retry.
    pub(super) fn on_undeliverable(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        why: Undeliverable,
        config: &EngineConfig,
        fx: &mut Vec<Effect>,
    ) -> Now {
        if self.withdraw_unwanted(session, seq, fx) {
            return now;
        }
        let about = self
            .pending(session, seq)
            .map(|p| (p.step.clone(), p.source.clone()));
        let (at, new) = self
            .lanes
            .failed(now, session, seq, about, &why.reason, config);
        if new {
            let pending = self.memory.outbox.len_of(session);
            fx.push(Effect::Log(
                Log::new(
                    Level::Warn,
                    format!(
                        "cannot deliver to session {session}: {}; {pending} prompt(s) kept in its outbox, retrying",
                        why.reason
                    ),
                )
                .session(session),
            ));
        }
        at
    }

    /// Whether prompt `seq` was taken could not be told (`why`): it is
    /// looked at again, never sent again on that, said once per prompt,
    /// with how it will be told (`then`).
    pub(super) fn on_doubt(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        (why, then): (&str, &str),
        fx: &mut Vec<Effect>,
    ) {
        if !self.lanes.doubt(now, session, seq) {
            return;
        }
        let Some(p) = self.pending(session, seq) else {
            return;
        };
        let log = Log::new(
            Level::Info,
            format!(
                "could not tell whether session {session} took {} ({why}); it is not sent again: {then}",
                p.step
            ),
        )
        .plan(&p.source)
        .step(&p.step)
        .session(session);
        fx.push(Effect::Log(log));
    }

    /// The prompt in doubt that a look at `session` made at `at` settles.
    pub(super) fn settled_by(&mut self, session: &str, at: Now) -> Option<u64> {
        self.lanes.settled_by(session, at)
    }

    /// A lane whose retry came due may send.
    pub(super) fn wake_lane(&mut self, session: String) {
        self.lanes.wake(&session);
    }

    /// The next prompt to write, if a lane can send (`Lanes::next`); its
    /// lane is busy until the outcome comes back.
    pub(super) fn poll_delivery(
        &mut self,
        now: Now,
        timers: &mut Timers,
        observed: &BTreeMap<String, Observed>,
    ) -> Option<Delivery> {
        let memory = &self.memory;
        // The one read of the children's share on the delivery path: a
        // child not yet seen to exist gets no prompt yet.
        let (session, p, again) = self.lanes.next(
            now,
            timers,
            |s| memory.outbox.front(s),
            |s| memory.children.is_planned(s),
            observed,
        )?;
        Some(self.delivery(session, p, again))
    }

    /// Pending prompt `p` to `session`, handed out (`again`: before).
    fn delivery(&self, session: String, p: &Pending, again: bool) -> Delivery {
        Delivery {
            seq: p.seq,
            text: p.text.clone(),
            plan: p.plan.clone(),
            step: p.step.clone(),
            parent: self.memory.children.parent_of(&session).map(str::to_string),
            again,
            session,
        }
    }

    /// Wake-ups refused at the cap were left unannounced: whether the
    /// outbox of `session` has room again, so every source must be diffed
    /// again for them to go out.
    fn drained(&mut self, session: &str, cap: usize) -> bool {
        // Hysteresis: diff again once the outbox is down to half the cap,
        // not after each delivery. Each diff goes over every plan; at the
        // cap it ran once per prompt delivered (10,000 prompts behind a cap
        // of 1,000 drained at ~40 a second) and logged "outbox full" each
        // time it refilled.
        let queued = self.memory.outbox.len_of(session);
        queued <= cap / 2 && self.capped.remove(session)
    }
}
