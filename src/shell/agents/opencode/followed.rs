//! The opencode sessions reveille follows on one server — every session it
//! was asked to deliver to or made as a child — with what it last reported
//! of each and the prompt of reveille's that each is running. The event
//! follower and the courier both update it (behind one mutex, so their
//! reports reach the engine in the order they were decided), and it alone
//! turns what they learn into `Input`s: a state only when it changed, a
//! turn start once per prompt — each under the name the engine knows the
//! session by (a child's is the engine's, not opencode's id: `names`).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::api::MessageInfo;
use super::waits::Waits;
use crate::core::input::{Input, Reached};
use crate::core::session::{AgentState, Kind, Wait};
use crate::shell::agents::presence::{self, Presence};
use crate::shell::backend::Reports;

/// How long a prompt reveille posted may go without its turn being seen
/// before it no longer holds the session's next prompt back: `prompt_async`
/// turns busy 60–190 ms after the post, so a prompt still unseen after
/// this failed to start (the next delivery checks the session's status
/// anyway).
const UNSEEN: Duration = Duration::from_secs(5);

/// A prompt of reveille's that the server took.
#[derive(Debug, Clone)]
pub struct Posted {
    pub seq: u64,
    /// Its `messageID`.
    pub id: String,
    pub at: Instant,
    /// The session was seen busy since: its turn is running.
    pub busy_seen: bool,
    /// An answer to it was seen: `TurnStarted` was reported.
    pub started: bool,
    /// The server stored it (its user message was seen): `prompt_async`
    /// answers before it does, so a server killed in between loses it.
    pub stored: bool,
    /// `Delivered` was reported: a `TurnStarted` seen before waits for it.
    pub delivered: bool,
    /// `Evidence::Sent` was reported: the engine waits for an answer to it
    /// (or looks for it), and an answer seen tells it `Delivered` first.
    pub sent: bool,
}

/// One followed session.
#[derive(Debug, Default)]
struct Session {
    /// The engine's name for it when that is not `opencode:<its id>` (a
    /// child reveille made).
    name: Option<String>,
    /// Its working directory, once its record was read.
    directory: Option<String>,
    /// What was last reported (`None`: nothing yet).
    reported: Option<Presence>,
    /// How many states the event stream gave for it: a state read by a
    /// call is stale if the stream spoke while the call was under way.
    streamed: u64,
    /// The state as last seen, before tool detail is added.
    busy_with_tool: Option<String>,
    /// The requests it waits on a person for.
    waits: Waits,
    /// Reveille's prompt it runs or is about to run.
    posted: Option<Posted>,
    /// Its next idle is reported even if idle was the last thing reported:
    /// a prompt was refused for being busy meanwhile, and the engine waits
    /// for that idle to retry.
    owe_idle: bool,
    /// Its transcript was searched for a copy of a prompt in this run:
    /// later deliveries need not look for one sent before a restart (only
    /// the first prompt of a session's outbox can have been in flight when
    /// reveille stopped).
    looked: bool,
    /// Its last messages, read when it was first followed (before any
    /// delivery): where the first delivery looks for a copy sent before a
    /// restart, so that no read of the transcript is on the wake path.
    snapshot: Option<Vec<MessageInfo>>,
    /// Seqs whose post broke midway: it may have been taken.
    uncertain: Vec<u64>,
    /// The last [`KEPT`] seqs reported delivered in this run: delivered
    /// again without a second post.
    delivered: Vec<u64>,
}

/// How many delivered seqs are remembered per session (the engine repeats
/// only the prompt in flight; a few suffice).
const KEPT: usize = 64;

/// What holds a session's next prompt back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// Nothing of reveille's runs there.
    Free,
    /// This very prompt was already taken (in this run).
    Taken,
    /// Reveille's prompt `seq` has not finished its turn yet.
    Running(u64),
}

/// [`Followed`] shared by the event follower and the courier, with a
/// signal for the courier waiting to see its prompt stored.
pub struct Shared {
    followed: Mutex<Followed>,
    seen: Condvar,
}

