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

use super::outbox::Told;
use crate::core::effect::{Effect, Level, Log, Notice, NoticeEvent};
use crate::core::session::{AgentState, Wait};

/// A session's state went from `before` to `after` (`None`: not observed,
/// gone): a wait that began or ended is said and told.
pub(super) fn judge(
    session: &str,
    before: Option<&AgentState>,
    after: Option<&AgentState>,
    told: Option<&Told>,
    fx: &mut Vec<Effect>,
) {
    let was = before.and_then(AgentState::waiting);
    let is = after.and_then(AgentState::waiting);
    match (was, is) {
        // One wait, said more precisely (Codex names the command after
        // its flag): the person was told already.
        (Some(a), Some(b)) if a.on == b.on => {}
        (Some(a), Some(b)) => {
            ended(session, a, after, told, fx);
            began(session, b, told, fx);
        }
        (None, Some(w)) => began(session, w, told, fx),
        (Some(w), None) => ended(session, w, after, told, fx),
        (None, None) => {}
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
