//! Delivery lanes: one per session, at most one prompt in flight, retries
//! with backoff. Announcing records a wake-up and queues its prompt;
//! withdrawing takes back one that went stale before it could be written.

use std::collections::BTreeSet;
use std::time::Duration;

use super::timers::Timer;
use super::{Engine, Now};
use crate::core::effect::{Delivery, Effect, Level, Log};
use crate::core::record::{Item, Pending, Record};
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

impl Engine {
    pub(super) fn poke(&mut self, now: Now, session: String) {
        // Backing off (never while a write is in flight): retry now.
        let retry = Timer::Retry(session.clone());
        if self.timers.get(&retry).is_some() {
            self.timers.set(retry, now);
            self.dirty_lanes.insert(session);
        }
    }

    /// Record an announcement and queue its prompt. Returns false when the
    /// session's outbox is full: the item stays unannounced, so it is
    /// announced once there is room, and nothing is lost.
    pub(super) fn announce(&mut self, source: &Source, wake: Wake, fx: &mut Vec<Effect>) -> bool {
        let Wake {
            item,
            session,
            label: step,
            plan,
            text,
        } = wake;
        let queued = self.memory.outbox.get(session).map_or(0, |q| q.len());
        // Said once per streak: a streak ends when the outbox is empty.
        let full_said = format!("outbox-full:{session}");
        if queued == 0 {
            self.said.remove(&full_said);
        }
        if queued >= self.config.outbox_cap {
            let lane = self.lanes.entry(session.to_string()).or_default();
            lane.refused += 1;
            if self.capped.insert(session.to_string()) && self.said.insert(full_said) {
                fx.push(Effect::Log(
                    Log::new(
                        Level::Error,
                        format!(
                            "outbox full ({queued} prompts, outbox_cap = {}): new wake-ups for this session wait, unannounced, until it drains",
                            self.config.outbox_cap
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
        fx.push(Effect::Log(
            Log::new(
                Level::Info,
                format!("announced {step} to session {session}"),
            )
            .plan(source)
            .step(&step)
            .session(session)
            .file(&plan),
        ));
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

    pub(super) fn on_delivered(&mut self, session: String, seq: u64, fx: &mut Vec<Effect>) {
        let step = self
            .memory
            .outbox
            .get(&session)
            .and_then(|q| q.iter().find(|p| p.seq == seq))
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
        self.timers.cancel(&Timer::Retry(session.clone()));
        if lane.failing.take().is_some() {
            fx.push(Effect::Log(
                Log::new(Level::Info, "session is reachable again").session(&session),
            ));
        }
        if let Some((source, step)) = step {
            fx.push(Effect::Log(
                Log::new(Level::Debug, format!("delivered {step}"))
                    .plan(&source)
                    .step(&step)
                    .session(&session),
            ));
        }
        self.after_drain(&session, fx);
        self.dirty_lanes.insert(session);
    }

    /// The next prompt to write, if a lane can send — asked by the shell
    /// when it is ready to write (as quinn's `poll_transmit`), so a prompt
    /// withdrawn by an input handled in the meantime is never written. Each
    /// answer marks that session's lane busy until `Delivered` or
    /// `Undeliverable` comes back: one prompt per session at a time, never
    /// interleaved, and one stuck session never holds up another.
    pub fn poll_delivery(&mut self, now: Now) -> Option<Delivery> {
        while let Some(session) = self.dirty_lanes.pop_first() {
            let retry = Timer::Retry(session.clone());
            let lane = self.lanes.entry(session.clone()).or_default();
            // In flight, or backing off: the retry timer brings it back.
            if lane.inflight.is_some() || self.timers.get(&retry).is_some_and(|at| at > now) {
                continue;
            }
            self.timers.cancel(&retry);
            let Some(front) = self.memory.outbox.get(&session).and_then(|q| q.front()) else {
                continue;
            };
            lane.inflight = Some(front.seq);
            return Some(Delivery {
                session,
                seq: front.seq,
                text: front.text.clone(),
                plan: front.plan.clone(),
                step: front.step.clone(),
            });
        }
        None
    }

    /// Wake-ups refused at the cap were left unannounced: once the outbox
    /// has room again, diff every source again so they go out.
    pub(super) fn after_drain(&mut self, session: &str, fx: &mut Vec<Effect>) {
        // Hysteresis: diff again once the outbox is down to half the cap,
        // not after each delivery. Each diff goes over every plan; at the
        // cap it ran once per prompt delivered (10,000 prompts behind a cap
        // of 1,000 drained at ~40 a second) and logged "outbox full" each
        // time it refilled.
        let queued = self.memory.outbox.get(session).map_or(0, |q| q.len());
        if queued > self.config.outbox_cap / 2 || !self.capped.remove(session) {
            return;
        }
        for state in self.plans.values() {
            fx.push(Effect::Read {
                path: state.path.clone(),
                complete: true,
            });
        }
        for mount in self.config.mounts.clone() {
            fx.push(Effect::ReadMount { mount });
        }
        if self.config.beads_file.is_some() {
            fx.push(Effect::ReadBeads);
        }
    }
}
