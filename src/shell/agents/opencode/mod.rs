//! opencode sessions (`opencode:<session id>`), reached through the HTTP
//! server of the opencode process that owns them — `opencode serve --port
//! P`, or the TUI started as `opencode --port P` — at `[opencode] url`.
//!
//! - `deliver`: a prompt goes to an idle session only (`prompt_async` on a
//!   busy one merges it into the running turn), with a `messageID` of
//!   reveille's (`message_id`) that the transcript keeps, so a turn on it
//!   is confirmed by the agent's own records and a prompt repeated after a
//!   restart is recognised instead of sent twice; what it saw is reported
//!   as evidence for the engine's rule (`core::taken`): busy, sent, not
//!   known (a post that broke midway), and delivered once its answer is
//!   seen;
//! - `look`: the engine's look for a prompt sent and not yet answered, in
//!   the session's messages: there, it is delivered; gone, sent again;
//! - `watch`: the server's event stream → session states, turn starts,
//!   and `None` for every session while the server is not running;
//! - `owner`: refuses a session another opencode process may be running;
//! - `children`: fan-out children (`parentID`, a title from the child's
//!   name), and reaping them;
//! - `names`: the engine's names for sessions (a child's is its own, not
//!   opencode's id) and what they lead to;
//! - `followed`: the sessions followed — every state seen, as a look
//!   (`followed/report.rs`), and reveille's prompt in each
//!   (`followed/posted.rs`);
//! - `api`, `http`, `events`: the server's routes, the HTTP client, the
//!   events.
//!
//! Every call to the server runs on the backend's own two threads (one for
//! deliveries, spawns and reaps, in order; one for the event stream),
//! never on the caller's.

pub mod api;
pub mod children;
pub mod deliver;
pub mod events;
pub mod followed;
pub mod http;
pub mod look;
pub mod message_id;
pub mod names;
pub mod owner;
pub mod waits;
pub mod watch;

use std::sync::mpsc::{self, Sender};
use std::sync::Arc;

use self::api::{Api, ApiError};
use self::deliver::Courier;
use self::followed::Shared;
use self::names::Name;
use crate::config::OpencodeSettings;
use crate::core::effect::{Delivery, Spawn};
use crate::core::input::{Input, Observation, Observer, Reached, Seen, Undeliverable};
use crate::shell::agents::remote::address;
use crate::shell::backend::{Backend, Reports};

/// What the backend's worker does, in the order asked.
enum Command {
    Deliver(Delivery),
    Spawn(Spawn),
    Reap(String),
    /// Follow a session, and report its state now.
    Observe(String),
    /// Look for a prompt reported sent among its session's messages.
    Look(Delivery),
}

/// The sessions of one opencode server.
pub struct OpencodeBackend {
    /// Why nothing can be delivered at all (a URL that cannot be used).
    broken: Option<String>,
    /// To the worker; `None` when broken.
    commands: Option<Sender<Command>>,
    /// Ends the event follower: dropping the sender closes its channel.
    closed: Option<Sender<()>>,
}

impl OpencodeBackend {
    pub fn new(settings: &OpencodeSettings, project: &str, reports: Reports) -> Self {
        let server = access(settings).and_then(|access| http::Server::new(&settings.url, &access));
        let server = match server {
            Ok(server) => server,
            Err(why) => {
                tracing::error!("opencode sessions cannot be reached: {why}");
                return OpencodeBackend {
                    broken: Some(why),
                    commands: None,
                    closed: None,
                };
            }
        };
        let api = Api { server };
        let shared = Arc::new(Shared::new(reports.clone()));
        let (closed, closed_rx) = mpsc::channel();
        let (watch_api, watch_shared) = (api.clone(), shared.clone());
        spawn_thread("reveille-opencode-events", move || {
            watch::follow(watch_api, watch_shared, closed_rx)
        });
        let (commands, rx) = mpsc::channel::<Command>();
        let courier = Courier {
            api,
            project: project.to_string(),
            shared,
        };
        spawn_thread("reveille-opencode", move || {
            for command in rx {
                run(&courier, &reports, command);
            }
        });
        OpencodeBackend {
            broken: None,
            commands: Some(commands),
            closed: Some(closed),
        }
    }

    fn send(&self, command: Command) -> Result<(), String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        self.commands
            .as_ref()
            .and_then(|c| c.send(command).ok())
            .ok_or_else(|| "the opencode backend's worker has stopped".to_string())
    }
}

