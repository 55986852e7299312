//! Stuck (SPEC §12): a session busy longer than `stuck_after` with no
//! step checked in between — a turn looping, a tool hanging — is told to
//! the person once per busy stretch. Only a session reveille gave work in
//! this run counts: a person's own long turn is theirs. A wait for a
//! person is not busy here (it is told as what it is), and ends the
//! stretch, as idle does.

use std::collections::{BTreeMap, BTreeSet};

use super::config::{EngineConfig, Now};
use super::outbox::Told;
use super::timers::{Timer, Timers};
use crate::core::effect::{Effect, Level, Log, Notice, NoticeEvent};
use crate::core::session::AgentState;

/// Since when each session is busy with nothing checked, and which the
/// person was told of.
#[derive(Debug, Default)]
pub(super) struct Stuck {
    busy: BTreeMap<String, Now>,
    told: BTreeSet<String>,
}

impl Stuck {
    /// `session` is now in `state` (`None`: not observed).
    pub(super) fn on_state(
        &mut self,
        config: &EngineConfig,
        now: Now,
        session: &str,
        state: Option<&AgentState>,
        timers: &mut Timers,
    ) {
        if let Some(AgentState::Busy(_)) = state {
            if !self.busy.contains_key(session) {
                self.start(config, now, session, timers);
            }
            return;
        }
        self.busy.remove(session);
        self.told.remove(session);
        timers.cancel(&Timer::Stuck(session.to_string()));
    }

    /// `session` checked a step: a busy stretch counts from now.
    pub(super) fn progressed(
        &mut self,
        config: &EngineConfig,
        now: Now,
        session: &str,
        timers: &mut Timers,
    ) {
        if self.busy.contains_key(session) {
            self.told.remove(session);
            self.start(config, now, session, timers);
        }
    }

    fn start(&mut self, config: &EngineConfig, now: Now, session: &str, timers: &mut Timers) {
        self.busy.insert(session.to_string(), now);
        if let Some(after) = config.stuck_after {
            timers.set(Timer::Stuck(session.to_string()), now + after);
        }
    }

    /// `session`'s stuck timer fired; `told` is what it was last given.
    pub(super) fn on_due(
        &mut self,
        config: &EngineConfig,
        now: Now,
        session: &str,
        told: Option<&Told>,
        fx: &mut Vec<Effect>,
    ) {
        let (Some(&since), Some(after)) = (self.busy.get(session), config.stuck_after) else {
            return;
        };
        let Some(t) = told else { return };
        if now < since + after || !self.told.insert(session.to_string()) {
            return;
        }
        let secs = now.saturating_sub(since).as_secs();
        let plan = t.source.as_ref().map(|s| s.journal_name().into_owned());
        let of = plan
            .as_deref()
            .map(|p| format!(" of {p}"))
            .unwrap_or_default();
        let message = format!(
            "session {session} looks stuck: busy for {secs}s with no step checked (woken for {}{of})",
            t.step
        );
        let mut log = Log::new(Level::Warn, message)
            .session(session)
            .step(&t.step);
        if let Some(source) = &t.source {
            log = log.plan(source);
        }
        fx.push(Effect::Log(log));
        fx.push(Effect::Notify(Notice {
            event: NoticeEvent::Stuck,
            session: session.to_string(),
            summary: format!("{session} busy for {secs}s with nothing checked"),
            body: format!("Woken for {}{of}; busy since, no step checked.", t.step),
            plan: t.source.clone(),
            step: Some(t.step.clone()),
        }));
    }
}
