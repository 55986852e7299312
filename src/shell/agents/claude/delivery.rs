//! The prompts on their way to Claude Code sessions, and what to report
//! about each as the session's transcript tells what became of it. No I/O:
//! the observer feeds in what it read and carries out what this decides.
//!
//! A prompt is written once into the session's inbox (`priority: later`:
//! an idle session starts a turn on it, a busy one after its turn). The
//! socket never answers, so the transcript is the confirmation:
//!
//! | the transcript shows | reported |
//! |---|---|
//! | (written into the socket) | `Evidence::Sent`: the engine waits for the record |
//! | its text enqueued | `Delivered { reached: Inbox }` |
//! | a turn taking its `msg_id` | `Delivered` if not yet, and `TurnStarted` |
//! | it held for a person's choice | `Undeliverable` (and it is not written again while held) |
//! | the inbox's guard dropping it | `Undeliverable` with the guard's reason |
//! | nothing, when the engine asks for a look (`look`) | `Evidence::NotRecorded` |
//!
//! How long the record may take is no clock of this backend's: it is the
//! kind's `record` window (`core::confirm`), after which the engine's timer
//! asks for the look.
//!
//! Every `deliver` gets one answer. Before writing, the transcript is
//! asked first: a prompt a turn already took (the same seq delivered again
//! after a reveille restart) is answered at once and not written again,
//! and one still waiting in this process's inbox is not written a second
//! time — Claude Code would merge the two copies into one user message.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use super::history::History;
use crate::core::confirm;
use crate::core::input::{Evidence, Input, Reached, Undeliverable};
use crate::core::session::Kind;

/// One prompt on its way.
#[derive(Debug, Clone)]
struct Pending {
    msg_id: String,
    text: String,
    stage: Stage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Being written to the socket.
    Writing,
    /// Written at `at` (unix ms, as the transcript's entries are
    /// stamped); its record is awaited.
    Written { at: u64 },
    /// In the inbox (reported `Delivered`), waiting for a turn to take it.
    Inbox,
    /// Held for a person (reported `Undeliverable`).
    Held,
}

/// What to do with a prompt handed over by `deliver`.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Answered without writing (already taken, waiting, or held).
    Answered(Vec<Input>),
    /// Write it to the session's socket, then call [`Deliveries::written`].
    Write,
    /// A delivery of this seq is under way; its answer is the answer.
    UnderWay,
}

/// A session's process as the prompts see it.
#[derive(Debug, Clone, Copy)]
pub struct Process {
    /// Its start, unix ms: the inbox and what it holds are this recent.
    pub started: u64,
}

/// One prompt as `deliver` hands it over.
#[derive(Debug, Clone, Copy)]
pub struct Prompt<'a> {
    pub seq: u64,
    pub msg_id: &'a str,
    pub text: &'a str,
}

/// Every prompt on its way, keyed by session id (unqualified) and seq.
#[derive(Debug, Default)]
pub struct Deliveries {
    pending: BTreeMap<(String, u64), Pending>,
    /// `TurnStarted` already reported, so it is reported once.
    started: HashSet<(String, u64)>,
    /// The `from` of reveille's messages, as the guard's drops name it.
    from: String,
    /// `settings.json`, named when a session holds a prompt.
    settings: PathBuf,
}

impl Deliveries {
    pub fn new(from: String, settings: PathBuf) -> Deliveries {
        Deliveries {
            from,
            settings,
            ..Deliveries::default()
        }
    }

    /// `prompt` for session `sid`, whose process is `process` and whose
    /// transcript says `history`.
    pub fn deliver(
        &mut self,
        sid: &str,
        prompt: Prompt,
        history: &History,
        process: Process,
    ) -> Decision {
        if let Some(out) = self.taken(sid, prompt, history) {
            return Decision::Answered(out);
        }
        let key = (sid.to_string(), prompt.seq);
        let stage = match self.pending.get(&key).map(|p| p.stage) {
            Some(Stage::Writing | Stage::Written { .. }) => return Decision::UnderWay,
            _ if history.is_waiting(prompt.text, process.started) => Stage::Inbox,
            _ if history.is_held(prompt.text, process.started) => Stage::Held,
            _ => Stage::Writing,
        };
        let pending = Pending {
            msg_id: prompt.msg_id.to_string(),
            text: prompt.text.to_string(),
            stage,
        };
        self.pending.insert(key, pending);
        match stage {
            Stage::Inbox => Decision::Answered(vec![delivered(sid, prompt.seq)]),
            Stage::Held => Decision::Answered(vec![self.held(sid, prompt.seq)]),
            _ => Decision::Write,
        }
    }

