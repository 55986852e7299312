//! Reminders: an observed session that sits idle while a step or task
//! announced to it is still open is told again, boundedly.
//!
//! The rule, as pure functions of engine time: reminder `k + 1` of an item
//! is due once its session has been idle for `remind_after × 2^k`, counted
//! from the later of "idle since" and "its last prompt was heard"; at most
//! `remind_max` per item; none while the session is busy, not observed, or
//! still has a prompt for the item in its outbox. The count is durable (in
//! the announced entry, moved only by `Remind` and `RemindReset` records);
//! the clock is not — after a restart it counts from the state first seen.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::config::{EngineConfig, Now};
use super::context::Cx;
use super::ledger::Ledger;
use super::observed::Observed;
use super::timers::{Timer, Timers};
use crate::core::effect::{Effect, Level, Log, Notice, NoticeEvent};
use crate::core::memory::Announced;
use crate::core::prompt;
use crate::core::record::{Item, Note, Pending, Record, Work};
use crate::core::source::Source;

/// What a reminder names of an open item, from the part that owns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Open {
    /// The id agents see (`s3`, a task id).
    pub(super) label: String,
    pub(super) title: String,
    /// The plan file name or tracker source.
    pub(super) file: String,
    /// The plan's whole path (or the source again for tasks).
    pub(super) path: String,
    /// Exactly how it is closed (`core::close`).
    pub(super) call: String,
    /// The tracker mount it is on, by its current name: read before a
    /// reminder (9beads writes no event for some changes).
    pub(super) mount: Option<String>,
}

/// One open announced item as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReminderView {
    pub session: String,
    pub source: Source,
    pub id: String,
    pub title: String,
    /// Engine time its first prompt was heard in this run (`None`: before
    /// a restart, or not delivered yet).
    #[serde(skip)]
    pub heard_at: Option<Now>,
    /// Reminders sent since the session's last progress in the source.
    pub sent: u32,
    pub max: u32,
    /// Engine time the next reminder is due (`None`: none will be, as
    /// things stand: busy, not observed, pending, capped or disabled).
    #[serde(skip)]
    pub next_at: Option<Now>,
}

/// An item still open after its last reminder: warned of, and the person
/// told (`gave-up`).
fn gave_up(open: &Open, key: &Key, sent: u32, fx: &mut Vec<Effect>) {
    let (session, source, _) = key;
    let label = &open.label;
    let message = format!(
        "gave up on {label} for session {session}: still open after its last reminder ({sent} sent); a person must look"
    );
    let log = Log::new(Level::Warn, message)
        .plan(source)
        .step(label)
        .session(session)
        .file(&open.file);
    fx.push(Effect::Log(log));
    fx.push(Effect::Notify(Notice {
        event: NoticeEvent::GaveUp,
        session: session.clone(),
        summary: format!("{session} left {label} open after {sent} reminders"),
        body: format!("{label}: {}\n{}", open.title, open.path),
        plan: Some(source.clone()),
        step: Some(label.clone()),
    }));
}

/// A reminder's subject: (session, source, work).
type Key = (String, Source, Work);

/// How long a mount read asked for before a reminder vouches for it.
const VERIFY_WINDOW: Duration = Duration::from_secs(1);

/// The non-durable half of the reminder state: when prompts were heard.
#[derive(Debug, Default)]
pub(super) struct Reminders {
    /// When a prompt for the item (announcement or reminder) was last
    /// delivered in this run: an interval counts from after it.
    heard: BTreeMap<Key, Now>,
    /// When its first prompt was delivered in this run ("announced … ago").
    first: BTreeMap<Key, Now>,
    /// When the session last checked a step of the source in this run: a
    /// step checked in a turn too short for the state poll to see still
    /// restarts the clock.
    progress: BTreeMap<(String, Source), Now>,
    /// Reminders of a tracker mount's task held back while the mount is
    /// read once more: 9beads writes no event for `unclaim`, `reopen`,
    /// `defer`, `dep` and the rest, so a task can have stopped being the
    /// session's work without a word. Each is sent on the next tick, after
    /// the read, if it is still open then; the time is when the read was
    /// asked for.
    verifying: BTreeMap<Key, Now>,
}

