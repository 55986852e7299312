//! When each session's next prompt goes out: the one owner of delivery
//! timing. Per session a lane — the prompt being written, a prompt waiting
//! in the agent's inbox, the backoff after a failed write, the turn start
//! awaited for the journal — and the rule that picks the next prompt to
//! write (`Lanes::next`). The prompts themselves are the durable outboxes
//! (`core/memory/outboxes.rs`) in the ledger's memory; this part decides
//! only *when*.
//!
//! The rule, for one session:
//! - one prompt being written at a time, so prompts never interleave, and
//!   one stuck session never holds up another (each has its lane);
//! - after a failed write, the lane backs off (doubling up to
//!   `retry_max`) and retries when the backoff ends, or at once when the
//!   session shows a sign of life (a reader opened its pipe, it appeared,
//!   it went idle);
//! - a prompt taken into an agent's inbox that would merge a second one
//!   into it and forget it with the program (`Reached::Inbox`, Claude's) is
//!   delivered only once a turn is seen starting on it: the next prompt
//!   waits for that, and a session that goes away first gets it again;
//! - a kind whose agent would fold a prompt into the running turn
//!   (`Kind::waits_for_idle`, opencode's) gets its next prompt only while
//!   it is observed idle, and one its backend found busy after all
//!   (`Evidence::Busy`, `Lanes::held_busy`) waits for the next idle look,
//!   not for a backoff;
//! - nothing waits for an agent's turn to start or end otherwise: a
//!   Submit to an idle ollie-9p agent starts a turn, one to a busy agent
//!   runs after its turn, and the next prompt is written at once. The turn
//!   start is awaited only to say in the journal that the agent woke
//!   (`Timer::Confirm`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::config::{EngineConfig, Now};
use super::observed::Observed;
use super::timers::{Timer, Timers};
use crate::core::confirm;
use crate::core::input::Reached;
use crate::core::record::Pending;
use crate::core::session::{AgentState, Kind};
use crate::core::source::Source;

mod absence;

/// What a session was last told, and how it went — for `status`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Told {
    /// The prompt's sequence number.
    pub seq: u64,
    /// The step or task id the prompt was about.
    pub step: String,
    /// Its plan or tracker source, for the journal's `PLAN=`.
    #[serde(skip)]
    pub source: Option<Source>,
    pub outcome: Outcome,
    /// When (engine time).
    #[serde(skip)]
    pub at: Now,
}

/// How the last delivery to a session went.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Written to its pipe or file: the reader has it.
    Written,
    /// The agent took it; a turn on it starts now or after the running one.
    Accepted,
    /// Waiting in the agent's inbox for the running turn to end.
    InInbox,
    /// The agent started a turn on it.
    TurnStarted,
    /// The agent took it while idle, but no turn was seen starting in time.
    NotSeenStarting,
    /// It could not be written (the reason); it stays in the outbox.
    Refused(String),
}

/// A prompt handed to its session whose outcome has not come back — for
/// `status` and `why`: nothing else goes to the session meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub seq: u64,
    /// When it was handed out (engine time).
    pub since: Now,
    /// Whether the session took it could not be told: it is looked at
    /// again, never sent again on that.
    pub unsure: bool,
}

/// A turn start awaited after a delivery, for the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Confirming {
    pub(super) seq: u64,
    pub(super) step: String,
    /// The agent was observed idle when the prompt reached it: its turn
    /// starting is the wake-up.
    pub(super) was_idle: bool,
}