    /// The answer to `prompt` if a turn already took it — whether or not
    /// the session's program runs now: it reached the agent.
    pub fn taken(&mut self, sid: &str, prompt: Prompt, history: &History) -> Option<Vec<Input>> {
        if !history.was_taken(prompt.msg_id) {
            return None;
        }
        self.pending.remove(&(sid.to_string(), prompt.seq));
        let mut out = vec![delivered(sid, prompt.seq)];
        out.extend(self.turn_started(sid, prompt.seq));
        Some(out)
    }

    /// The write of `seq` to `sid` ended (`Err`: why it failed) at `wall`
    /// unix ms: sent into the inbox, its record is awaited.
    pub fn written(
        &mut self,
        sid: &str,
        seq: u64,
        result: Result<(), String>,
        wall: u64,
    ) -> Vec<Input> {
        let key = (sid.to_string(), seq);
        match result {
            Ok(()) => match self.pending.get_mut(&key) {
                Some(p) => {
                    p.stage = Stage::Written { at: wall };
                    vec![evidence(sid, seq, Evidence::Sent)]
                }
                None => Vec::new(),
            },
            Err(why) => {
                self.pending.remove(&key);
                vec![undeliverable(sid, seq, &why)]
            }
        }
    }

    /// Session `sid`'s transcript has news: what it means for its prompts.
    pub fn review(&mut self, sid: &str, history: &History, process: Process) -> Vec<Input> {
        let mut out = Vec::new();
        for seq in self.seqs_of(sid) {
            let key = (sid.to_string(), seq);
            let p = self.pending[&key].clone();
            if history.was_taken(&p.msg_id) {
                self.pending.remove(&key);
                if matches!(p.stage, Stage::Written { .. }) {
                    out.push(delivered(sid, seq));
                }
                out.extend(self.turn_started(sid, seq));
                continue;
            }
            let Stage::Written { at, .. } = p.stage else {
                continue;
            };
            let next = if history.is_waiting(&p.text, process.started) {
                out.push(delivered(sid, seq));
                Stage::Inbox
            } else if history.is_held(&p.text, process.started) {
                out.push(self.held(sid, seq));
                Stage::Held
            } else if let Some(reason) = history.dropped_since(&self.from, at) {
                let why = format!("Claude Code session {sid} dropped the prompt: {reason}");
                out.push(undeliverable(sid, seq, &why));
                self.pending.remove(&key);
                continue;
            } else {
                continue;
            };
            if let Some(p) = self.pending.get_mut(&key) {
                p.stage = next;
            }
        }
        out
    }

    /// The session's process ended or was replaced: its inbox, and what
    /// waited or was held in it, is gone. A prompt written but not yet
    /// recorded is not delivered; one being written is answered by its write.
    pub fn process_ended(&mut self, sid: &str) -> Vec<Input> {
        let mut out = Vec::new();
        for seq in self.seqs_of(sid) {
            let key = (sid.to_string(), seq);
            match self.pending[&key].stage {
                Stage::Writing => continue,
                Stage::Written { .. } => {
                    let why =
                        format!("Claude Code session {sid} ended before it recorded the prompt");
                    out.push(undeliverable(sid, seq, &why));
                }
                Stage::Inbox | Stage::Held => {}
            }
            self.pending.remove(&key);
        }
        out
    }