/// When reminder `sent + 1` is due: `after × 2^sent` past `base`, or never
/// once `max` are sent. Intervals never shrink: the count only grows until
/// progress resets it.
pub(super) fn due_at(after: Duration, max: u32, sent: u32, base: Now) -> Option<Now> {
    if sent >= max {
        return None;
    }
    let factor = 1u32.checked_shl(sent).unwrap_or(u32::MAX);
    Some(base + after.saturating_mul(factor))
}

impl Reminders {
    /// A prompt for `item` reached `session`: for work, its clock starts.
    /// Only work is reminded of; a note's prompt starts no clock, but one:
    /// a claimed task has no prompt of its own — the claim's note told it,
    /// and its clock starts there, not when the session last went idle,
    /// which for an agent idle long before an outside claim would send a
    /// reminder right behind the claim itself.
    pub(super) fn heard(&mut self, now: Now, session: &str, source: &Source, item: &Item) {
        let work = match item {
            Item::Work(work) => work.clone(),
            Item::Note(Note::Claim(id, _)) => Work::Claimed(id.clone()),
            Item::Note(_) => return,
        };
        let key = (session.to_string(), source.clone(), work);
        self.first.entry(key.clone()).or_insert(now);
        self.heard.insert(key, now);
    }

    /// `session` checked a step of `source`.
    pub(super) fn progressed(&mut self, now: Now, session: String, source: Source) {
        self.progress.insert((session, source), now);
    }

    /// Forget what is kept for `session`'s items that left the announced
    /// set, so the maps hold only what is still announced.
    pub(super) fn prune(&mut self, ledger: &Ledger) {
        // Reminders read the whole memory, not one share: the work reminded
        // of is plans' steps and tasks alike.
        let memory = ledger.memory();
        let announced = |(session, source, work): &Key| {
            let items = memory.announced_of(source);
            let entry = items.and_then(|items| items.get(&Item::Work(work.clone())));
            entry.is_some_and(|a| a.session.as_ref() == Some(session))
        };
        self.heard.retain(|k, _| announced(k));
        self.first.retain(|k, _| announced(k));
        self.verifying.retain(|k, _| announced(k));
        self.progress
            .retain(|(_, source), _| memory.announced_of(source).is_some());
    }