/// The delivery lane of one session.
#[derive(Debug, Clone, Default)]
pub(super) struct Lane {
    /// The prompt being written: its outcome has not come back yet.
    writing: Option<u64>,
    /// The session's observed state when that prompt was handed over: what
    /// the journal judges a delivery into an inbox by (woke an idle agent,
    /// or waits behind a running turn). Its outcome comes much later —
    /// Claude's inbox is confirmed by the transcript, by when an idle agent
    /// has long gone busy on the very prompt.
    writing_seen: Option<Observed>,
    /// A prompt in the agent's inbox, not yet seen reaching the model.
    inbox: Option<u64>,
    /// The turn start awaited for the journal.
    confirming: Option<Confirming>,
    backoff: Duration,
    /// The reason of the current failure streak, logged once.
    failing: Option<String>,
    /// Wake-ups refused because the outbox was full (shown in status).
    refused: u64,
    /// What the session was told last.
    last: Option<Told>,
    /// The prompt said to wait for the session to be idle (a kind that
    /// takes one only while idle), so it is said once.
    held_said: Option<u64>,
    /// The prompt last handed out, and the last moment a write of it may
    /// have happened (its hand-out, then its outcome): handed out again
    /// (after a failed write), it may have reached the agent all the same,
    /// and its kind's `unseen` window counts from then.
    handed: Option<(u64, Now)>,
    /// The prompt being written whose taking could not be told, and since
    /// when: it stays `writing` (nothing else goes, and it is never sent
    /// again on a doubt) until a look at the session made after that
    /// settles it (`core::taken::settle`).
    doubt: Option<(u64, Now)>,
    /// The prompt being written first found absent from an idle agent that
    /// may hide a prompt it starts (`core::taken`), and when: since it was
    /// last handed out to be written (`absence.rs`).
    absent: Option<(u64, Now)>,
    /// The prompt being written whose look waits for the session to be
    /// seen no longer busy (`core::taken::Verdict::LookWhenIdle`).
    look_when_idle: Option<u64>,
    /// The prompt proved not taken by looks: its next hand-out is a first
    /// delivery, written without a look (`Delivery::again` false).
    not_taken: Option<u64>,
}

impl Lane {
    /// Prompt `seq`'s write ended at `now`, refused (`reason`): what the
    /// session was last told, when it is about a step (`about`).
    fn write_refused(&mut self, now: Now, seq: u64, about: Option<(String, Source)>, reason: &str) {
        if let Some((s, at)) = self.handed.as_mut() {
            if *s == seq {
                *at = now;
            }
        }
        if let Some((step, source)) = about {
            self.last = Some(Told {
                seq,
                step,
                source: Some(source),
                outcome: Outcome::Refused(reason.to_string()),
                at: now,
            });
        }
    }
}

impl Lane {
    /// A prompt of this lane that cannot be withdrawn: being written, or
    /// already in the agent's inbox.
    pub(super) fn taken(&self, seq: u64) -> bool {
        self.writing == Some(seq) || self.inbox == Some(seq)
    }
}

/// Every session's lane, and which may be able to send.
#[derive(Debug, Default)]
pub(super) struct Lanes {
    lanes: BTreeMap<String, Lane>,
    /// Sessions whose lane may be able to send.
    dirty: BTreeSet<String>,
    /// The first sequence number of this run: a prompt numbered below it
    /// was announced by an earlier run, which may have delivered it.
    first_of_run: u64,
}

impl Lanes {
    pub(super) fn new(sessions: impl IntoIterator<Item = String>, first_of_run: u64) -> Lanes {
        Lanes {
            lanes: BTreeMap::new(),
            dirty: sessions.into_iter().collect(),
            first_of_run,
        }
    }

    pub(super) fn get(&self, session: &str) -> Option<&Lane> {
        self.lanes.get(session)
    }

    /// Whether prompt `seq` is being written to `session` (its outcome
    /// has not come back).
    pub(super) fn is_writing(&self, session: &str, seq: u64) -> bool {
        self.lanes
            .get(session)
            .is_some_and(|l| l.writing == Some(seq))
    }

    /// Whether prompt `seq` waits in `session`'s inbox.
    pub(super) fn in_inbox(&self, session: &str, seq: u64) -> bool {
        self.lanes
            .get(session)
            .is_some_and(|l| l.inbox == Some(seq))
    }

    /// When prompt `seq` of `session` was last handed out in this run (or
    /// its write last ended).
    pub(super) fn handed_at(&self, session: &str, seq: u64) -> Option<Now> {
        let lane = self.lanes.get(session)?;
        lane.handed.filter(|&(s, _)| s == seq).map(|(_, at)| at)
    }

    /// Wake-ups refused at the outbox cap, per session.
    pub(super) fn refused(&self) -> BTreeMap<String, u64> {
        let refused = self.lanes.iter().filter(|(_, l)| l.refused > 0);
        refused.map(|(s, l)| (s.clone(), l.refused)).collect()
    }

    /// How many sessions are currently failing.
    pub(super) fn failing_count(&self) -> usize {
        self.lanes.values().filter(|l| l.failing.is_some()).count()
    }