    /// The engine's look at `prompt`, sent and unrecorded for the kind's
    /// `record` window: what the transcript (at `transcript`, in words)
    /// shows of it now — taken, waiting, held, dropped — or that it is
    /// not there: not taken.
    pub fn look(
        &mut self,
        sid: &str,
        prompt: Prompt,
        history: &History,
        process: Option<Process>,
        transcript: &str,
    ) -> Vec<Input> {
        if let Some(out) = self.taken(sid, prompt, history) {
            return out;
        }
        let key = (sid.to_string(), prompt.seq);
        let mut out = match process {
            Some(process) => self.review(sid, history, process),
            None => Vec::new(),
        };
        let sent = self.pending.get(&key).map(|p| p.stage);
        if matches!(sent, None | Some(Stage::Written { .. })) {
            self.pending.remove(&key);
            let window = confirm::windows(Kind::Claude).record.as_secs();
            let why = format!(
                "Claude Code session {sid} shows no sign of the prompt in its transcript {transcript} {window} s after its writing"
            );
            out.push(evidence(sid, prompt.seq, Evidence::NotRecorded(why)));
        }
        out
    }

    fn seqs_of(&self, sid: &str) -> Vec<u64> {
        self.pending
            .range((sid.to_string(), 0)..=(sid.to_string(), u64::MAX))
            .map(|((_, seq), _)| *seq)
            .collect()
    }

    fn turn_started(&mut self, sid: &str, seq: u64) -> Option<Input> {
        self.started
            .insert((sid.to_string(), seq))
            .then(|| Input::TurnStarted {
                session: Kind::Claude.qualify(sid),
                seq,
            })
    }

    fn held(&self, sid: &str, seq: u64) -> Input {
        let why = format!(
            "Claude Code session {sid} holds the prompt for a person's Deny/Deliver choice: it bypasses permission prompts, and {} does not set \"crossSessionInbound\": \"accept\"",
            self.settings.display()
        );
        undeliverable(sid, seq, &why)
    }
}

fn evidence(sid: &str, seq: u64, evidence: Evidence) -> Input {
    Input::Evidence {
        session: Kind::Claude.qualify(sid),
        seq,
        evidence,
    }
}

fn delivered(sid: &str, seq: u64) -> Input {
    Input::Delivered {
        session: Kind::Claude.qualify(sid),
        seq,
        reached: Reached::Inbox,
    }
}