/// How reveille is let in: the user name and the password opencode's
/// server was started with (`OPENCODE_SERVER_USERNAME`,
/// `OPENCODE_SERVER_PASSWORD` on its side), read from its file now; a
/// plain `http://` to another machine is warned about.
fn access(settings: &OpencodeSettings) -> Result<http::Access, String> {
    if let Some(warning) = address::cleartext_warning(&settings.url, "the opencode server") {
        tracing::warn!("{warning}");
    }
    let password = match &settings.password {
        Some(source) => Some(source.read()?),
        None => None,
    };
    Ok(http::Access {
        username: settings.username.clone(),
        password,
        password_file: settings.password.clone(),
        ca_file: settings.ca_file.clone(),
    })
}

fn spawn_thread(name: &str, f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .expect("spawn a thread");
}

fn run(courier: &Courier, reports: &Reports, command: Command) {
    match command {
        Command::Deliver(d) => match resolve(courier, &d.session) {
            Ok(id) => courier.deliver(&d, &id),
            Err(reason) => {
                let _ = reports.send(undeliverable(&d, reason));
            }
        },
        Command::Look(d) => match resolve(courier, &d.session) {
            Ok(id) => courier.look(&d, &id),
            Err(reason) => {
                let _ = reports.send(undeliverable(&d, reason));
            }
        },
        Command::Spawn(s) => children::spawn(&courier.api, &courier.shared, &s),
        Command::Reap(child) => match resolve(courier, &child) {
            Ok(id) => children::reap(&courier.api, &courier.shared, &id, &child, &courier.project),
            Err(why) => {
                tracing::warn!(project = %courier.project, session = %child, "cannot reap child session {child}: {why}")
            }
        },
        Command::Observe(session) => {
            if let Ok(id) = resolve(courier, &session) {
                courier.shared.lock().learn(&id);
                // Its transcript first, then its state: the engine gives
                // it a prompt once it is reported idle, and that delivery
                // then finds the transcript read (it would wait behind the
                // read on this thread otherwise).
                courier.prepare(&id);
                if !courier.shared.lock().reported(&id) {
                    let _ = watch::refresh_one(&courier.api, &courier.shared, &id);
                }
            }
        }
    }
}

/// opencode's own id for the session the engine calls `session`. A child
/// reveille made is found by its title under its parent; one its parent
/// no longer has is reported gone (its step goes back to the parent).
fn resolve(courier: &Courier, session: &str) -> Result<String, String> {
    let (name, parent) = match names::parse(session)? {
        Name::Own(id) => return Ok(id.to_string()),
        Name::Child { name, parent } => (name, parent),
    };
    let shared = &courier.shared;
    match children::find(&courier.api, shared, name, parent) {
        Ok(Some(id)) => Ok(id),
        Ok(None) | Err(ApiError::NoSession(_)) => {
            let why = format!(
                "no child session titled \"{}\" under {parent} on the opencode server at {}",
                names::child_title(name),
                courier.api.server.url()
            );
            let look = Observation::new(
                session.to_string(),
                Seen::Gone(why.clone()),
                Observer::Program,
            );
            shared.lock().send(Input::Observed(look));
            Err(why)
        }
        Err(e) => Err(e.to_string()),
    }
}

fn undeliverable(d: &Delivery, reason: String) -> Input {
    Input::Undeliverable {
        session: d.session.clone(),
        seq: d.seq,
        why: Undeliverable { reason },
    }
}

impl Backend for OpencodeBackend {
    fn deliver(&mut self, d: &Delivery) -> Option<Result<Reached, Undeliverable>> {
        if let Err(reason) = names::parse(&d.session) {
            return Some(Err(Undeliverable { reason }));
        }
        self.send(Command::Deliver(d.clone()))
            .err()
            .map(|reason| Err(Undeliverable { reason }))
    }

    /// The look goes to the worker, in order with the deliveries
    /// (`look.rs`).
    fn look(&mut self, d: &Delivery) -> Option<Input> {
        self.send(Command::Look(d.clone()))
            .err()
            .map(|reason| undeliverable(d, reason))
    }

    fn spawn(&mut self, spawn: &Spawn) -> Option<Input> {
        self.send(Command::Spawn(spawn.clone()))
            .err()
            .map(|why| Input::ChildSpawned {
                child: spawn.child.clone(),
                outcome: Err(why),
            })
    }

    fn reap(&mut self, child: &str) {
        if let Err(why) = self.send(Command::Reap(child.to_string())) {
            tracing::warn!(session = %child, "cannot reap child session {child}: {why}");
        }
    }

    /// Every session the engine has work for is followed from now on: an
    /// idle session says nothing of itself on the event stream, and the
    /// engine gives an opencode session a prompt only once it is seen idle.
    fn observe(&mut self, session: &str) {
        if names::parse(session).is_ok() {
            let _ = self.send(Command::Observe(session.to_string()));
        }
    }
}

impl Drop for OpencodeBackend {
    fn drop(&mut self) {
        self.commands = None;
        self.closed = None;
    }
}
