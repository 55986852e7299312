//! The seam every kind of agent session plugs into.
//!
//! The engine decides *what* goes to a session and *when* (one prompt in
//! flight per session, backoff, the confirmation deadline, how long an
//! agent's record may lag a write, whether the next prompt waits for the
//! agent to take the last one); a backend only
//! knows *how* to reach one kind of agent and what that agent says about
//! itself. Adding a kind of agent is adding one implementation of
//! [`Backend`], not a branch in the engine.
//!
//! A backend is a worker: whatever may block (a 9P server, a socket, an
//! HTTP request) runs on its own thread or task, never on the event loop,
//! and everything it learns comes back to the loop as engine [`Input`]s
//! through the [`Reports`] it was built with:
//!
//! | it learns | it reports |
//! |---|---|
//! | a delivery's outcome | `Input::Evidence` (what it saw: written, refused, queued, found in the agent's record, unsure, sent into an agent whose record will tell, not in that record, not written because a turn runs; `core::taken` judges it, with the kind's windows from `core::confirm`), or `Input::Delivered { reached }` / `Input::Undeliverable` for the kinds not moved onto evidence yet |
//! | what the agent's record shows of a prompt sent, when the engine asks (`Backend::look`) | the same |
//! | a turn started on a prompt of ours, by the agent's own identifiers | `Input::TurnStarted { session, seq }` |
//! | a look at a session: its state (idle, busy, …), gone, or its program stopped or not answering (the session may well be there), each with why | `Input::Observed` |
//! | a child created (or not) | `Input::ChildSpawned` |
//!
//! Session ids arrive qualified as the engine knows them (`codex:<thread>`,
//! `claude:<id>`, `opencode:<id>`, or a bare directory name) and are
//! reported back the same way.
//!
//! Every backend keeps §4's promise for its kind: an idle agent starts a
//! turn on the prompt within the wake latency; a busy one runs it after
//! its current turn, never merged into it (no steering, no interrupt) and
//! never typed into a person's half-written input; it talks only to the
//! process that owns the session.

use std::time::Instant;

use tokio::sync::mpsc::error::SendError;
use tokio::sync::mpsc::UnboundedSender;

use crate::core::effect::{Delivery, Spawn};
use crate::core::input::{Evidence, Input, Reached, Undeliverable};

/// Where a backend's workers send what they learn. A look at a session
/// (`Input::Observed`) is stamped with the engine time it is sent at:
/// every worker sends what it sees as soon as it has seen it, so that is
/// when it was seen — and the engine keeps the newest look, so a look
/// that waited in the channel behind a newer poll changes nothing.
#[derive(Debug, Clone)]
pub struct Reports {
    tx: UnboundedSender<Input>,
    /// The engine's clock origin (the daemon's start).
    origin: Instant,
}

impl Reports {
    pub fn new(tx: UnboundedSender<Input>, origin: Instant) -> Reports {
        Reports { tx, origin }
    }

    /// Send `input` to the loop, a look stamped now.
    pub fn send(&self, mut input: Input) -> Result<(), SendError<Input>> {
        if let Input::Observed(look) = &mut input {
            look.at = self.origin.elapsed();
        }
        self.tx.send(input)
    }

    /// Send `input`, a look stamped `seen`: when what it reports was seen
    /// at the latest — a read's start, for a state a call read (the
    /// engine's newest look then wins over it, whatever answered first).
    pub fn send_seen_at(&self, mut input: Input, seen: Instant) -> Result<(), SendError<Input>> {
        if let Input::Observed(look) = &mut input {
            look.at = seen.saturating_duration_since(self.origin);
        }
        self.tx.send(input)
    }

    /// Whether the loop stopped listening.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Reports that go nowhere (tests of a worker alone), and their
    /// receiver.
    pub fn channel() -> (Reports, tokio::sync::mpsc::UnboundedReceiver<Input>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (Reports::new(tx, Instant::now()), rx)
    }
}

