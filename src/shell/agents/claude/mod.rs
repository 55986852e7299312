//! Claude Code sessions (`claude:<session id>`), reached the way Claude
//! Code's own sessions reach each other: the owning process's messaging
//! socket, found through its registry entry `<config>/sessions/<pid>.json`.
//!
//! - **deliver**: the prompt is written once into the session's inbox with
//!   `priority: "later"` — an idle agent starts a turn on it at once, a
//!   busy one runs it as its own turn after the running one, never merged
//!   into it and never typed into a person's half-written input (the inbox
//!   is not the prompt box). It is reported `Reached::Inbox`: Claude Code's
//!   inbox is in the process (lost if it dies) and merges two waiting
//!   messages into one user message, so the engine sends a session's next
//!   prompt only after `TurnStarted` for this one.
//! - **confirm**: the socket never answers; the session's transcript does
//!   (`delivery`): the text enqueued, then a turn's user entry carrying
//!   the prompt's `msg_id` (`prompt_id`: derived from project, seq and
//!   text, so a prompt delivered again after a reveille restart is
//!   recognised and not sent twice). The transcript lags the inbox by up to
//!   ~100 ms: the engine hands a prompt out again only once that window
//!   (`core::confirm`, `CLAUDE_TRANSCRIPT_LAG`) has passed since its last
//!   write, so one an earlier reveille wrote just before it died is found
//!   rather than written again.
//! - **observe**: the registry entry's `status` (`idle`, `busy`, `waiting`
//!   with what for) on every change, `None` when no live process holds the
//!   session. Pushed, not polled: inotify on the registry and transcript
//!   directories, a pidfd per process for kill -9 (which leaves the entry).
//! - **spawn / reap**: reveille cannot create Claude Code sessions (a
//!   session is a person's terminal program; nothing serves "new session"):
//!   `spawn` answers at once `ChildSpawned { outcome: Err(..) }`, so the
//!   engine hands the step back to the parent, and `reap` does nothing.
//!
//! All I/O runs on the observer's thread and short writing threads, never
//! on the caller's; everything learnt comes back as engine inputs.
//! doc/agents/claude.md says how to set a session up for this.

mod delivery;
mod history;
mod inbox;
mod observer;
mod prompt_id;
mod registry;
mod transcript;
mod wait;
mod watches;

use std::sync::mpsc;
use std::thread::JoinHandle;

use crate::config::ClaudeSettings;
use crate::core::effect::{Delivery, Spawn};
use crate::core::input::{Input, Reached, Undeliverable};
use crate::shell::backend::{Backend, Reports};
use observer::{Command, Observer};

pub use prompt_id::prompt_id;

/// The backend of `claude:` sessions.
pub struct ClaudeBackend {
    commands: mpsc::Sender<Command>,
    waker: Option<wait::Waker>,
    observer: Option<JoinHandle<()>>,
    /// Why the observer could not start (no inotify, no thread): every
    /// delivery is refused with it rather than lost.
    broken: Option<String>,
}

impl ClaudeBackend {
    pub fn new(settings: &ClaudeSettings, project: &str, reports: Reports) -> Self {
        let (commands, receiver) = mpsc::channel();
        let started = wait::waker().and_then(|(waker, wakeup)| {
            let back = (commands.clone(), waker.try_clone()?);
            let config = settings.config_dir.clone();
            let observer = Observer::new(config, project, reports, receiver, back, wakeup)?;
            let thread = std::thread::Builder::new()
                .name("reveille-claude".into())
                .spawn(move || observer.run())?;
            Ok((waker, thread))
        });
        match started {
            Ok((waker, thread)) => ClaudeBackend {
                commands,
                waker: Some(waker),
                observer: Some(thread),
                broken: None,
            },
            Err(e) => ClaudeBackend {
                commands,
                waker: None,
                observer: None,
                broken: Some(format!(
                    "cannot follow Claude Code sessions in {}: {e}",
                    settings.config_dir.display()
                )),
            },
        }
    }
}

impl Backend for ClaudeBackend {
    fn deliver(&mut self, d: &Delivery) -> Option<Result<Reached, Undeliverable>> {
        if let Some(why) = &self.broken {
            return Some(Err(Undeliverable {
                reason: why.clone(),
            }));
        }
        let _ = self.commands.send(Command::Deliver(d.clone()));
        if let Some(w) = &self.waker {
            w.wake();
        }
        None
    }

    /// The look goes to the observer, which reads the transcript.
    fn look(&mut self, d: &Delivery) -> Option<Input> {
        if let Some(why) = &self.broken {
            return Some(Input::Undeliverable {
                session: d.session.clone(),
                seq: d.seq,
                why: Undeliverable {
                    reason: why.clone(),
                },
            });
        }
        let _ = self.commands.send(Command::Look(d.clone()));
        if let Some(w) = &self.waker {
            w.wake();
        }
        None
    }

    fn spawn(&mut self, spawn: &Spawn) -> Option<Input> {
        Some(Input::ChildSpawned {
            child: spawn.child.clone(),
            outcome: Err(format!(
                "reveille cannot create Claude Code sessions (a session is a claude program a person starts); {} keeps the step",
                spawn.parent
            )),
        })
    }

    /// Nothing to kill: reveille never makes Claude Code sessions.
    fn reap(&mut self, _child: &str) {}
}

impl Drop for ClaudeBackend {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Stop);
        if let Some(w) = &self.waker {
            w.wake();
        }
        if let Some(t) = self.observer.take() {
            let _ = t.join();
        }
    }
}