impl Shared {
    pub fn new(reports: Reports) -> Shared {
        Shared {
            followed: Mutex::new(Followed::new(reports)),
            seen: Condvar::new(),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, Followed> {
        // A panic while holding it leaves nothing half-done that matters
        // more than going on.
        self.followed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wake whoever waits in [`Shared::wait_stored`].
    pub fn notify(&self) {
        self.seen.notify_all();
    }

    /// Wait up to `timeout` until message `message_id` of `id` is seen
    /// stored; whether it was (`None`: it is no longer reveille's prompt
    /// there, e.g. its whole turn already ran).
    pub fn wait_stored(&self, id: &str, message_id: &str, timeout: Duration) -> Option<bool> {
        let deadline = Instant::now() + timeout;
        let mut f = self.lock();
        loop {
            match f.stored(id, message_id) {
                Some(false) => {}
                other => return other,
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Some(false);
            }
            f = self
                .seen
                .wait_timeout(f, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// Every followed session of one server.
pub struct Followed {
    reports: Reports,
    sessions: HashMap<String, Session>,
}

impl Followed {
    pub fn new(reports: Reports) -> Followed {
        Followed {
            reports,
            sessions: HashMap::new(),
        }
    }

    pub fn send(&self, input: Input) {
        // The loop has stopped when nobody receives: nothing to tell.
        let _ = self.reports.send(input);
    }

    /// Start following session `id` (a bare opencode id).
    pub fn learn(&mut self, id: &str) {
        self.sessions.entry(id.to_string()).or_default();
    }

    pub fn forget(&mut self, id: &str) {
        self.sessions.remove(id);
    }

    /// The engine calls followed session `id` `name` (a child).
    pub fn call(&mut self, id: &str, name: &str) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.name = Some(name.to_string());
        }
    }

    /// The id of the followed session the engine calls `name`.
    pub fn find(&self, name: &str) -> Option<String> {
        self.sessions
            .iter()
            .find(|(_, s)| s.name.as_deref() == Some(name))
            .map(|(id, _)| id.clone())
    }

    /// Whether `id` is followed and its state was reported.
    pub fn reported(&self, id: &str) -> bool {
        self.sessions.get(id).is_some_and(|s| s.reported.is_some())
    }

    /// What the engine calls session `id`.
    fn engine_name(&self, id: &str) -> String {
        match self.sessions.get(id).and_then(|s| s.name.clone()) {
            Some(name) => name,
            None => Kind::Opencode.qualify(id),
        }
    }

    /// Every followed session, with its directory when known.
    pub fn ids(&self) -> Vec<(String, Option<String>)> {
        self.sessions
            .iter()
            .map(|(id, s)| (id.clone(), s.directory.clone()))
            .collect()
    }

    pub fn directory(&self, id: &str) -> Option<String> {
        self.sessions.get(id)?.directory.clone()
    }

    pub fn set_directory(&mut self, id: &str, directory: &str) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.directory = Some(directory.to_string());
        }
    }

    /// What holds a delivery of `seq` to `id` back.
    pub fn guard(&self, id: &str, seq: u64) -> Guard {
        let Some(s) = self.sessions.get(id) else {
            return Guard::Free;
        };
        if s.delivered.contains(&seq) {
            return Guard::Taken;
        }
        let Some(p) = s.posted.as_ref() else {
            return Guard::Free;
        };
        if p.seq == seq {
            Guard::Taken
        } else if !p.busy_seen && !p.started && p.at.elapsed() > UNSEEN {
            Guard::Free
        } else {
            Guard::Running(p.seq)
        }
    }

    /// Whether a delivery of `seq` must first look for a copy already in
    /// the transcript.
    pub fn must_look(&self, id: &str, seq: u64) -> bool {
        self.sessions
            .get(id)
            .is_none_or(|s| !s.looked || s.uncertain.contains(&seq))
    }

    /// The transcript of `id` was searched for a copy (found or not).
    pub fn looked(&mut self, id: &str) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.looked = true;
        }
    }

    /// Keep `messages`, the session's last ones, for its first delivery's
    /// look (unless one looked already).
    pub fn keep_snapshot(&mut self, id: &str, messages: Vec<MessageInfo>) {
        if let Some(s) = self.sessions.get_mut(id).filter(|s| !s.looked) {
            s.snapshot = Some(messages);
        }
    }

    /// The messages kept for a look, once; `None` for a `seq` whose post
    /// broke midway (what it left can only be read now).
    pub fn take_snapshot(&mut self, id: &str, seq: u64) -> Option<Vec<MessageInfo>> {
        let s = self.sessions.get_mut(id)?;
        if s.uncertain.contains(&seq) {
            return None;
        }
        s.snapshot.take()
    }

    /// Whether a post of `seq` to `id` broke midway (it may have been
    /// taken): its next delivery looks for a copy first.
    pub fn uncertain(&mut self, id: &str, seq: u64, uncertain: bool) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.uncertain.retain(|&u| u != seq);
            if uncertain {
                s.uncertain.push(seq);
            }
        }
    }

    /// Prompt `seq` is being posted as message `message_id` (recorded
    /// before the post, so that no event about it can come first);
    /// `started`: found already answered in the transcript.
    pub fn posted(&mut self, id: &str, seq: u64, message_id: &str, started: bool) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.posted = Some(Posted {
                seq,
                id: message_id.to_string(),
                at: Instant::now(),
                busy_seen: started,
                started,
                stored: started,
                delivered: false,
                sent: false,
            });
        }
    }

    /// Prompt `seq`, posted, is reported sent (`Evidence::Sent`): the
    /// engine waits for an answer to it, or looks for it (`look`). An
    /// answer seen before this report is told after it.
    pub fn sent(&mut self, id: &str, seq: u64, input: Input) {
        self.send(input);
        let Some(p) = self.posted_as(id, seq) else {
            return;
        };
        p.sent = true;
        if p.started && !p.delivered {
            self.taken(id, seq);
        }
    }

    /// Prompt `seq` of `id`, sent, was looked for and is not in the
    /// session: it holds nothing back and is not taken, so that the
    /// engine's retry posts it again.
    pub fn not_taken(&mut self, id: &str, seq: u64) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.posted.take_if(|p| p.seq == seq);
            s.delivered.retain(|&d| d != seq);
        }
    }

    /// Prompt `seq` of `id`, sent, was found in the session (`answered`:
    /// a turn took it): `Delivered` and, answered, `TurnStarted`, each
    /// once.
    pub fn taken_as_found(&mut self, id: &str, seq: u64, answered: bool) {
        match self.posted_as(id, seq) {
            Some(p) => {
                p.stored = true;
                if answered {
                    p.started = true;
                    p.busy_seen = true;
                }
                if !p.delivered {
                    self.taken(id, seq);
                }
            }
            // No longer the session's running prompt (its turn ended).
            None => {
                let session = self.engine_name(id);
                self.outcome(id, delivered(session, seq));
                if answered {
                    self.turn_started(id, seq);
                }
            }
        }
    }

    /// `Delivered` for the posted prompt `seq` (and its `TurnStarted` if
    /// its answer was seen).
    fn taken(&mut self, id: &str, seq: u64) {
        let session = self.engine_name(id);
        self.outcome(id, delivered(session, seq));
    }

    fn posted_as(&mut self, id: &str, seq: u64) -> Option<&mut Posted> {
        let p = self.sessions.get_mut(id)?.posted.as_mut()?;
        (p.seq == seq).then_some(p)
    }

    /// The post of message `message_id` failed: it holds nothing back.
    pub fn unpost(&mut self, id: &str, message_id: &str) {
        if let Some(s) = self.sessions.get_mut(id) {
            if s.posted.as_ref().is_some_and(|p| p.id == message_id) {
                s.posted = None;
            }
        }
    }

    /// A user message `message_id` was seen in session `id`.
    pub fn user_message(&mut self, id: &str, message_id: &str) {
        if let Some(p) = self.sessions.get_mut(id).and_then(|s| s.posted.as_mut()) {
            if p.id == message_id {
                p.stored = true;
            }
        }
    }

    /// Whether message `message_id` of `id` was seen stored; `None` when it
    /// is not reveille's prompt there any more (its turn ended, the
    /// session went away).
    pub fn stored(&self, id: &str, message_id: &str) -> Option<bool> {
        let p = self.sessions.get(id)?.posted.as_ref()?;
        (p.id == message_id).then_some(p.stored)
    }

    /// The prompt of reveille's that `id` runs, if its answer is not seen.
    pub fn unstarted(&self, id: &str) -> Option<Posted> {
        let p = self.sessions.get(id)?.posted.as_ref()?;
        (!p.started).then(|| p.clone())
    }

    /// A delivery to `id` was refused because it is busy: its next idle
    /// is reported, whatever was reported before.
    pub fn owe_idle(&mut self, id: &str) {
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        if s.reported.as_ref().is_some_and(Presence::is_idle) {
            // It went idle before the refusal was told: say so again.
            self.send(Presence::State(Some(AgentState::Idle)).input(&self.engine_name(id)));
        } else {
            s.owe_idle = true;
        }
    }

    /// The sessions whose idle the engine may be waiting for: reported
    /// busy, owed an idle by a refused prompt, or reported unreachable by
    /// a call that failed while the event stream stayed up (a link cut
    /// shorter than its silence limit): the stream will not say the
    /// session is back, since for it the session never went.
    pub fn awaiting_idle(&self) -> Vec<String> {
        let waits = |p: &Presence| p.is_busy() || matches!(p, Presence::Unreachable(_));
        let busy = |s: &Session| s.reported.as_ref().is_some_and(waits);
        let waiting = self.sessions.iter().filter(|(_, s)| s.owe_idle || busy(s));
        waiting.map(|(id, _)| id.clone()).collect()
    }

    /// A state the event stream gave (`None`: the session was deleted).
    pub fn streamed(&mut self, id: &str, state: Option<AgentState>) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.streamed += 1;
        }
        self.state(id, state);
    }

    /// How many states the event stream gave for `id` so far.
    pub fn stream_count(&self, id: &str) -> u64 {
        self.sessions.get(id).map_or(0, |s| s.streamed)
    }

    /// A state read by a call begun when the stream had given `before`
    /// states of `id`: applied only if the stream gave none since (a turn
    /// that ended while `GET /session/status` was under way must not be
    /// undone by its stale "busy"). Returns the state that holds now
    /// (`None`: gone, or not known — its server did not answer).
    pub fn polled(
        &mut self,
        id: &str,
        state: Option<AgentState>,
        before: u64,
    ) -> Option<AgentState> {
        let Some(s) = self.sessions.get(id) else {
            return state;
        };
        if s.streamed != before {
            return match &s.reported {
                Some(Presence::State(state)) => state.clone(),
                _ => None,
            };
        }
        self.state(id, state.clone());
        state
    }

    /// The session's state as the server says (`None`: gone); reported
    /// when it changed.
    pub fn state(&mut self, id: &str, state: Option<AgentState>) {
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        match &state {
            Some(AgentState::Idle) | None => {
                s.busy_with_tool = None;
                let over = s
                    .posted
                    .as_ref()
                    .is_some_and(|p| p.busy_seen || p.started || p.at.elapsed() > UNSEEN);
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
        self.report(id, shown);
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
        self.report(id, Some(shown));
    }

    /// An assistant message answering `parent` appeared in `id`.
    pub fn answer(&mut self, id: &str, parent: &str) {
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        let Some(p) = s.posted.as_mut().filter(|p| p.id == parent && !p.started) else {
            return;
        };
        p.started = true;
        p.busy_seen = true;
        p.stored = true;
        let (seq, delivered, sent) = (p.seq, p.delivered, p.sent);
        if delivered {
            self.turn_started(id, seq);
        } else if sent {
            // The answer is the engine's evidence that it was taken: told
            // now, before its look (`core::confirm::OPENCODE_RECORD`).
            self.taken(id, seq);
        }
    }

    /// Report that a turn started on prompt `seq` of `id`.
    pub fn turn_started(&self, id: &str, seq: u64) {
        self.send(Input::TurnStarted {
            session: self.engine_name(id),
            seq,
        });
    }

    /// Report the outcome of a delivery to `id` — after it, the turn
    /// start already seen for it, so the engine hears them in that order.
    pub fn outcome(&mut self, id: &str, input: Input) {
        let seq = match &input {
            Input::Delivered { seq, .. } => Some(*seq),
            _ => None,
        };
        self.send(input);
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        if let Some(seq) = seq.filter(|seq| !s.delivered.contains(seq)) {
            if s.delivered.len() == KEPT {
                s.delivered.remove(0);
            }
            s.delivered.push(seq);
        }
        let Some(p) = s.posted.as_mut() else {
            return;
        };
        if Some(p.seq) == seq && !p.delivered {
            p.delivered = true;
            if p.started {
                let seq = p.seq;
                self.turn_started(id, seq);
            }
        }
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
    /// it does (what it was running is forgotten, as for a gone session);
    /// reported unless it was the last report.
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
    pub fn pending(&mut self, id: &str, pending: Vec<(String, Wait)>, before: u64) {
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        if s.streamed == before {
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
        self.report(id, state);
    }

    fn report(&mut self, id: &str, state: Option<AgentState>) {
        let Some(s) = self.sessions.get_mut(id) else {
            return;
        };
        let state = s.waits.over(state);
        // An idle seen after a post and before its turn was seen is older
        // than the post (the server answers before it stores the prompt):
        // not a look at the session as it is now.
        let idle = state == Some(AgentState::Idle);
        if idle
            && s.posted
                .as_ref()
                .is_some_and(|p| !p.busy_seen && !p.started)
        {
            return;
        }
        let owed = s.owe_idle && idle;
        let now = Presence::State(state.clone());
        // Told every time, changed or not (the engine keeps the newest
        // look); said in the journal only when it changed.
        if s.reported.as_ref() != Some(&now) || owed {
            tracing::debug!(
                "opencode session {id} is {state:?}{}",
                if owed {
                    " (an idle a refused prompt waits for)"
                } else {
                    ""
                }
            );
        }
        if owed {
            s.owe_idle = false;
        }
        s.reported = Some(now);
        self.send(Presence::State(state).input(&self.engine_name(id)));
    }
}

fn delivered(session: String, seq: u64) -> Input {
    Input::Delivered {
        session,
        seq,
        reached: Reached::Accepted,
    }
}

#[cfg(test)]
mod tests;
