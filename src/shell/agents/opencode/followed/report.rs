//! What is seen of each followed session, told to the engine as looks
//! (`Input::Observed`): every state the event stream or a call gives,
//! changed or not — the engine keeps the newest look and decides by it.
//! A state read by a call is told only if the stream said nothing of the
//! session while the call was under way (the stream's word is newer), and
//! stamped with the call's start: the engine's newest look wins over it,
//! whichever answered first.

use std::time::Instant;

use super::Followed;
use crate::core::session::{AgentState, Wait};
use crate::shell::agents::presence::{self, Presence};

impl Followed {
    /// The sessions whose idle the engine may be waiting for: reported
    /// busy, or reported unreachable by a call that failed while the event
    /// stream stayed up (a link cut shorter than its silence limit): the
    /// stream will not say the session is back, since for it the session
    /// never went.
    pub fn awaiting_idle(&self) -> Vec<String> {
        let waits = |p: &Presence| p.is_busy() || matches!(p, Presence::Unreachable(_));
        let waiting = self.sessions.iter();
        let waiting = waiting.filter(|(_, s)| s.reported.as_ref().is_some_and(waits));
        waiting.map(|(id, _)| id.clone()).collect()
    }

    /// A state the event stream gave (`None`: the session was deleted).
    pub fn streamed(&mut self, id: &str, state: Option<AgentState>) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.streamed += 1;
        }
        self.state(id, state);
    }

    /// Where the event stream is for `id` now, before a call reads its
    /// state: how many states it gave so far, and when.
    pub fn mark(&self, id: &str) -> Mark {
        Mark {
            streamed: self.sessions.get(id).map_or(0, |s| s.streamed),
            at: Instant::now(),
        }
    }

    /// A state read by a call begun at `before`: applied only if the
    /// stream gave none of `id` since (a turn that ended while `GET
    /// /session/status` was under way must not be undone by its stale
    /// "busy"), and told as seen at the call's start. Returns the state
    /// that holds now (`None`: gone, or not known — its server did not
    /// answer).
    pub fn polled(
        &mut self,
        id: &str,
        state: Option<AgentState>,
        before: Mark,
    ) -> Option<AgentState> {
        let Some(s) = self.sessions.get(id) else {
            return state;
        };
        if s.streamed != before.streamed {
            return match &s.reported {
                Some(Presence::State(state)) => state.clone(),
                _ => None,
            };
        }
        self.seen(id, state.clone(), Some(before.at));
        state
    }

    /// The session's state as the server says (`None`: gone), told.
    pub fn state(&mut self, id: &str, state: Option<AgentState>) {
        self.seen(id, state, None);
    }

    /// The session's state, seen at `at` (`None`: now), told.
    fn seen(&mut self, id: &str, state: Option<AgentState>, at: Option<Instant>) {
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        match &state {
            Some(AgentState::Idle) | None => {
                s.busy_with_tool = None;
                // A turn on reveille's prompt ran and ended; one whose
                // turn was not seen yet stays (its answer or the engine's
                // look tells), unless the session is gone.
                let over = s.posted.as_ref().is_some_and(|p| p.busy_seen || p.started);
                if over || state.is_none() {
                    s.posted = None;
                }
            }
            Some(AgentState::Busy(_) | AgentState::Waiting(_)) => {
                if let Some(p) = s.posted.as_mut() {
                    p.busy_seen = true;
                }
            }
        }
        let shown = match (&state, &s.busy_with_tool) {
            (Some(AgentState::Busy(_)), Some(tool)) => {
                Some(AgentState::Busy(format!("calling: {tool}")))
            }
            _ => state,
        };
        self.report(id, shown, at);
    }

    /// A tool started (`Some`) or ended in session `id`.
    pub fn tool(&mut self, id: &str, running: Option<String>) {
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        if !s.reported.as_ref().is_some_and(Presence::is_busy) {
            return;
        }
        s.busy_with_tool = running.clone();
        let shown = match running {
            Some(tool) => AgentState::Busy(format!("calling: {tool}")),
            None => AgentState::Busy("busy".into()),
        };
        self.report(id, Some(shown), None);
    }

    /// The server stopped answering: every followed session is
    /// unreachable.
    pub fn server_gone(&mut self, why: &str) {
        let ids: Vec<String> = self.sessions.keys().cloned().collect();
        for id in ids {
            self.unreachable(&id, why);
        }
    }

    /// The server does not answer for `id`: nothing is known of it until
    /// it does (what it was running is forgotten, as for a gone session:
    /// opencode does not resume a turn); told.
    pub fn unreachable(&mut self, id: &str, why: &str) {
        let name = self.engine_name(id);
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        s.busy_with_tool = None;
        s.posted = None;
        let down = Presence::Unreachable(why.to_string());
        if s.reported.as_ref() != Some(&down) {
            tracing::debug!("opencode session {id} is unreachable: {why}");
        }
        let input = presence::tell(&mut s.reported, down, &name);
        self.send(input);
    }

    /// The event stream says a person was asked (`Some`) or answered
    /// (`None`) request `request` of session `id`.
    pub fn request(&mut self, id: &str, request: &str, wait: Option<Wait>) {
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        s.streamed += 1;
        s.waits.set(request, wait);
        self.report_again(id);
    }

    /// The requests pending in `id` as the server lists them, read when
    /// the stream had given `before` states of it: applied only if it gave
    /// none since (as [`Followed::polled`]).
    pub fn pending(&mut self, id: &str, pending: Vec<(String, Wait)>, before: Mark) {
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        if s.streamed == before.streamed {
            s.waits.replace(pending);
            self.report_again(id);
        }
    }

    /// What was last reported of `id`, said again with its requests (a
    /// request pending makes an idle session busy: it is mid-turn).
    fn report_again(&mut self, id: &str) {
        let Some(s) = self.sessions.get(id) else {
            return;
        };
        let Some(Presence::State(last)) = &s.reported else {
            return;
        };
        let state = match last {
            Some(AgentState::Idle) | None if !s.waits.is_empty() => {
                Some(AgentState::Busy("busy".into()))
            }
            last => last.clone(),
        };
        self.report(id, state, None);
    }

    /// Tell `state` of `id`, every time, changed or not: the engine keeps
    /// the newest look. An idle seen just after reveille's post, before
    /// its turn starts, is told too — the session is idle then; the
    /// engine holds the session's next prompt until the one posted is
    /// settled, and the courier's own status read before each post stops
    /// a prompt into a running turn (`Evidence::Busy`).
    fn report(&mut self, id: &str, state: Option<AgentState>, at: Option<Instant>) {
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        let state = s.waits.over(state);
        let now = Presence::State(state.clone());
        if s.reported.as_ref() != Some(&now) {
            tracing::debug!("opencode session {id} is {state:?}");
        }
        s.reported = Some(now);
        let look = Presence::State(state).input(&self.engine_name(id));
        match at {
            // The loop has stopped when nobody receives: nothing to tell.
            Some(at) => drop(self.reports.send_seen_at(look, at)),
            None => self.send(look),
        }
    }
}

/// Where the event stream was for one session when a call began to read
/// its state (`Followed::mark`).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    /// How many states the stream had given of it.
    streamed: u64,
    /// When.
    at: Instant,
}