    /// Sessions currently failing, with the reason.
    pub(super) fn failing(&self) -> BTreeMap<String, String> {
        let failing = self.lanes.iter();
        failing
            .filter_map(|(s, l)| l.failing.clone().map(|r| (s.clone(), r)))
            .collect()
    }

    /// What `session` was last told, in this run.
    pub(super) fn last_told(&self, session: &str) -> Option<&Told> {
        self.lanes.get(session).and_then(|l| l.last.as_ref())
    }

    /// Every session's prompt in flight.
    pub(super) fn in_flight(&self) -> BTreeMap<String, InFlight> {
        let lanes = self.lanes.iter();
        let flying = lanes.filter_map(|(s, l)| {
            let seq = l.writing?;
            let since = l
                .handed
                .filter(|&(h, _)| h == seq)
                .map_or(Now::ZERO, |(_, at)| at);
            let unsure = l.doubt.is_some_and(|(d, _)| d == seq);
            Some((s.clone(), InFlight { seq, since, unsure }))
        });
        flying.collect()
    }

    /// What each session was last told and how it went.
    pub(super) fn told(&self) -> BTreeMap<String, Told> {
        let told = self.lanes.iter();
        told.filter_map(|(s, l)| l.last.clone().map(|t| (s.clone(), t)))
            .collect()
    }

    fn lane(&mut self, session: &str) -> &mut Lane {
        self.lanes.entry(session.to_string()).or_default()
    }

    /// A wake-up for `session` was refused at the outbox cap.
    pub(super) fn refuse(&mut self, session: &str) {
        self.lane(session).refused += 1;
    }

    /// The outcome of prompt `seq` came back after it left the outbox
    /// (withdrawn, or an outcome repeated): its write is over all the same.
    pub(super) fn write_ended(&mut self, session: &str, seq: u64) {
        self.lane(session).writing.take_if(|s| *s == seq);
        self.wake(session);
    }

    /// A write to `session` went through: whether that ends a failure
    /// streak (to be said).
    pub(super) fn recovered(&mut self, session: &str) -> bool {
        self.lane(session).failing.take().is_some()
    }

    /// `session`'s lane may be able to send (a prompt was queued, a write
    /// ended, its backoff ended).
    pub(super) fn wake(&mut self, session: &str) {
        self.dirty.insert(session.to_string());
    }

    /// The session showed a sign of life (a reader opened its pipe, it
    /// appeared, it went idle): a lane backing off retries now, and one
    /// waiting for it to be idle may send.
    pub(super) fn poke(&mut self, now: Now, session: &str, timers: &mut Timers) {
        let retry = Timer::Retry(session.to_string());
        if timers.get(&retry).is_some() {
            timers.set(retry, now);
        }
        self.wake(session);
    }