    /// The work announced to `session`, open and not waiting in its
    /// outbox, with its reminder counts.
    fn open_items<'a>(
        ledger: &'a Ledger,
        session: &'a str,
    ) -> impl Iterator<Item = (&'a Source, &'a Work, &'a Announced)> + 'a {
        // Once, not per item: an outbox may hold a thousand prompts. A
        // claim's note is the prompt of the claimed task: until it is
        // heard, the task is not the session's to be reminded of.
        let queue = ledger.outbox().get(session).into_iter().flatten();
        let pending: BTreeSet<(&Source, &Work)> = queue
            .clone()
            .filter_map(|p| Some((&p.source, p.item.work()?)))
            .collect();
        let claims: BTreeSet<(&Source, &str)> = queue
            .filter_map(|p| match &p.item {
                Item::Note(Note::Claim(id, _)) => Some((&p.source, id.as_str())),
                _ => None,
            })
            .collect();
        let waiting = move |s: &Source, w: &Work| {
            pending.contains(&(s, w))
                || matches!(w, Work::Claimed(id) if claims.contains(&(s, id.as_str())))
        };
        let work = ledger.memory().work_of(session);
        work.filter(move |(s, w, _)| !waiting(s, w))
    }

    /// When the next reminder of one item is due, as things stand.
    fn next_at(
        &self,
        config: &EngineConfig,
        observed: Option<&Observed>,
        key: &Key,
        sent: u32,
    ) -> Option<Now> {
        let after = config.remind_after?;
        due_at(after, config.remind_max, sent, self.base(observed, key)?)
    }

    /// When an item still open after its last reminder is given up on —
    /// the interval a next reminder would have had, had there been one —
    /// unless the person was told so already (`a.gave_up`: durable, so
    /// a restart does not tell it again).
    fn give_up_at(
        &self,
        config: &EngineConfig,
        observed: Option<&Observed>,
        key: &Key,
        a: &Announced,
    ) -> Option<Now> {
        let after = config.remind_after?;
        let last = config.remind_max;
        if last == 0 || a.reminded < last || a.gave_up {
            return None;
        }
        let factor = 1u32.checked_shl(last).unwrap_or(u32::MAX);
        Some(self.base(observed, key)? + after.saturating_mul(factor))
    }

    /// What an item's interval counts from: the later of "idle since",
    /// its last prompt heard and the session's last progress in its source;
    /// `None` unless the session is observed idle.
    fn base(&self, observed: Option<&Observed>, key: &Key) -> Option<Now> {
        let o = observed.filter(|o| o.state.is_idle())?;
        let progress = self.progress.get(&(key.0.clone(), key.1.clone()));
        let base = [self.heard.get(key), progress]
            .into_iter()
            .flatten()
            .fold(o.since, |base, t| base.max(*t));
        Some(base)
    }

    /// Arm a reminder timer for every open item of `session` that will be
    /// due. Timers of items no longer eligible are left: each is judged
    /// again when it fires.
    pub(super) fn rearm(
        &self,
        config: &EngineConfig,
        session: &str,
        observed: Option<&Observed>,
        ledger: &Ledger,
        timers: &mut Timers,
    ) {
        // Nothing can come due for a session not seen idle (a named pipe
        // never is): skip the walk over the announced set.
        if config.remind_after.is_none() || !observed.is_some_and(|o| o.state.is_idle()) {
            return;
        }
        for (source, item, a) in Self::open_items(ledger, session) {
            let key = (session.to_string(), source.clone(), item.clone());
            let next = self.next_at(config, observed, &key, a.reminded);
            if let Some(at) = next.or_else(|| self.give_up_at(config, observed, &key, a)) {
                timers.set(Timer::Remind(key.0, key.1, key.2), at);
            }
        }
    }

    /// A reminder timer fired: judge the item again and, if it is still
    /// due, record the reminder (before it is written) and queue it; past
    /// its last reminder, give up on it once.
    pub(super) fn on_due(
        &mut self,
        now: Now,
        key: Key,
        open: Option<Open>,
        observed: Option<&Observed>,
        cx: &mut Cx,
    ) {
        // Asked for just now (not by a reminder cycle long past).
        let verified = self
            .verifying
            .remove(&key)
            .is_some_and(|asked| now.saturating_sub(asked) <= VERIFY_WINDOW);
        let (session, source, item) = &key;
        let Some(open) = open else { return };
        let found =
            Self::open_items(cx.ledger, session).find(|(s, w, _)| *s == source && *w == item);
        let Some(a) = found.map(|(_, _, a)| a.clone()) else {
            return;
        };
        let Some(at) = self.next_at(cx.config, observed, &key, a.reminded) else {
            return self.give_up_due(now, key, &open, (&a, observed), cx);
        };
        let again = Timer::Remind(session.clone(), source.clone(), item.clone());
        if at > now {
            return cx.timers.set(again, at);
        }
        if cx.ledger.outbox().len_of(session) >= cx.config.outbox_cap {
            return;
        }
        if let (Some(mount), false) = (&open.mount, verified) {
            // Read the mount first (a follow-up of this very tick, so its
            // answer is in before the timer comes round again, at once).
            cx.fx.push(Effect::ReadMount {
                mount: mount.clone(),
            });
            cx.timers.set(again, now);
            self.verifying.insert(key, now);
            return;
        }
        self.remind(now, &key, &open, (a.reminded + 1, at), cx);
    }

    /// An item past its last reminder: given up on when the interval a
    /// next reminder would have had is over (told and recorded once), or
    /// its timer set for then.
    fn give_up_due(
        &self,
        now: Now,
        key: Key,
        open: &Open,
        (a, observed): (&Announced, Option<&Observed>),
        cx: &mut Cx,
    ) {
        let Some(at) = self.give_up_at(cx.config, observed, &key, a) else {
            return;
        };
        if at > now {
            return cx.timers.set(Timer::Remind(key.0, key.1, key.2), at);
        }
        gave_up(open, &key, a.reminded, cx.fx);
        let (session, source, work) = key;
        let record = Record::GaveUp {
            source,
            item: Item::Work(work),
            session,
        };
        cx.ledger.record(record, cx.fx);
    }

    /// Reminder `n` of `key`'s item, due at `at`: recorded with its prompt
    /// (before it is written), said, and its session's lane woken.
    fn remind(&self, now: Now, key: &Key, open: &Open, (n, at): (u32, Now), cx: &mut Cx) {
        let (session, source, item) = key;
        let since = self.first.get(key).copied().unwrap_or(at);
        let text = render(cx.config, open, session, n, now.saturating_sub(since));
        let pending = Pending {
            seq: cx.ledger.position().next_seq(),
            source: source.clone(),
            item: item.clone().into(),
            step: open.label.clone(),
            plan: open.file.clone(),
            text,
        };
        let record = Record::Remind {
            source: source.clone(),
            item: item.clone().into(),
            session: session.clone(),
            n,
            pending,
        };
        cx.ledger.record(record, cx.fx);
        cx.fx.push(Effect::Log(
            Log::new(
                Level::Info,
                format!(
                    "reminded session {session} of {} (reminder {n} of {}): still open after it went idle",
                    open.label, cx.config.remind_max
                ),
            )
            .plan(source)
            .step(&open.label)
            .session(session)
            .file(&open.file)
            .reminder(n),
        ));
        cx.ledger.wake_lane(session.clone());
    }

    /// Every open announced item, for `status`.
    pub(super) fn views(
        &self,
        config: &EngineConfig,
        ledger: &Ledger,
        observed: &BTreeMap<String, Observed>,
        open: impl Fn(&str, &Source, &Work) -> Option<Open>,
    ) -> Vec<ReminderView> {
        let sessions = ledger.memory().announced().flat_map(|(_, items)| {
            items
                .iter()
                .filter(|(i, _)| i.work().is_some())
                .filter_map(|(_, a)| a.session.clone())
        });
        let sessions: BTreeSet<String> = sessions.collect();
        let mut out = Vec::new();
        for session in sessions {
            for (source, item, a) in Self::open_items(ledger, &session) {
                let sent = a.reminded;
                let Some(o) = open(&session, source, item) else {
                    continue;
                };
                let key = (session.clone(), source.clone(), item.clone());
                out.push(ReminderView {
                    session: session.clone(),
                    source: source.clone(),
                    id: o.label,
                    title: o.title,
                    heard_at: self.first.get(&key).copied(),
                    sent,
                    max: config.remind_max,
                    next_at: self.next_at(config, observed.get(&session), &key, sent),
                });
            }
        }
        out
    }
}

/// Progress: `session` checked a step of `source`, so its reminder counts
/// there start again (recorded only when there is a count to reset).
pub(super) fn progress(ledger: &mut Ledger, source: &Source, session: &str, fx: &mut Vec<Effect>) {
    ledger.progressed(session, source);
    // Progress is a plan's step checked: the count is in the plans' share.
    if ledger.plans().reminded_in(source, session) {
        ledger.record(
            Record::RemindReset {
                source: source.clone(),
                session: session.to_string(),
            },
            fx,
        );
    }
}

/// A reminder's text from the configured template.
fn render(config: &EngineConfig, open: &Open, session: &str, n: u32, ago: Duration) -> String {
    prompt::render(
        &config.templates.remind,
        &[
            ("id", &open.label),
            ("title", &open.title),
            ("file", &open.file),
            ("path", &open.path),
            ("session", session),
            ("ago", &human(ago)),
            ("n", &n.to_string()),
            ("max", &config.remind_max.to_string()),
            ("close", &open.call),
            ("call", &open.call),
        ],
    )
}

/// `45s`, `12m`, `3h 5m`: how long, for a person or an agent.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}
