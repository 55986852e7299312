//! Waiting for a person (SPEC §12): a session whose turn stopped halfway
//! for its user — a permission prompt, a question — as its agent's own
//! signals say. No prompt, reminder or retry moves it on (its state is
//! not idle, so the outbox holds its prompts and no reminder comes); only
//! a person can. So the journal warns, and the person is told once per
//! wait, and told again when it ends. reveille never answers it.
//!
//! The rule here is only the edge: a state that begins a wait, one that
//! ends it. Which step it is about is what the session was last told in
//! this run (the work it was woken for).
//!
//! A wait is often said first without what it is for, and named a moment
//! later: Claude Code's registry says only "permission prompt" or "input
//! needed", and the tool call is in its transcript after the next flush
//! (batches of 100 ms); Codex names the command after its flag. Told at
//! once, the person would get "approve" without the command. So a wait
//! seen nameless is told once named, or after [`NAMING`] all the same.

use std::collections::BTreeMap;

use super::config::Now;
use super::outbox::Told;
use super::timers::{Timer, Timers};
use crate::core::effect::{Effect, Level, Log, Notice, NoticeEvent};
use crate::core::session::{AgentState, Wait};

/// How long a nameless wait may wait for its name before it is told
/// without one: twice Claude Code's transcript flush batch, with room for
/// a loaded machine, and well inside the second the person is promised.
pub const NAMING: std::time::Duration = std::time::Duration::from_millis(300);

/// The waits seen without a name and not told yet.
#[derive(Debug, Default)]
pub(super) struct Waits {
    nameless: BTreeMap<String, Wait>,
}

/// One change of a session's state, as the wait rule needs it.
pub(super) struct Change<'a> {
    pub session: &'a str,
    /// The state before and after (`None`: not observed, gone).
    pub before: Option<&'a AgentState>,
    pub after: Option<&'a AgentState>,
    /// What the session was last given in this run.
    pub told: Option<&'a Told>,
    pub now: Now,
}

impl Waits {
    /// A session's state changed: a wait that began or ended is said and
    /// told (a nameless one once named, or when [`NAMING`] is up).
    pub(super) fn judge(&mut self, c: Change, timers: &mut Timers, fx: &mut Vec<Effect>) {
        let was = c.before.and_then(AgentState::waiting);
        let is = c.after.and_then(AgentState::waiting);
        match (was, is) {
            // One wait, said more precisely: told now if it waited for
            // its name, else the person was told already.
            (Some(a), Some(b)) if a.on == b.on => {
                if !b.what.is_empty() && self.forget(c.session, timers) {
                    began(c.session, b, c.told, fx);
                }
            }
            (Some(a), Some(b)) => {
                self.end(&c, a, timers, fx);
                self.begin(&c, b, timers, fx);
            }
            (None, Some(w)) => self.begin(&c, w, timers, fx),
            (Some(w), None) => self.end(&c, w, timers, fx),
            (None, None) => {}
        }
    }

    /// `session`'s nameless wait waited long enough for its name: told
    /// as it is.
    pub(super) fn on_due(&mut self, session: &str, told: Option<&Told>, fx: &mut Vec<Effect>) {
        if let Some(wait) = self.nameless.remove(session) {
            began(session, &wait, told, fx);
        }
    }

    fn begin(&mut self, c: &Change, wait: &Wait, timers: &mut Timers, fx: &mut Vec<Effect>) {
        if !wait.what.is_empty() {
            return began(c.session, wait, c.told, fx);
        }
        self.nameless.insert(c.session.to_string(), wait.clone());
        timers.set(Timer::Naming(c.session.to_string()), c.now + NAMING);
    }

    /// A wait ended: told resolved, unless it ended before it was told
    /// (then the person hears of neither).
    fn end(&mut self, c: &Change, wait: &Wait, timers: &mut Timers, fx: &mut Vec<Effect>) {
        if !self.forget(c.session, timers) {
            ended(c.session, wait, c.after, c.told, fx);
        }
    }

    /// Drop `session`'s untold nameless wait; whether there was one.
    fn forget(&mut self, session: &str, timers: &mut Timers) -> bool {
        timers.cancel(&Timer::Naming(session.to_string()));
        self.nameless.remove(session).is_some()
    }
}

/// `s1 of plan 20260101T000000_a1b2c3d4`, or nothing when this run
/// told the session nothing.
fn woken_for(told: Option<&Told>) -> String {
    match told {
        Some(t) => match &t.source {
            Some(source) => format!(" (woken for {} of {})", t.step, source.journal_name()),
            None => format!(" (woken for {})", t.step),
        },
        None => String::new(),
    }
}

fn with_work(mut log: Log, told: Option<&Told>) -> Log {
    if let Some(t) = told {
        log = log.step(&t.step);
        if let Some(source) = &t.source {
            log = log.plan(source);
        }
    }
    log
}

fn notice(
    event: NoticeEvent,
    session: &str,
    summary: String,
    body: String,
    told: Option<&Told>,
) -> Notice {
    Notice {
        event,
        session: session.to_string(),
        summary,
        body,
        plan: told.and_then(|t| t.source.clone()),
        step: told.map(|t| t.step.clone()),
    }
}

fn began(session: &str, wait: &Wait, told: Option<&Told>, fx: &mut Vec<Effect>) {
    let ask = wait.ask();
    let woken = woken_for(told);
    let message = format!(
        "session {session} waits for a person: {ask}{woken}; only a person can move it on (reveille does not answer), so no reminder comes and its prompts wait"
    );
    let log = Log::new(Level::Warn, message)
        .session(session)
        .waiting(wait.on);
    fx.push(Effect::Log(with_work(log, told)));
    let summary = format!("{session} waits for you: {ask}");
    let mut body = format!("The agent in session {session}{woken} waits for a person.");
    if !wait.what.trim().is_empty() {
        body.push_str("\n\n");
        body.push_str(wait.what.trim());
    }
    let n = notice(NoticeEvent::Waiting, session, summary, body, told);
    fx.push(Effect::Notify(n));
}

fn ended(
    session: &str,
    wait: &Wait,
    now: Option<&AgentState>,
    told: Option<&Told>,
    fx: &mut Vec<Effect>,
) {
    let ask = wait.ask();
    let now = match now {
        Some(state) => format!("now {state}"),
        None => "it is gone or its program is not running".to_string(),
    };
    let message = format!("session {session} no longer waits for a person ({ask}): {now}");
    let log = Log::new(Level::Info, message)
        .session(session)
        .waiting(wait.on);
    fx.push(Effect::Log(with_work(log, told)));
    let summary = format!("{session} no longer waits: {now}");
    let body = format!("The agent in session {session} was asked to {ask}; {now}.");
    let n = notice(NoticeEvent::Resolved, session, summary, body, told);
    fx.push(Effect::Notify(n));
}