    /// The next session that may write its front prompt now, that prompt,
    /// and whether it was handed out before (in this run or an earlier
    /// one: `Delivery::again`); its lane is marked writing. A prompt handed
    /// out again waits for its kind's `unseen` window after its last write
    /// (`core::confirm::again_at`, `Timer::Unseen`). `front` gives a
    /// session's first pending prompt, `planned` whether it is a child not
    /// yet seen to exist (its prompt waits for it), `observed` its state.
    pub(super) fn next<'m>(
        &mut self,
        now: Now,
        timers: &mut Timers,
        front: impl Fn(&str) -> Option<&'m Pending>,
        planned: impl Fn(&str) -> bool,
        observed: &BTreeMap<String, Observed>,
    ) -> Option<(String, &'m Pending, bool)> {
        while let Some(session) = self.dirty.pop_first() {
            let retry = Timer::Retry(session.clone());
            let lane = self.lanes.entry(session.clone()).or_default();
            // Writing or in an inbox: the outcome or the turn start brings
            // it back. Backing off: the retry timer does.
            if lane.writing.is_some()
                || lane.inbox.is_some()
                || timers.get(&retry).is_some_and(|at| at > now)
            {
                continue;
            }
            timers.cancel(&retry);
            // A child not yet seen to exist: its prompt waits for it
            // rather than failing writes. A kind that folds a prompt into
            // the running turn: its going idle brings it back.
            if planned(&session) || !may_take_now(&session, observed) {
                continue;
            }
            let Some(p) = front(&session) else {
                continue;
            };
            let last = lane.handed.filter(|&(s, _)| s == p.seq).map(|(_, at)| at);
            let proved = lane.not_taken == Some(p.seq);
            let again = (last.is_some() || p.seq < self.first_of_run) && !proved;
            let at = confirm::again_at(Kind::of(&session).0, last);
            if again && at > now {
                timers.set(Timer::Unseen(session), at);
                continue;
            }
            timers.cancel(&Timer::Unseen(session.clone()));
            lane.handed_out(p.seq, again);
            lane.writing = Some(p.seq);
            lane.writing_seen = observed.get(&session).cloned();
            lane.handed = Some((p.seq, now));
            return Some((session, p, again));
        }
        None
    }

    /// The session's observed state when prompt `seq`, being written, was
    /// handed over (`None`: not known then, or not being written).
    pub(super) fn seen_at_write(&mut self, session: &str, seq: u64) -> Option<Observed> {
        let lane = self.lanes.get_mut(session)?;
        let seen = lane.writing_seen.take();
        seen.filter(|_| lane.writing == Some(seq))
    }

    /// The front prompts that wait only because their session, of a kind
    /// that takes one only while idle (`Kind::waits_for_idle`), is busy —
    /// each returned once, with that state, for the journal to say why it
    /// waits. A prompt being written is not waiting.
    pub(super) fn newly_held<'m>(
        &mut self,
        front: impl Fn(&str) -> Option<&'m Pending>,
        observed: &BTreeMap<String, Observed>,
    ) -> Vec<(String, &'m Pending, AgentState)> {
        let mut out = Vec::new();
        for (session, o) in observed {
            if o.state.is_idle() || !Kind::of(session).0.waits_for_idle() {
                continue;
            }
            let Some(p) = front(session) else {
                continue;
            };
            let lane = self.lane(session);
            if lane.writing.is_some() || lane.held_said == Some(p.seq) {
                continue;
            }
            lane.held_said = Some(p.seq);
            out.push((session.clone(), p, o.state.clone()));
        }
        out
    }

    /// A prompt reached its session, as `reached` says, the agent observed
    /// idle or busy then (`was_idle`, `None`: its state is not known).
    /// Returns whether it counts as delivered now (`Reached::Inbox` counts
    /// only once its turn starts).
    pub(super) fn delivered(
        &mut self,
        now: Now,
        session: &str,
        p: &Pending,
        (reached, was_idle): (Reached, Option<bool>),
        config: &EngineConfig,
        timers: &mut Timers,
    ) -> bool {
        let lane = self.lane(session);
        if lane.writing == Some(p.seq) {
            lane.writing = None;
        }
        // An outcome that came (a look at the record found it) ends a doubt.
        lane.doubt.take_if(|(s, _)| *s == p.seq);
        lane.answered(p.seq);
        lane.backoff = Duration::ZERO;
        timers.cancel(&Timer::Retry(session.to_string()));
        let outcome = match reached {
            Reached::Written => Outcome::Written,
            Reached::Accepted => Outcome::Accepted,
            Reached::Inbox => Outcome::InInbox,
        };
        lane.last = Some(Told {
            seq: p.seq,
            step: p.step.clone(),
            source: Some(p.source.clone()),
            outcome,
            at: now,
        });
        if reached == Reached::Inbox {
            lane.inbox = Some(p.seq);
        }
        // An agent whose state is known: its turn starting is awaited for
        // the journal, a bounded time (the lane does not wait for it,
        // unless the prompt is in an inbox).
        if reached != Reached::Written {
            if let Some(was_idle) = was_idle {
                lane.confirming = Some(Confirming {
                    seq: p.seq,
                    step: p.step.clone(),
                    was_idle,
                });
                timers.set(
                    Timer::Confirm(session.to_string()),
                    now + config.confirm_timeout,
                );
            }
        }
        self.wake(session);
        reached != Reached::Inbox
    }

    /// The agent started a turn on `seq`. Returns whether it was in the
    /// inbox (now delivered), the confirmation awaited of it, and what was
    /// told when it is the session's last delivery.
    pub(super) fn turn_started(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        timers: &mut Timers,
    ) -> (bool, Option<Confirming>, Option<Told>) {
        let Some(lane) = self.lanes.get_mut(session) else {
            return (false, None, None);
        };
        let from_inbox = lane.inbox == Some(seq);
        if from_inbox {
            lane.inbox = None;
            self.dirty.insert(session.to_string());
        }
        let confirmed = lane.confirming.take_if(|c| c.seq == seq);
        if confirmed.is_some() {
            timers.cancel(&Timer::Confirm(session.to_string()));
        }
        let told = lane.last.as_mut().filter(|t| t.seq == seq);
        let told = told.map(|t| {
            t.outcome = Outcome::TurnStarted;
            t.at = now;
            t.clone()
        });
        (from_inbox, confirmed, told)
    }

    /// The awaited turn start did not come in time.
    pub(super) fn not_seen_starting(&mut self, session: &str) -> Option<Confirming> {
        let lane = self.lanes.get_mut(session)?;
        let c = lane.confirming.take()?;
        if let Some(told) = lane.last.as_mut() {
            if told.outcome == Outcome::Accepted {
                told.outcome = Outcome::NotSeenStarting;
            }
        }
        Some(c)
    }

    /// The session went away: a prompt in its inbox went with the program
    /// that held it, and is delivered again when the session is back.
    /// Returns that prompt's seq.
    pub(super) fn gone(&mut self, session: &str, timers: &mut Timers) -> Option<u64> {
        let lane = self.lanes.get_mut(session)?;
        if lane.confirming.take().is_some() {
            timers.cancel(&Timer::Confirm(session.to_string()));
        }
        let lost = lane.inbox.take();
        self.dirty.insert(session.to_string());
        lost
    }

    /// Whether prompt `seq`, being written, was taken could not be told:
    /// it is looked at again. Returns whether that is news (said once).
    pub(super) fn doubt(&mut self, now: Now, session: &str, seq: u64) -> bool {
        let lane = self.lane(session);
        if lane.writing != Some(seq) {
            return false;
        }
        let new = lane.doubt.is_none_or(|(s, _)| s != seq);
        lane.doubt = Some((seq, now));
        new
    }

    /// The prompt in doubt that a look at `session` made at `at` settles:
    /// one made after the doubt arose.
    pub(super) fn settled_by(&mut self, session: &str, at: Now) -> Option<u64> {
        let lane = self.lanes.get_mut(session)?;
        let (seq, _) = lane.doubt.filter(|&(_, since)| at >= since)?;
        lane.doubt = None;
        Some(seq)
    }

    /// A write refused for a running turn (`core::taken::Verdict::WaitIdle`):
    /// the write is over, and the lane sends again once the session is
    /// observed idle (`may_take_now`) — no backoff and no failure streak:
    /// a turn ending is not a recovery to tell of.
    pub(super) fn held_busy(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        about: Option<(String, Source)>,
        reason: &str,
    ) {
        let lane = self.lane(session);
        if lane.writing == Some(seq) {
            lane.writing = None;
            lane.writing_seen = None;
        }
        lane.write_refused(now, seq, about, reason);
        self.wake(session);
    }

    /// A write failed: back off (doubling up to `retry_max`). Returns when
    /// to retry, and whether the reason is new (to be said once per
    /// streak).
    pub(super) fn failed(
        &mut self,
        now: Now,
        session: &str,
        seq: u64,
        about: Option<(String, Source)>,
        reason: &str,
        config: &EngineConfig,
    ) -> (Now, bool) {
        let lane = self.lane(session);
        if lane.writing == Some(seq) {
            lane.writing = None;
            lane.writing_seen = None;
        }
        lane.doubt.take_if(|(s, _)| *s == seq);
        lane.look_when_idle = None;
        // Its write is over by now, whatever it did.
        lane.write_refused(now, seq, about, reason);
        lane.backoff = if lane.backoff.is_zero() {
            config.retry_initial
        } else {
            (lane.backoff * 2).min(config.retry_max)
        };
        let new = lane.failing.as_deref() != Some(reason);
        if new {
            lane.failing = Some(reason.to_string());
        }
        (now + lane.backoff, new)
    }
}

/// Whether `session` may take a prompt now: a kind that would fold it
/// into a running turn only while it is observed idle.
fn may_take_now(session: &str, observed: &BTreeMap<String, Observed>) -> bool {
    let (kind, _) = Kind::of(session);
    !kind.waits_for_idle() || observed.get(session).is_some_and(|o| o.state.is_idle())
}
