//! The ledger: the durable memory (announced sets, outboxes) and the
//! delivery lanes over it. It is the only place records are applied.
//! Announcing records a wake-up and queues its prompt; withdrawing takes
//! back one that went stale before it could be written; each session's lane
//! has at most one prompt in flight and retries with backoff.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::config::{EngineConfig, Now};
use super::timers::{Timer, Timers};
use crate::core::effect::{Delivery, Effect, Level, Log};
use crate::core::input::Undeliverable;
use crate::core::record::{ChildState, Item, Memory, Pending, Record};
use crate::core::source::Source;

/// The delivery lane of one session: at most one prompt in flight, retries
/// with backoff, so one stuck session never delays another.
#[derive(Debug, Clone, Default)]
pub(super) struct Lane {
    pub(super) inflight: Option<u64>,
    pub(super) backoff: Duration,
    /// The reason of the current failure streak, logged once.
    pub(super) failing: Option<String>,
    /// Wake-ups refused because the outbox was full (shown in status).
    pub(super) refused: u64,
}

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
    /// The durable part, changed only through `Record`s.
    pub(super) memory: Memory,
    pub(super) lanes: BTreeMap<String, Lane>,
    /// Sessions whose lane may be able to send.
    dirty_lanes: BTreeSet<String>,
    /// Sessions whose outbox hit the cap since the last drain: when they
    /// drain, every source is diffed again.
    capped: BTreeSet<String>,
    /// Sessions told "outbox full" in the current streak (it ends when the
    /// outbox is empty).
    full_said: BTreeSet<String>,
    /// (session, source) pairs where the session checked a step since the
    /// coordinator last looked: their reminder clocks start again.
    pub(super) progressed: Vec<(String, Source)>,
    /// Sessions whose next prompt waits until the agent has run what it
    /// has queued (see `Sessions::on_queued`).
    held: BTreeSet<String>,
}

impl Ledger {
    pub(super) fn new(memory: Memory) -> Ledger {
        let dirty_lanes = memory.outbox.keys().cloned().collect();
        Ledger {
            memory,
            dirty_lanes,
            ..Ledger::default()
        }
    }

