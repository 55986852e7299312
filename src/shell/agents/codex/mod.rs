//! `codex:` sessions: Codex threads, reached through the app-server that
//! owns them — the daemon the interactive `codex` TUI runs its threads in
//! (`<codex.home>/app-server-control/app-server-control.sock`), or an
//! explicit `codex app-server --listen` (`codex.endpoint`). reveille is a
//! second client of that server, beside the TUI (doc/agents/codex.md).
//!
//! - `endpoint`: where the server listens, and the socket to it;
//! - `rpc`: one JSON-RPC connection over a WebSocket;
//! - `protocol`: the requests sent and the answers and notifications read;
//! - `prompt_id`: the id each prompt carries (`reveille:<project>:<seq>`);
//! - `sessions`: what is known of each session;
//! - `worker`: the thread that owns the connection, and its loop;
//! - `attach`, `deliver`, `children`: what it does for a session — never
//!   subscribed to its thread, so never asked to approve anything;
//! - `started`: a turn started on a prompt of ours, read at the thread's
//!   status changes;
//! - `waiting`: the command a thread waits to have approved.
//!
//! Whether a prompt handed out again was taken is not decided here: the
//! worker says what the thread holds of it (`deliver.rs`), and the engine's
//! one rule (`core::taken`) decides, with Codex's hidden dispatch as its
//! window (`core::confirm::CODEX_HIDDEN_DISPATCH`).
//!
//! [`CodexBackend`] only hands commands to the worker: `deliver`, `spawn`,
//! `reap` and `observe` never block the caller, and every outcome comes back as an
//! engine input through the reports.

pub mod access;
mod attach;
mod children;
mod deliver;
pub mod endpoint;
pub mod prompt_id;
pub mod protocol;
pub mod rpc;
mod sessions;
mod started;
mod waiting;
mod worker;

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;

use crate::config::CodexSettings;
use crate::core::effect::{Delivery, Spawn};
use crate::core::input::{Input, Reached, Undeliverable};
use crate::core::session::Kind;
use crate::shell::agents::remote::address;
use crate::shell::backend::{Backend, Reports};
use access::Access;
use endpoint::Endpoint;
use prompt_id::PromptIds;
use worker::{Command, Worker};

/// The backend of `codex:` sessions.
pub struct CodexBackend {
    commands: Option<Sender<Command>>,
    /// Written once per command: the worker sleeps in `poll` on the other
    /// end. Closed on drop, which ends the worker.
    wake: Option<UnixStream>,
    worker: Option<JoinHandle<()>>,
}

impl CodexBackend {
    /// A backend for `project`'s `codex:` sessions on the server
    /// `settings` name, reporting through `reports`. Its worker thread
    /// starts now; it connects when the first session needs it.
    pub fn new(settings: &CodexSettings, project: &str, reports: Reports) -> Self {
        let (commands, rx) = channel();
        let (wake, worker_end) = UnixStream::pair().expect("a socket pair for the codex worker");
        let endpoint = Endpoint::of(settings);
        if let Some(warning) =
            address::cleartext_warning(&endpoint.to_string(), "the codex app-server")
        {
            tracing::warn!("{warning}");
        }
        let access = Access::of(settings, &endpoint).inspect_err(|why| {
            tracing::error!("codex sessions cannot be reached: {why}");
        });
        let worker = Worker::new(
            endpoint,
            access,
            PromptIds::new(project),
            reports,
            rx,
            worker_end,
        );
        let worker = std::thread::Builder::new()
            .name("codex".into())
            .spawn(move || worker.run())
            .expect("spawn the codex worker thread");
        CodexBackend {
            commands: Some(commands),
            wake: Some(wake),
            worker: Some(worker),
        }
    }

    fn send(&mut self, command: Command) {
        if let Some(commands) = &self.commands {
            let _ = commands.send(command);
        }
        if let Some(wake) = &mut self.wake {
            let _ = wake.write(&[1]);
        }
    }
}

impl Backend for CodexBackend {
    fn deliver(&mut self, d: &Delivery) -> Option<Result<Reached, Undeliverable>> {
        if Kind::of(&d.session).0 != Kind::Codex {
            return Some(Err(Undeliverable {
                reason: format!("{} is not a codex: session", d.session),
            }));
        }
        self.send(Command::Deliver(d.clone()));
        None
    }

    /// Looked for in its thread by the worker, never written; answered
    /// through the reports.
    fn look(&mut self, d: &Delivery) -> Option<Input> {
        self.send(Command::Look(d.clone()));
        None
    }

    fn spawn(&mut self, spawn: &Spawn) -> Option<Input> {
        if Kind::of(&spawn.parent).0 != Kind::Codex {
            return Some(Input::ChildSpawned {
                child: spawn.child.clone(),
                outcome: Err(format!("{} is not a codex: session", spawn.parent)),
            });
        }
        self.send(Command::Spawn(spawn.clone()));
        None
    }

    fn reap(&mut self, child: &str) {
        self.send(Command::Reap(child.to_string()));
    }

    /// The worker follows a session only once it knows it: from its first
    /// prompt on, or from now.
    fn observe(&mut self, session: &str) {
        if Kind::of(session).0 == Kind::Codex {
            self.send(Command::Observe(session.to_string()));
        }
    }
}

impl Drop for CodexBackend {
    fn drop(&mut self) {
        // Closing both ends of the channel and the pipe ends the worker
        // after the command it is carrying out.
        self.commands.take();
        self.wake.take();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}
