//! Reveille's prompt in one followed session: posted, then answered (its
//! turn), and what that tells the engine — `Delivered` and `TurnStarted`
//! once each, in that order — and what it holds back: a second prompt
//! while the turn on it runs.
//!
//! A prompt posted is evidence of nothing until its answer is seen (an
//! assistant message whose parent is it): opencode can store a prompt and
//! never run it. The engine waits for the answer for its `record` window
//! and then asks for a look (`look.rs`); no clock is read here.

use super::Followed;
use crate::core::input::{Input, Reached};

/// A prompt of reveille's that the server took, or may have taken.
#[derive(Debug, Clone)]
pub struct Posted {
    pub seq: u64,
    /// Its `messageID`.
    pub id: String,
    /// The session was seen busy since: its turn may be running.
    pub busy_seen: bool,
    /// An answer to it was seen: `TurnStarted` was reported.
    pub started: bool,
    /// `Delivered` was reported: a `TurnStarted` seen before waits for it.
    pub delivered: bool,
    /// The engine waits for evidence of it (`Evidence::Sent`, or
    /// `Evidence::Unsure` for a post that broke midway): an answer seen
    /// tells it `Delivered` at once.
    pub sent: bool,
}

/// What holds a session's next prompt back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// Nothing of reveille's runs there.
    Free,
    /// This very prompt was already taken (in this run).
    Taken,
    /// The turn on reveille's prompt `seq` has not been seen ending.
    Running(u64),
}

impl Followed {
    /// What holds a delivery of `seq` to `id` back. A prompt of another
    /// seq whose answer was never seen holds nothing: the engine hands out
    /// another only once the one before is settled (answered, or looked
    /// for and not taken).
    pub fn guard(&self, id: &str, seq: u64) -> Guard {
        let Some(s) = self.sessions.get(id) else {
            return Guard::Free;
        };
        if s.delivered.contains(&seq) {
            return Guard::Taken;
        }
        match s.posted.as_ref() {
            Some(p) if p.seq == seq => Guard::Taken,
            Some(p) if p.started => Guard::Running(p.seq),
            _ => Guard::Free,
        }
    }

    /// Prompt `seq` is being posted as message `message_id` (recorded
    /// before the post, so that no event about it can come first).
    pub fn posted(&mut self, id: &str, seq: u64, message_id: &str) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.posted = Some(Posted {
                seq,
                id: message_id.to_string(),
                busy_seen: false,
                started: false,
                delivered: false,
                sent: false,
            });
        }
    }

    /// Prompt `seq`, posted, is reported to the engine with `input` —
    /// sent (`Evidence::Sent`), or not known to be taken
    /// (`Evidence::Unsure`): the engine waits for an answer to it, or
    /// looks for it (`look`). An answer seen before this report is told
    /// after it.
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
    /// session, or will not run: it holds nothing back and is not taken,
    /// so that the engine's retry posts it again.
    pub fn not_taken(&mut self, id: &str, seq: u64) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.posted.take_if(|p| p.seq == seq);
            s.delivered.retain(|&d| d != seq);
        }
    }

    /// Prompt `seq` of `id`, sent, was found answered in the session:
    /// `Delivered` and `TurnStarted`, each once.
    pub fn taken_as_found(&mut self, id: &str, seq: u64) {
        match self.posted_as(id, seq) {
            Some(p) => {
                p.started = true;
                p.busy_seen = true;
                if !p.delivered {
                    self.taken(id, seq);
                }
            }
            // No longer the session's running prompt (its turn ended).
            None => {
                let session = self.engine_name(id);
                self.outcome(id, delivered(session, seq));
                self.turn_started(id, seq);
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

    /// The post of message `message_id` did not reach the server: it
    /// holds nothing back.
    pub fn unpost(&mut self, id: &str, message_id: &str) {
        if let Some(s) = self.sessions.get_mut(id) {
            s.posted.take_if(|p| p.id == message_id);
        }
    }

    /// The prompt of reveille's that `id` runs, if its answer is not seen.
    pub fn unstarted(&self, id: &str) -> Option<Posted> {
        let p = self.sessions.get(id)?.posted.as_ref()?;
        (!p.started).then(|| p.clone())
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
            if s.delivered.len() == super::KEPT {
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
}

fn delivered(session: String, seq: u64) -> Input {
    Input::Delivered {
        session,
        seq,
        reached: Reached::Accepted,
    }
}