    /// Apply a record to memory and emit it, in that order of truth: the
    /// shell writes it before carrying out anything emitted after it.
    pub(super) fn record(&mut self, record: Record, fx: &mut Vec<Effect>) {
        self.memory.apply(&record);
        fx.push(Effect::Record(record));
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

    /// A journal entry about `session` names its parent too when it is a
    /// child reveille made (`PARENT=`).
    fn with_parent(&self, log: Log, session: &str) -> Log {
        match self.memory.children.get(session) {
            Some(child) => log.parent(&child.parent),
            None => log,
        }
    }

    /// A session showed signs of a reader: a lane backing off retries now.
    pub(super) fn poke(&mut self, now: Now, session: String, timers: &mut Timers) {
        // Backing off (never while a write is in flight): retry now.
        let retry = Timer::Retry(session.clone());
        if timers.get(&retry).is_some() {
            timers.set(retry, now);
            self.dirty_lanes.insert(session);
        }
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
        let queued = self.memory.outbox.get(session).map_or(0, |q| q.len());
        // Said once per streak: a streak ends when the outbox is empty.
        if queued == 0 {
            self.full_said.remove(session);
        }
        if queued >= cap {
            let lane = self.lanes.entry(session.to_string()).or_default();
            lane.refused += 1;
            if self.capped.insert(session.to_string()) && self.full_said.insert(session.to_string())
            {
                fx.push(Effect::Log(
                    Log::new(
                        Level::Error,
                        format!(
                            "outbox full ({queued} prompts, outbox_cap = {cap}): new wake-ups for this session wait, unannounced, until it drains",
                        ),
                    )
                    .session(session),
                ));
            }
            return false;
        }
        let seq = self.memory.next_seq;
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
        self.dirty_lanes.insert(session.to_string());
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
        for (session, queue) in &self.memory.outbox {
            let inflight = self.lanes.get(session).and_then(|l| l.inflight);
            for p in queue {
                // A prompt being written right now cannot be taken back.
                if p.source == *source && &p.item == item && Some(p.seq) != inflight {
                    found.push((session.clone(), p.seq, p.step.clone()));
                }
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
                    format!("withdrew pending prompt for {step}: {why}"),
                )
                .plan(source)
                .step(&step)
                .session(&session),
            ));
        }
        n
    }

    pub(super) fn withdraw_source(&mut self, source: &Source, why: &str, fx: &mut Vec<Effect>) {
        let items: BTreeSet<Item> = self
            .memory
            .outbox
            .values()
            .flatten()
            .filter(|p| p.source == *source)
            .map(|p| p.item.clone())
            .collect();
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

    /// A prompt reached its session. Returns whether a capped outbox has
    /// drained far enough that every source must be diffed again.
    pub(super) fn on_delivered(
        &mut self,
        session: String,
        seq: u64,
        config: &EngineConfig,
        timers: &mut Timers,
        fx: &mut Vec<Effect>,
    ) -> bool {
        // Only read for the journal entry, at debug level.
        let step = self
            .memory
            .outbox
            .get(&session)
            .and_then(|q| q.iter().find(|p| p.seq == seq))
            .filter(|_| config.logs(Level::Debug))
            .map(|p| (p.source.clone(), p.step.clone()));
        self.record(
            Record::Delivered {
                session: session.clone(),
                seq,
            },
            fx,
        );
        let lane = self.lanes.entry(session.clone()).or_default();
        if lane.inflight == Some(seq) {
            lane.inflight = None;
        }
        lane.backoff = Duration::ZERO;
        timers.cancel(&Timer::Retry(session.clone()));
        if lane.failing.take().is_some() {
            fx.push(Effect::Log(
                Log::new(Level::Info, "session is reachable again").session(&session),
            ));
        }
        if let Some((source, step)) = step {
            let log = Log::new(Level::Debug, format!("delivered {step}"))
                .plan(&source)
                .step(&step)
                .session(&session);
            fx.push(Effect::Log(self.with_parent(log, &session)));
        }
        let refill = self.drained(&session, config.outbox_cap);
        self.dirty_lanes.insert(session);
        refill
    }

    /// A write failed: back off (doubling up to `retry_max`), say why once
    /// per streak. Returns when to retry.
    pub(super) fn on_undeliverable(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        why: Undeliverable,
        config: &EngineConfig,
        fx: &mut Vec<Effect>,
    ) -> Now {
        let lane = self.lanes.entry(session.to_string()).or_default();
        if lane.inflight == Some(seq) {
            lane.inflight = None;
        }
        lane.backoff = if lane.backoff.is_zero() {
            config.retry_initial
        } else {
            (lane.backoff * 2).min(config.retry_max)
        };
        if lane.failing.as_deref() != Some(why.reason.as_str()) {
            let pending = self.memory.outbox.get(session).map_or(0, |q| q.len());
            fx.push(Effect::Log(
                Log::new(
                    Level::Warn,
                    format!(
                        "cannot deliver to session: {}; {pending} prompt(s) kept in its outbox, retrying",
                        why.reason
                    ),
                )
                .session(session),
            ));
            lane.failing = Some(why.reason);
        }
        now + lane.backoff
    }

    /// A lane whose retry came due may send.
    pub(super) fn wake_lane(&mut self, session: String) {
        self.dirty_lanes.insert(session);
    }

    /// Hold `session`'s lane: nothing more is offered for it until
    /// `release`.
    pub(super) fn hold(&mut self, session: &str) {
        self.held.insert(session.to_string());
    }

    /// Release a held lane; its next prompt is offered at once.
    pub(super) fn release(&mut self, session: &str) -> bool {
        let was = self.held.remove(session);
        if was {
            self.dirty_lanes.insert(session.to_string());
        }
        was
    }

    pub(super) fn is_held(&self, session: &str) -> bool {
        self.held.contains(session)
    }

    /// The next prompt to write, if a lane can send — asked by the shell
    /// when it is ready to write (as quinn's `poll_transmit`), so a prompt
    /// withdrawn by an input handled in the meantime is never written. Each
    /// answer marks that session's lane busy until `Delivered` or
    /// `Undeliverable` comes back: one prompt per session at a time, never
    /// interleaved, and one stuck session never holds up another.
    pub(super) fn poll_delivery(&mut self, now: Now, timers: &mut Timers) -> Option<Delivery> {
        while let Some(session) = self.dirty_lanes.pop_first() {
            let retry = Timer::Retry(session.clone());
            let lane = self.lanes.entry(session.clone()).or_default();
            // In flight, or backing off: the retry timer brings it back.
            // Held: its release does.
            if lane.inflight.is_some()
                || timers.get(&retry).is_some_and(|at| at > now)
                || self.held.contains(&session)
            {
                continue;
            }
            timers.cancel(&retry);
            // A child not yet seen to exist: its prompt waits for it
            // (`wake_lane` once it is listed) rather than failing writes.
            let planned = self.memory.children.get(&session);
            if planned.is_some_and(|c| c.state == ChildState::Planned) {
                continue;
            }
            let Some(front) = self.memory.outbox.get(&session).and_then(|q| q.front()) else {
                continue;
            };
            lane.inflight = Some(front.seq);
            return Some(Delivery {
                seq: front.seq,
                text: front.text.clone(),
                plan: front.plan.clone(),
                step: front.step.clone(),
                parent: self.memory.children.get(&session).map(|c| c.parent.clone()),
                session,
            });
        }
        None
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
        let queued = self.memory.outbox.get(session).map_or(0, |q| q.len());
        queued <= cap / 2 && self.capped.remove(session)
    }
}