/// One kind of agent session.
pub trait Backend {
    /// Deliver `d` to its session now: the agent takes it into a turn at
    /// once (idle) or runs it after the running turn (busy). `Some`: the
    /// outcome is known now; `None`: it comes later through the reports
    /// (`Input::Delivered` or `Input::Undeliverable`). Never blocks the
    /// loop.
    fn deliver(&mut self, d: &Delivery) -> Option<Result<Reached, Undeliverable>>;

    /// Look for `d`, which this backend wrote and reported sent into the
    /// agent (`Evidence::Sent`) or reported absent once from an agent
    /// that may hide a prompt it starts (`Evidence::NotRecorded`, Codex),
    /// in the agent's own record — never write it — once the engine says
    /// (`Effect::Look`).
    /// Answer with what the record shows (`Input::Delivered`,
    /// `Input::TurnStarted`, `Input::Undeliverable`, or
    /// `Evidence::NotRecorded`), now (`Some`) or through the reports. A
    /// kind that never reports `Sent` is never asked; if it is, it cannot
    /// tell, and the session's next look settles it.
    fn look(&mut self, d: &Delivery) -> Option<Input> {
        Some(Input::Evidence {
            session: d.session.clone(),
            seq: d.seq,
            evidence: Evidence::Unsure("this kind of session keeps no record to look in".into()),
        })
    }

    /// Create the child session `spawn` asks for (fan-out), with its
    /// parent's working directory; `Input::ChildSpawned` answers it — now
    /// (`Some`, e.g. a kind that cannot create sessions) or later through
    /// the reports.
    fn spawn(&mut self, spawn: &Spawn) -> Option<Input>;

    /// Kill a child session reveille made (its step is done, it is idle).
    fn reap(&mut self, child: &str);

    /// Whether the sessions root is a polled mount, as the watcher found
    /// it (asked on every turn of the loop): a kind that opens files
    /// under it does so off the loop then, since a mount may hang.
    fn root_polled(&mut self, _polled: bool) {}

    /// Follow `session`'s state from now on (`Input::Observed`), though
    /// nothing may be delivered to it for a while: the daemon asks this at
    /// its start for every session with work announced or pending, so an
    /// idle agent can be reminded after a restart of reveille. A backend
    /// that follows every session of its program anyway does nothing.
    fn observe(&mut self, _session: &str) {}
}

/// Why a prompt could not be delivered, in words.
pub fn undeliverable(reason: impl Into<String>) -> Undeliverable {
    Undeliverable {
        reason: reason.into(),
    }
}

/// The input that reports a delivery's outcome.
pub fn outcome(session: String, seq: u64, result: Result<Reached, Undeliverable>) -> Input {
    match result {
        Ok(reached) => Input::Delivered {
            session,
            seq,
            reached,
        },
        Err(why) => Input::Undeliverable { session, seq, why },
    }
}

/// Which thread a delivery is being made on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thread {
    /// The event loop: a write that may block goes to a blocking thread.
    Loop,
    /// A blocking thread already: a write is made here, not handed to
    /// another thread (one hand-over less between a ready step and the
    /// agent).
    Blocking,
}

/// Run a write that may block (a FUSE/9P server takes its time) off the
/// event loop, so one slow session never holds up another (see
/// `Thread`), and report what it saw as `Input::Evidence`.
pub fn on_thread(
    thread: Thread,
    reports: &Reports,
    d: &Delivery,
    write: impl FnOnce(&Reports) -> Evidence + Send + 'static,
) {
    let reports = reports.clone();
    let (session, seq) = (d.session.clone(), d.seq);
    let run = move || {
        let evidence = write(&reports);
        let _ = reports.send(Input::Evidence {
            session,
            seq,
            evidence,
        });
    };
    match thread {
        Thread::Loop => drop(tokio::task::spawn_blocking(run)),
        Thread::Blocking => run(),
    }
}
