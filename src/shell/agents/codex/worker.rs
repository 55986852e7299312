//! The Codex backend's worker: one std thread that owns the connection to
//! the app-server, carries out the backend's commands in order, and turns
//! what the server pushes into engine inputs.
//!
//! It sleeps in `poll(2)` on two descriptors — the command pipe and the
//! server's socket — so a prompt goes out the moment it is handed over and
//! every notification is read the moment it arrives: nothing is polled
//! while the server is up. While it is down (no socket, connection
//! refused) nothing can push anything, so the worker tries to connect
//! again every [`RETRY`], but only while some session waits for it: one
//! failed `connect(2)` of a unix socket, a few microseconds each time.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use super::access::Access;
use super::endpoint::Endpoint;
use super::prompt_id::PromptIds;
use super::protocol::Event;
use super::rpc::{wait_readable, CallError, Connection, SERVER};
use super::sessions::Sessions;
use crate::core::effect::{Delivery, Spawn};
use crate::core::input::Input;
use crate::core::session::{AgentState, Wait};
use crate::shell::agents::remote::link::{Episode, LinkDown, Why};
use crate::shell::backend::Reports;

/// How often a down app-server is tried again while a session waits.
pub const RETRY: Duration = Duration::from_millis(250);
/// How often one that refused the token is: it will not change until the
/// server or reveille's configuration does.
const RETRY_REFUSED: Duration = Duration::from_secs(10);

/// What the backend asks of its worker.
#[derive(Debug)]
pub enum Command {
    Deliver(Delivery),
    /// Look for a prompt written before in its thread, never write it.
    Look(Delivery),
    Spawn(Spawn),
    Reap(String),
    /// Follow a session's state though nothing is delivered to it yet.
    Observe(String),
}

/// The worker's state; its methods run on its thread only.
pub struct Worker {
    pub(super) endpoint: Endpoint,
    /// The token and TLS roots, or why they cannot be had.
    access: Result<Access, String>,
    /// Whether the server is down, said once per episode.
    episode: Episode,
    /// When a connection was last tried: one that refused the token is
    /// not tried again before [`RETRY_REFUSED`], whoever asks.
    tried: Option<Instant>,
    pub(super) ids: PromptIds,
    reports: Reports,
    commands: Receiver<Command>,
    /// Readable when a command was sent, at end of file when the backend
    /// is gone.
    wake: UnixStream,
    pub(super) conn: Option<Connection>,
    /// Why the server cannot be reached, while it cannot.
    pub(super) down: String,
    pub(super) sessions: Sessions,
}

impl Worker {
    pub fn new(
        endpoint: Endpoint,
        access: Result<Access, String>,
        ids: PromptIds,
        reports: Reports,
        commands: Receiver<Command>,
        wake: UnixStream,
    ) -> Worker {
        let _ = wake.set_nonblocking(true);
        let down = format!("codex app-server at {endpoint} not reached yet");
        Worker {
            endpoint,
            access,
            episode: Episode::default(),
            tried: None,
            ids,
            reports,
            commands,
            wake,
            conn: None,
            down,
            sessions: Sessions::default(),
        }
    }

    /// Serve until the backend is dropped or the engine stops listening.
    /// It connects at once, so the first prompt does not wait for the
    /// handshake; if the server is not there yet, the first session that
    /// needs it tries again.
    pub fn run(mut self) {
        self.connect();
        loop {
            if self.conn.is_none() && !self.sessions.names().is_empty() {
                self.connect();
            }
            let mut fds = vec![self.wake.as_raw_fd()];
            fds.extend(self.conn.as_ref().map(Connection::fd));
            wait_readable(&fds, self.timeout());
            if !self.drain_wake() {
                return;
            }
            loop {
                match self.commands.try_recv() {
                    Ok(command) => self.handle(command),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return,
                }
                self.drain_events();
            }
            self.drain_events();
            self.looks_due(Instant::now());
            if self.reports.is_closed() {
                return;
            }
        }
    }

    /// How long the loop may sleep: until a retry of a down server, or
    /// until a thread is to be read again (`started.rs`); for ever when
    /// none waits.
    fn timeout(&self) -> Option<Duration> {
        let every = if self.episode.refused_credentials() {
            RETRY_REFUSED
        } else {
            RETRY
        };
        let retry = self.conn.is_none().then_some(every);
        let now = Instant::now();
        let look = self.sessions.next_look();
        let due = look.map(|at| at.saturating_duration_since(now));
        retry.into_iter().chain(due).min()
    }

    /// Empty the wake-up pipe; `false` when the backend closed it.
    fn drain_wake(&mut self) -> bool {
        let mut buf = [0u8; 64];
        loop {
            match self.wake.read(&mut buf) {
                Ok(0) => return false,
                Ok(_) => continue,
                Err(_) => return true,
            }
        }
    }

    fn handle(&mut self, command: Command) {
        let input = match command {
            Command::Deliver(d) => self.deliver(&d),
            Command::Look(d) => self.look_for(&d),
            Command::Spawn(s) => self.spawn(&s),
            Command::Reap(child) => return self.reap(&child),
            Command::Observe(name) => return self.observe(&name),
        };
        self.report(input);
    }

    /// Follow `name` from now on: attached at once if the server is up
    /// (its state reported), and again each time it comes back. A session
    /// that cannot be attached is said once, and stays followed.
    fn observe(&mut self, name: &str) {
        self.sessions.know(name);
        if self.conn.is_none() {
            self.connect();
        }
        if self.conn.is_some() {
            if let Err(why) = self.attach(name) {
                tracing::warn!(SESSION = %name, "codex session not reachable: {why}");
            }
        }
    }