pub fn undeliverable(sid: &str, seq: u64, why: &str) -> Input {
    Input::Undeliverable {
        session: Kind::Claude.qualify(sid),
        seq,
        why: Undeliverable {
            reason: why.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::agents::claude::transcript::Record;

    const SID: &str = "s1";
    const P: Process = Process { started: 100 };

    fn prompt(seq: u64) -> Prompt<'static> {
        let (id, text) = match seq {
            1 => ("id1", "do s1"),
            _ => ("id2", "do s2"),
        };
        Prompt {
            seq,
            msg_id: id,
            text,
        }
    }

    fn deliveries() -> Deliveries {
        Deliveries::new("reveille-p".into(), "/c/settings.json".into())
    }

    fn taken(h: &mut History, id: &str, text: &str) {
        h.apply(Record::Taken {
            content: format!("Another Claude session sent a message:\n{text}\n\n…"),
            msg_id: Some(id.into()),
            at: 200,
        });
    }

    fn is_delivered(i: &Input, seq: u64) -> bool {
        matches!(i, Input::Delivered { seq: q, reached: Reached::Inbox, .. } if *q == seq)
    }

    #[test]
    fn written_then_enqueued_then_taken_is_delivered_once_and_started_once() {
        let (mut d, mut h) = (deliveries(), History::default());
        assert_eq!(d.deliver(SID, prompt(1), &h, P), Decision::Write);
        assert_eq!(d.deliver(SID, prompt(1), &h, P), Decision::UnderWay);
        let sent = d.written(SID, 1, Ok(()), 150);
        assert!(matches!(
            &sent[..],
            [Input::Evidence {
                evidence: Evidence::Sent,
                ..
            }]
        ));
        assert!(d.review(SID, &h, P).is_empty());
        h.apply(Record::Enqueued {
            content: "do s1".into(),
            at: 151,
        });
        let out = d.review(SID, &h, P);
        assert!(out.len() == 1 && is_delivered(&out[0], 1), "{out:?}");
        taken(&mut h, "id1", "do s1");
        let out = d.review(SID, &h, P);
        assert_eq!(
            out,
            vec![Input::TurnStarted {
                session: "claude:s1".into(),
                seq: 1
            }]
        );
        assert!(d.review(SID, &h, P).is_empty());
    }

    #[test]
    fn a_look_finds_a_prompt_the_transcript_shows_and_calls_only_an_absent_one_not_recorded() {
        let (mut d, mut h) = (deliveries(), History::default());
        d.deliver(SID, prompt(1), &h, P);
        d.written(SID, 1, Ok(()), 150);
        h.apply(Record::Enqueued {
            content: "do s1".into(),
            at: 151,
        });
        let out = d.look(SID, prompt(1), &h, Some(P), "t.jsonl");
        assert!(out.len() == 1 && is_delivered(&out[0], 1), "{out:?}");
        taken(&mut h, "id2", "do s2");
        let out = d.look(SID, prompt(2), &h, None, "t.jsonl");
        assert!(is_delivered(&out[0], 2), "taken, though its process ended");
    }

    #[test]
    fn a_prompt_already_taken_or_waiting_is_answered_without_writing() {
        let (mut d, mut h) = (deliveries(), History::default());
        taken(&mut h, "id1", "do s1");
        h.apply(Record::Enqueued {
            content: "do s2".into(),
            at: 150,
        });
        let Decision::Answered(out) = d.deliver(SID, prompt(1), &h, P) else {
            panic!("written again")
        };
        assert!(is_delivered(&out[0], 1) && matches!(out[1], Input::TurnStarted { seq: 1, .. }));
        let Decision::Answered(out) = d.deliver(SID, prompt(2), &h, P) else {
            panic!("written a second copy beside the waiting one")
        };
        assert!(out.len() == 1 && is_delivered(&out[0], 2));
        // Waiting in a process that has ended does not count.
        let later = Process { started: 160 };
        let mut fresh = deliveries();
        assert_eq!(fresh.deliver(SID, prompt(2), &h, later), Decision::Write);
    }

    #[test]
    fn held_dropped_unrecorded_and_ended_prompts_are_not_delivered() {
        let (mut d, mut h) = (deliveries(), History::default());
        d.deliver(SID, prompt(1), &h, P);
        d.written(SID, 1, Ok(()), 150);
        h.apply(Record::Held {
            preview: "do s1".into(),
            at: 151,
        });
        let out = d.review(SID, &h, P);
        assert!(
            matches!(&out[0], Input::Undeliverable { why, .. } if why.reason.contains("crossSessionInbound"))
        );
        let Decision::Answered(again) = d.deliver(SID, prompt(1), &h, P) else {
            panic!("a held prompt written again")
        };
        assert!(matches!(again[0], Input::Undeliverable { .. }));
        d.deliver(SID, prompt(2), &h, P);
        d.written(SID, 2, Ok(()), 160);
        h.apply(Record::Dropped {
            from: "reveille-p".into(),
            reason: "rate-limited".into(),
            at: 161,
        });
        let out = d.review(SID, &h, P);
        assert!(
            matches!(&out[0], Input::Undeliverable { seq: 2, why, .. } if why.reason.contains("rate-limited"))
        );
        let (mut d, h) = (deliveries(), History::default());
        d.deliver(SID, prompt(1), &h, P);
        d.written(SID, 1, Ok(()), 150);
        // The engine's look, once the record's window has passed.
        let out = d.look(SID, prompt(1), &h, Some(P), "t.jsonl");
        assert!(
            matches!(&out[..], [Input::Evidence { evidence: Evidence::NotRecorded(why), .. }] if why.contains("t.jsonl")),
            "{out:?}"
        );
        d.deliver(SID, prompt(2), &h, P);
        d.written(SID, 2, Ok(()), 150);
        let out = d.process_ended(SID);
        assert!(matches!(&out[0], Input::Undeliverable { seq: 2, .. }));
        let failed = d.written(SID, 3, Err("no socket".into()), 150);
        assert!(
            matches!(&failed[0], Input::Undeliverable { why, .. } if why.reason == "no socket")
        );
    }
}
