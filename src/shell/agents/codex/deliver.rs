//! Delivering one prompt to a Codex thread: `thread/queue/add` with the
//! prompt's own id, on the server that owns the thread.
//!
//! The queue is the one way in for both states (UPSTREAM.md, and seen
//! here): on an idle thread the server starts a turn on it at once; on a
//! busy one it waits and becomes its own turn 10–20 ms after the running
//! one completes — never folded into it. `turn/start` and `turn/steer` on
//! a busy thread would steer into the running turn (and drop the model
//! request in flight), so reveille never sends them. The queue is the
//! server's (durable, in sqlite): what it accepted survives the TUI, and a
//! person's half-typed input in the TUI is never touched.
//!
//! A prompt handed out again (`Delivery::again`: reveille restarted, or a
//! write whose answer was lost) is first looked for in the thread, and the
//! engine asked for a look (`Backend::look`) is answered the same way:
//! found, it is delivered (and its turn told); in neither the queue nor
//! the turns, that is reported as it is (`Evidence::NotRecorded`), and the
//! one rule (`core::taken`) decides — Codex hides a prompt while it starts
//! it, so an absence is looked at again before anything is written. A
//! `thread/queue/add` whose answer is lost with the connection may have
//! reached the server: that is "could not tell" (`Evidence::Unsure`), and
//! the engine has the thread looked at once the session is seen again.

use super::protocol;
use super::rpc::CallError;
use super::sessions::Held;
use super::worker::Worker;
use crate::core::effect::Delivery;
use crate::core::input::{Evidence, Input, Reached, Undeliverable};

impl Worker {
    /// Deliver `d`: the outcome for the engine. One handed out again is
    /// looked for first, and written only if the engine says so by handing
    /// it out as a first delivery.
    pub(super) fn deliver(&mut self, d: &Delivery) -> Input {
        let thread = match self.reach(d) {
            Ok(thread) => thread,
            Err(input) => return input,
        };
        let id = self.ids.id(d.seq);
        if let Some(input) = self.already_held(d, &id) {
            return input;
        }
        if d.again {
            return self.find(d, &thread, &id);
        }
        self.queue(d, &thread, id)
    }

    /// Look for `d` in its thread, never write it (`Backend::look`).
    pub(super) fn look_for(&mut self, d: &Delivery) -> Input {
        match self.reach(d) {
            Ok(thread) => {
                let id = self.ids.id(d.seq);
                self.find(d, &thread, &id)
            }
            Err(input) => input,
        }
    }

    /// `d`'s thread, attached on a live connection; or why not, as the
    /// outcome.
    fn reach(&mut self, d: &Delivery) -> Result<String, Input> {
        if self.conn.is_none() {
            self.connect();
        }
        if self.conn.is_none() {
            // Known from now on: when the server is back, its state is
            // reported and the engine retries.
            self.sessions.know(&d.session);
            let away = self.sessions.unreachable(&d.session, &self.down);
            self.report_all(away);
            return Err(refused(d, self.down.clone()));
        }
        self.attach(&d.session).map_err(|why| refused(d, why))
    }

    /// What `thread` holds of `d` now (not when it was attached): found,
    /// delivered; in neither its queue nor its turns, said so.
    fn find(&mut self, d: &Delivery, thread: &str, id: &str) -> Input {
        if let Err(why) = self.read_held(&d.session, thread) {
            return refused(d, why);
        }
        if let Some(input) = self.already_held(d, id) {
            return input;
        }
        tracing::debug!(SESSION = %d.session, "{} was handed out before and is not in the codex thread", d.step);
        Input::Evidence {
            session: d.session.clone(),
            seq: d.seq,
            evidence: Evidence::NotRecorded(format!(
                "in neither the queue nor the latest turns of codex thread {thread} at {}",
                self.endpoint
            )),
        }
    }

    /// `thread/queue/add` of `d` with its id `id`: the outcome.
    pub(super) fn queue(&mut self, d: &Delivery, thread: &str, id: String) -> Input {
        match self.call(
            "thread/queue/add",
            protocol::queue_add(thread, &d.text, &id),
        ) {
            Ok(_) => {
                if let Some(s) = self.sessions.get(&d.session) {
                    let held = Held {
                        text: d.text.clone(),
                        started: false,
                        told: false,
                    };
                    s.held.insert(id, held);
                }
                delivered(d)
            }
            // Sent, and the answer lost with the connection: the server may
            // have queued it. Looked for, never sent again on that.
            Err(CallError::Lost(why)) => Input::Evidence {
                session: d.session.clone(),
                seq: d.seq,
                evidence: Evidence::Unsure(format!(
                    "no answer from the codex app-server to thread/queue/add: {why}"
                )),
            },
            Err(CallError::Refused(m)) => refused(
                d,
                format!(
                    "codex refused the prompt for thread {thread} at {}: {m}",
                    self.endpoint
                ),
            ),
        }
    }

    /// The thread already holds this very prompt (a delivery repeated after
    /// a reveille restart): delivered, without sending it again — and if a
    /// turn already started on it, the engine hears that too.
    pub(super) fn already_held(&mut self, d: &Delivery, id: &str) -> Option<Input> {
        let held = self.sessions.get(&d.session)?.held.get(id)?.clone();
        if held.text != d.text {
            // The same seq with another text: reveille's state was reset
            // and the number reused. It is another prompt.
            tracing::warn!(SESSION = %d.session, "codex thread holds an older prompt with id {id}; sending the new one");
            return None;
        }
        if held.started {
            self.report(delivered(d));
            if let Some(h) = self
                .sessions
                .get(&d.session)
                .and_then(|s| s.held.get_mut(id))
            {
                h.told = true;
            }
            return Some(Input::TurnStarted {
                session: d.session.clone(),
                seq: d.seq,
            });
        }
        Some(delivered(d))
    }
}

fn refused(d: &Delivery, reason: String) -> Input {
    Input::Undeliverable {
        session: d.session.clone(),
        seq: d.seq,
        why: Undeliverable { reason },
    }
}

fn delivered(d: &Delivery) -> Input {
    Input::Delivered {
        session: d.session.clone(),
        seq: d.seq,
        reached: Reached::Accepted,
    }
}