    pub(super) fn report(&self, input: Input) {
        let _ = self.reports.send(input);
    }

    pub(super) fn report_all(&self, inputs: impl IntoIterator<Item = Input>) {
        for input in inputs {
            self.report(input);
        }
    }

    /// Connect now; on success every known session is attached again
    /// (and its state reported: the engine retries what waits for it).
    pub(super) fn connect(&mut self) {
        let now = Instant::now();
        if self.episode.refused_credentials()
            && self
                .tried
                .is_some_and(|t| now.duration_since(t) < RETRY_REFUSED)
        {
            return;
        }
        self.tried = Some(now);
        let opened = match &mut self.access {
            Ok(access) => Connection::open(&self.endpoint, access).map_err(|link| {
                if let Some(said) = self.episode.down(&link) {
                    tracing::warn!("{said}; its sessions' prompts wait until it answers");
                }
                if matches!(link.why, Why::Credentials { .. }) {
                    access.reread();
                }
                link.to_string()
            }),
            Err(why) => Err(why.clone()),
        };
        match opened {
            Ok(conn) => {
                match self.episode.up(SERVER, &self.endpoint.to_string()) {
                    Some(back) => tracing::info!(endpoint = %self.endpoint, "{back}"),
                    None => {
                        tracing::info!(endpoint = %self.endpoint, "connected to the codex app-server")
                    }
                }
                self.conn = Some(conn);
                for name in self.sessions.names() {
                    if let Err(why) = self.attach(&name) {
                        tracing::warn!(SESSION = %name, "codex session not reachable: {why}");
                    }
                }
            }
            Err(why) => {
                self.down = why;
                let gone = self.sessions.all_down(&self.down);
                self.report_all(gone);
            }
        }
    }

    /// The connection broke: every session is unreachable until it is back.
    pub(super) fn lost(&mut self, why: &str) {
        let link = LinkDown {
            server: SERVER,
            address: self.endpoint.to_string(),
            why: Why::Cut(why.to_string()),
        };
        if self.conn.take().is_some() {
            if let Some(said) = self.episode.down(&link) {
                tracing::warn!("{said}; its sessions' prompts wait until it is back");
            }
        }
        self.down = link.to_string();
        let gone = self.sessions.all_down(&self.down);
        self.report_all(gone);
    }

    /// Call `method` on the server; a broken connection is handled here
    /// (every session reported unreachable) and given back as `Lost`.
    pub(super) fn call(
        &mut self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, CallError> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(CallError::Lost(self.down.clone()));
        };
        let result = conn.call(method, params);
        if let Err(CallError::Lost(why)) = &result {
            let why = why.clone();
            self.lost(&why);
            return Err(CallError::Lost(self.down.clone()));
        }
        result
    }

    /// Handle everything the server pushed so far.
    fn drain_events(&mut self) {
        loop {
            let Some(conn) = self.conn.as_mut() else {
                return;
            };
            match conn.next_message() {
                Ok(Some(msg)) => {
                    if let Some(event) = Event::of(&msg) {
                        self.on_event(event);
                    }
                }
                Ok(None) => return,
                Err(e) => return self.lost(&e.to_string()),
            }
        }
    }

    fn on_event(&mut self, event: Event) {
        match event {
            Event::Status {
                thread,
                state,
                loaded,
            } => {
                let names = self.sessions.of_thread(&thread);
                let state = match state {
                    // What it waits for, told with the wait from its start.
                    Some(AgentState::Waiting(w)) if !names.is_empty() => {
                        let what = self.waiting_for(&thread, w.on).unwrap_or_default();
                        Some(AgentState::Waiting(Wait { what, ..w }))
                    }
                    other => other,
                };
                for name in names {
                    let input = self.sessions.set_state(&name, state.clone());
                    self.report_all(input);
                    if loaded {
                        self.look(&name, state.as_ref());
                    } else {
                        self.unloaded(&name);
                    }
                }
            }
            Event::Gone { thread } => {
                for name in self.sessions.of_thread(&thread) {
                    self.detach(&name);
                    if let Some(s) = self.sessions.get(&name) {
                        s.thread = None;
                    }
                    let input = self.sessions.set_state(&name, None);
                    self.report_all(input);
                }
            }
            Event::Closed { thread } => {
                for name in self.sessions.of_thread(&thread) {
                    self.detach(&name);
                }
            }
            Event::Request { thread, method } => self.on_request(thread.as_deref(), &method),
        }
    }

    /// Codex asked this connection to answer `method`. It never should:
    /// reveille subscribes to no thread. Left unanswered all the same —
    /// the request stays for the person at the agent's own terminal — and
    /// said loudly, as a fault of reveille's.
    fn on_request(&mut self, thread: Option<&str>, method: &str) {
        let names = thread
            .map(|t| self.sessions.of_thread(t))
            .unwrap_or_default();
        tracing::warn!(
            SESSION = names.first().map(String::as_str),
            "codex asked reveille to answer {method}, though reveille subscribes to no thread: \
             left unanswered, for the person at the agent's own terminal"
        );
    }

    fn detach(&mut self, name: &str) {
        if let Some(s) = self.sessions.get(name) {
            s.attached = false;
        }
    }

    /// The server unloaded `name`'s thread: a prompt of ours still in its
    /// queue runs only once something loads it again, so reveille does
    /// (`attach.rs`), else at the next delivery.
    fn unloaded(&mut self, name: &str) {
        self.detach(name);
        let waiting = self.sessions.get(name).is_some_and(|s| s.awaits_start());
        if waiting {
            if let Err(why) = self.attach(name) {
                tracing::warn!(SESSION = %name, "codex session not reachable: {why}");
            }
        }
    }
}
