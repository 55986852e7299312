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
//! taken as broken. Why the server cannot be reached (refused, timed
//! out, TLS, credentials) is said once per episode, at warning level, and
//! its return at info; credentials it refused are tried again every 10 s,
//! not every 250 ms. At each heartbeat a followed session last reported
//! busy (or unreachable) is read again — a net under
//! the stream, so a lost idle holds a prompt for one heartbeat, not for
//! ever.

use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use super::api::{Api, ApiError};
use super::events::{self, Event};
use super::followed::{Mark, Shared};
use super::http::{Failure, SERVER};
use crate::shell::agents::remote::link::{Episode, LinkDown, Why};

/// How often a server that is not running is tried again.
pub const RETRY: Duration = Duration::from_millis(250);
/// How often a server that refused the credentials is tried again: they
/// will not change until the server or reveille's configuration does.
const RETRY_REFUSED: Duration = Duration::from_secs(10);
/// How many recent messages are read to find a turn start missed while
/// the stream was down.
const MISSED: usize = 20;

/// Follow the server until `closed` is closed (the backend dropped). A
/// stream blocked in a read notices at the next event — a heartbeat comes
/// every 10 s — and reports nothing more.
pub fn follow(api: Api, shared: Arc<Shared>, closed: Receiver<()>) {
    let url = api.server.url().to_string();
    let mut episode = Episode::default();
    loop {
        // Why the sessions cannot be reached, once the stream is down.
        let down = match api.server.events() {
            Ok(mut stream) => {
                if is_closed(&closed) {
                    return;
                }
                tracing::debug!("following the event stream of {url}");
                let mut connected = false;
                let ended = loop {
                    let event = match stream.next_event() {
                        Ok(Some(data)) => events::parse(&data),
                        Ok(None) => break "the server ended it".to_string(),
                        Err(e) => break e.to_string(),
                    };
                    if is_closed(&closed) {
                        return;
                    }
                    match event {
                        Event::Connected if !connected => {
                            tracing::debug!("the event stream of {url} is connected");
                            if let Some(back) = episode.up(SERVER, &url) {
                                tracing::info!("{back}");
                            }
                            connected = true;
                            refresh(&api, &shared);
                        }
                        Event::Heartbeat => recheck_busy(&api, &shared),
                        event => apply(&shared, event),
                    }
                };
                tracing::debug!("the event stream of {url} broke ({ended}); every session of it is not running until it is back");
                format!("the event stream of the opencode server at {url} broke ({ended})")
            }
            Err(failure) => {
                let link = link_down(&url, failure);
                if let Some(said) = episode.down(&link) {
                    tracing::warn!("{said}; its sessions' prompts wait until it answers");
                }
                link.to_string()
            }
        };
        if is_closed(&closed) {
            return;
        }
        shared.lock().server_gone(&down);
        let wait = if episode.refused_credentials() {
            RETRY_REFUSED
        } else {
            RETRY
        };
        match closed.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
    }
}

/// Why the event stream could not be opened, as a link down.
fn link_down(url: &str, failure: Failure) -> LinkDown {
    match failure {
        Failure::Unreachable(link) => link,
        Failure::Broken(why) => LinkDown {
            server: SERVER,
            address: url.to_string(),
            why: Why::Cut(why),
        },
    }
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
        Event::Assistant { session, parent } => f.answer(&session, &parent),
        Event::Tool { session, running } => f.tool(&session, running),
        Event::Deleted { session } => f.streamed(&session, None),
        Event::Asked {
            session,
            request,
            wait,
        } => {
            tracing::debug!("opencode session {session} waits for a person ({request}); reveille does not answer it");
            f.request(&session, &request, Some(wait));
        }
        Event::Answered { session, request } => f.request(&session, &request, None),
        Event::User { .. } | Event::Connected | Event::Heartbeat | Event::Other => {}
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
/// carry the idle that ended a turn, and nothing else would tell it; nor
/// does it tell that a session a call found unreachable is back.
fn recheck_busy(api: &Api, shared: &Shared) {
    let waiting = shared.lock().awaiting_idle();
    for id in waiting {
        if refresh_one(api, shared, &id) == Err(Gone::Server) {
            return;
        }
        if !shared.lock().awaiting_idle().contains(&id) {
            tracing::info!("opencode session {id} is no longer busy or unreachable, though the event stream did not say so: read again at its heartbeat");
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
    let before = shared.lock().mark(id);
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
    let waiting = state.is_some();
    shared.lock().polled(id, state, before);
    if waiting {
        pending(api, shared, id, before);
    }
    Ok(())
}

/// The permissions and questions pending in `id`'s directory that are
/// `id`'s: a request asked while the stream was down (or before reveille
/// followed the session) is in no event.
fn pending(api: &Api, shared: &Shared, id: &str, before: Mark) {
    let Some(directory) = shared.lock().directory(id) else {
        return;
    };
    let Ok(pending) = api.pending(&directory) else {
        return;
    };
    let ours = pending.into_iter().filter(|(s, _, _)| s == id);
    let ours = ours.map(|(_, request, wait)| (request, wait)).collect();
    shared.lock().pending(id, ours, before);
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
        if m.role == "assistant" && m.parent.as_deref() == Some(posted.id.as_str()) {
            f.answer(id, &posted.id);
        }
    }
}
