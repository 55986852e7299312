//! Following an opencode server's own signals, on a thread of its own.
//!
//! One `GET /global/event` stream carries every session of every directory
//! the server serves (`/event` and `/session/status` are per directory):
//! `session.status`, `session.idle`, `message.updated`, tool parts and
//! `session.deleted` become the followed sessions' states and turn
//! starts. Nothing is polled while the stream is up. When it breaks (the
//! server stopped, or was killed) every followed session is reported
//! `None`, and a connection is tried again every [`RETRY`] — a refused
//! connect on this machine costs microseconds — until the server is back;
//! then each followed session's record and status are read once
//! ([`refresh`]), which reports it present again, so the engine retries
//! what waits for it. That read waits for the stream's `server.connected`:
//! the stream's head comes before the server listens for its events, and
//! an idle in that gap would be in neither the read nor the stream. A
//! stream silent for 30 s (the server sends a heartbeat every 10 s) is
//! taken as broken; at each heartbeat a followed session last reported
//! busy (or owed an idle by a refused prompt) is read again — a net under
//! the stream, so a lost idle holds a prompt for one heartbeat, not for
//! ever.

use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::api::{Api, ApiError};
use super::events::{self, Event};
use super::followed::Shared;
use super::http::{EventStream, Stopper};

/// How often a server that is not running is tried again.
pub const RETRY: Duration = Duration::from_millis(250);
/// How many recent messages are read to find a turn start missed while
/// the stream was down.
const MISSED: usize = 20;

/// What ends the follower: the backend dropping its end of `stop`, and
/// the stream's socket shut down so a blocked read returns.
pub struct Stop {
    pub stream: Mutex<Option<Stopper>>,
}

/// Follow the server until `stop` is closed.
pub fn follow(api: Api, shared: Arc<Shared>, stop: Arc<Stop>, closed: Receiver<()>) {
    let url = api.server.url().to_string();
    loop {
        // Why the sessions cannot be reached, once the stream is down.
        let down = match api.server.events() {
            Err(e) => format!("the opencode server at {url} does not answer ({e})"),
            Ok(stream) => match stream_until_down(&api, &shared, &stop, &closed, stream) {
                Some(down) => down,
                None => return,
            },
        };
        if is_closed(&closed) {
            return;
        }
        shared.lock().server_gone(&down);
        shared.notify();
        match closed.recv_timeout(RETRY) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
    }
}

/// Apply the server's events until its stream breaks: why, in words
/// (`None`: reveille is stopping).
fn stream_until_down(
    api: &Api,
    shared: &Shared,
    stop: &Stop,
    closed: &Receiver<()>,
    mut stream: EventStream,
) -> Option<String> {
    let url = api.server.url();
    if let Ok(s) = stream.stopper() {
        *stop.stream.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
    }
    if is_closed(closed) {
        return None;
    }
    tracing::debug!("following the event stream of {url}");
    let mut connected = false;
    let ended = loop {
        let event = match stream.next_event() {
            Ok(Some(data)) => events::parse(&data),
            Ok(None) => break "the server ended it".to_string(),
            Err(e) => break e.to_string(),
        };
        match event {
            Event::Connected if !connected => {
                tracing::debug!("the event stream of {url} is connected");
                connected = true;
                refresh(api, shared);
            }
            Event::Heartbeat => recheck_busy(api, shared),
            event => apply(shared, event),
        }
    };
    tracing::debug!("the event stream of {url} broke ({ended}); every session of it is not running until it is back");
    Some(format!(
        "the event stream of the opencode server at {url} broke ({ended})"
    ))
}

fn is_closed(closed: &Receiver<()>) -> bool {
    !matches!(closed.try_recv(), Err(TryRecvError::Empty))
}

/// Apply one event to the followed sessions.
fn apply(shared: &Shared, event: Event) {
    let mut f = shared.lock();
    match event {
        Event::Status { session, state } => f.streamed(&session, Some(state)),
        Event::Idle { session } => {
            f.streamed(&session, Some(crate::core::session::AgentState::Idle))
        }
        Event::User { session, id } => {
            f.user_message(&session, &id);
            drop(f);
            shared.notify();
        }
        Event::Assistant { session, parent } => {
            f.answer(&session, &parent);
            drop(f);
            shared.notify();
        }
        Event::Tool { session, running } => f.tool(&session, running),
        Event::Deleted { session } => f.streamed(&session, None),
        Event::Connected | Event::Heartbeat | Event::Other => {}
    }
}

/// Read each followed session's record and status once: after a
/// (re)connection, what happened while the stream was down is not in it.
fn refresh(api: &Api, shared: &Shared) {
    let followed = shared.lock().ids();
    for (id, _) in followed {
        // The server went away: the stream breaks too, and the next
        // connection refreshes again.
        if refresh_one(api, shared, &id) == Err(Gone::Server) {
            return;
        }
    }
}

/// Read again each session whose idle the engine may wait for: the
/// stream was seen, on a loaded machine right after a reconnection, not to
/// carry the idle that ended a turn, and nothing else would tell it.
fn recheck_busy(api: &Api, shared: &Shared) {
    let waiting = shared.lock().awaiting_idle();
    for id in waiting {
        if refresh_one(api, shared, &id) == Err(Gone::Server) {
            return;
        }
        if !shared.lock().awaiting_idle().contains(&id) {
            tracing::info!("opencode session {id} is no longer busy, though the event stream did not say so: read again at its heartbeat");
        }
    }
}

/// Why a refresh told nothing.
#[derive(Debug, PartialEq, Eq)]
pub enum Gone {
    /// The server is not running.
    Server,
    /// It answered, but not what was asked (said in the next refresh).
    Unanswered,
}

/// Read session `id`'s record and status, and report its state (`None`
/// when the server has no such session).
pub fn refresh_one(api: &Api, shared: &Shared, id: &str) -> Result<(), Gone> {
    let before = shared.lock().stream_count(id);
    let state = match api.session(id) {
        Ok(info) => {
            shared.lock().set_directory(id, &info.directory);
            match api.state(id, &info.directory) {
                Ok(state) => Some(state),
                Err(ApiError::Unreachable(_)) => return Err(Gone::Server),
                Err(_) => return Err(Gone::Unanswered),
            }
        }
        Err(ApiError::NoSession(_)) => None,
        Err(ApiError::Unreachable(_)) => return Err(Gone::Server),
        Err(ApiError::Failed(_)) => return Err(Gone::Unanswered),
    };
    missed_start(api, shared, id);
    shared.lock().polled(id, state, before);
    shared.notify();
    Ok(())
}

/// A turn on reveille's prompt that started while the stream was down.
fn missed_start(api: &Api, shared: &Shared, id: &str) {
    let Some(posted) = shared.lock().unstarted(id) else {
        return;
    };
    let Ok(messages) = api.messages(id, MISSED) else {
        return;
    };
    let mut f = shared.lock();
    for m in &messages {
        if m.id == posted.id {
            f.user_message(id, &m.id);
        }
        if m.role == "assistant" && m.parent.as_deref() == Some(posted.id.as_str()) {
            f.answer(id, &posted.id);
        }
    }
}
