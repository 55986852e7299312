//! The observer: one thread that follows Claude Code's registry and the
//! transcripts of the sessions it delivers to, writes prompts (each on a
//! short thread of its own, so one unresponsive session holds up nobody),
//! and reports everything it learns as engine inputs.
//!
//! Nothing is polled: it sleeps in `poll(2)` until a command arrives, an
//! inotify event comes from the registry or a transcript directory, a
//! session's process exits (its pidfd); it keeps no deadline (the engine
//! times the confirmation and asks for a look).
//!
//! A transcript that cannot be read (EIO) tells nothing: a look that could
//! not read it reports `Evidence::Unsure`, never that the prompt is not
//! there, and a prompt handed out again is not written while it cannot be
//! checked for (writing it could run it twice).

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};

use super::delivery::{undeliverable, Decision, Deliveries, Process, Prompt};
use super::history::History;
use super::inbox::{self, Message};
use super::prompt_id::prompt_id;
use super::registry::{self, Entry, Host};
use super::transcript::{self, Record, Tail};
use super::wait::{self, Waker, Wakeup};
use super::watches::{Changes, Watches};
use crate::core::effect::Delivery;
use crate::core::input::{self, Evidence, Input, Observation, Seen};
use crate::core::session::{AgentState, Kind, Wait};
use crate::shell::backend::Reports;

/// What the backend and the writing threads tell the observer.
#[derive(Debug)]
pub enum Command {
    Deliver(Delivery),
    /// Look for a prompt written already in its transcript (`Effect::Look`).
    Look(Delivery),
    Written {
        sid: String,
        seq: u64,
        result: Result<(), String>,
    },
    Stop,
}

/// A session's running process.
struct Owner {
    entry: Entry,
    /// Readable once the process exits.
    exit: Option<OwnedFd>,
}

/// A session whose transcript is followed (one delivered to).
struct Followed {
    tail: Tail,
    history: History,
    /// The last tool call in its transcript: what a permission prompt is
    /// about (the registry does not say).
    last_tool: Option<String>,
}

pub struct Observer {
    config: PathBuf,
    project: String,
    reports: Reports,
    commands: Receiver<Command>,
    /// Cloned into each writing thread, to hand its outcome back.
    back: (Sender<Command>, Waker),
    wakeup: Wakeup,
    watches: Watches,
    host: Host,
    owners: BTreeMap<String, Owner>,
    /// The state last reported per session, so each change is told once.
    reported: BTreeMap<String, AgentState>,
    followed: BTreeMap<String, Followed>,
    deliveries: Deliveries,
}

impl Observer {
    pub fn new(
        config: PathBuf,
        project: &str,
        reports: Reports,
        commands: Receiver<Command>,
        back: (Sender<Command>, Waker),
        wakeup: Wakeup,
    ) -> std::io::Result<Observer> {
        let mut watches = Watches::new()?;
        watches.want(config.join("sessions"))?;
        let from = sender_name(project);
        Ok(Observer {
            deliveries: Deliveries::new(from, config.join("settings.json")),
            config,
            project: project.to_string(),
            reports,
            commands,
            back,
            wakeup,
            watches,
            host: Host::here(),
            owners: BTreeMap::new(),
            reported: BTreeMap::new(),
            followed: BTreeMap::new(),
        })
    }

    /// Run until told to stop (or the backend is gone).
    pub fn run(mut self) {
        self.refresh_registry();
        loop {
            let mut fds = vec![self.wakeup.fd(), self.watches.fd()];
            fds.extend(
                self.owners
                    .values()
                    .filter_map(|o| o.exit.as_ref().map(|fd| fd.as_raw_fd())),
            );
            let Ok(ready) = wait::poll(&fds) else {
                return;
            };
            if ready[0] && !self.take_commands() {
                return;
            }
            if ready[1] {
                let changes = self.watches.read().unwrap_or(Changes {
                    rescan: true,
                    ..Changes::default()
                });
                self.on_changes(changes);
            }
            if ready[2..].iter().any(|r| *r) {
                self.refresh_registry();
            }
        }
    }

    /// Every queued command; false once told to stop.
    fn take_commands(&mut self) -> bool {
        self.wakeup.drain();
        loop {
            match self.commands.try_recv() {
                Ok(Command::Deliver(d)) => self.deliver(&d),
                Ok(Command::Look(d)) => self.look(&d),
                Ok(Command::Written { sid, seq, result }) => {
                    let out =
                        self.deliveries
                            .written(&sid, seq, result, crate::shell::wall::unix_ms());
                    self.report_all(out);
                    self.review(&sid);
                }
                Ok(Command::Stop) | Err(TryRecvError::Disconnected) => return false,
                Err(TryRecvError::Empty) => return true,
            }
        }
    }

    fn on_changes(&mut self, changes: Changes) {
        let registry = self.config.join("sessions");
        if changes.rescan || changes.files.iter().any(|(d, _)| *d == registry) {
            self.refresh_registry();
        }
        let sids: Vec<String> = self.followed.keys().cloned().collect();
        for sid in sids {
            let path = &self.followed[&sid].tail.path;
            let touched = changes
                .files
                .iter()
                .any(|(d, n)| path.parent() == Some(d) && path.file_name() == Some(n));
            if changes.rescan || touched {
                // A failed read keeps its offset: the next change reads on.
                let _ = self.read_transcript(&sid);
            }
        }
        // A wait reported before its tool call was read is named now.
        self.report_states();
    }

    /// Read the registry again: who runs, what each is doing, who ended.
    fn refresh_registry(&mut self) {
        let entries = registry::read(&self.config.join("sessions")).unwrap_or_default();
        let live = registry::owners(entries, &self.host);
        let ended: Vec<String> = self
            .owners
            .iter()
            .filter(|(sid, o)| live.get(*sid).is_none_or(|e| e.pid != o.entry.pid))
            .map(|(sid, _)| sid.clone())
            .collect();
        for sid in ended {
            self.owners.remove(&sid);
            let out = self.deliveries.process_ended(&sid);
            self.report_all(out);
        }
        let mut waiting = Vec::new();
        for (sid, entry) in live {
            if matches!(entry.state(), Some(AgentState::Waiting(_))) {
                waiting.push(sid.clone());
            }
            match self.owners.get_mut(&sid) {
                Some(o) => o.entry = entry,
                None => {
                    let exit = wait::pidfd(entry.pid);
                    self.owners.insert(sid, Owner { entry, exit });
                }
            }
        }
        // The registry does not say what a wait is for; the tool call in
        // the transcript does, and it is usually written by now: read
        // before the wait is told, so the person is told what it is.
        for sid in waiting {
            if self.followed.contains_key(&sid) {
                let _ = self.read_transcript(&sid);
            }
        }
        self.report_states();
    }

    /// A look (`Input::Observed`) at each running session, changed or not
    /// (the engine keeps the newest look), and unreachable for each that
    /// no longer runs: no process holds
    /// it, though `claude --resume` brings it back.
    fn report_states(&mut self) {
        let gone: Vec<String> = self
            .reported
            .keys()
            .filter(|sid| !self.owners.contains_key(*sid))
            .cloned()
            .collect();
        for sid in gone {
            self.reported.remove(&sid);
            self.report(Input::Observed(Observation::new(
                Kind::Claude.qualify(&sid),
                Seen::Unreachable("no process holds it (claude --resume brings it back)".into()),
                input::Observer::Program,
            )));
        }
        let states: Vec<(String, AgentState)> = self
            .owners
            .iter()
            .filter_map(|(sid, o)| Some((sid.clone(), self.named(sid, o.entry.state()?))))
            .collect();
        for (sid, state) in states {
            self.reported.insert(sid.clone(), state.clone());
            self.report(Input::Observed(Observation::new(
                Kind::Claude.qualify(&sid),
                Seen::State(state),
                input::Observer::Program,
            )));
        }
    }

    /// A wait named by the session's last tool call: the command an
    /// approval is for, or the question asked (AskUserQuestion).
    fn named(&self, sid: &str, state: AgentState) -> AgentState {
        let tool = self.followed.get(sid).and_then(|f| f.last_tool.clone());
        match (state, tool) {
            (AgentState::Waiting(w), Some(what)) if w.what.is_empty() => {
                AgentState::Waiting(Wait { on: w.on, what })
            }
            (state, _) => state,
        }
    }

    fn deliver(&mut self, d: &Delivery) {
        let (kind, sid) = Kind::of(&d.session);
        if kind != Kind::Claude {
            let why = format!("{} is not a claude: session", d.session);
            return self.report(undeliverable(sid, d.seq, &why));
        }
        let msg_id = prompt_id(&self.project, d.seq, &d.text);
        let prompt = Prompt {
            seq: d.seq,
            msg_id: &msg_id,
            text: &d.text,
        };
        let read = self.follow(sid);
        // Handed out before, it may be in the transcript: unread, it is
        // not written again on a guess.
        if let (Err(why), true) = (read, d.again) {
            let why = format!("Claude Code session {sid}: {why}; the prompt, perhaps taken already, is not written again until the transcript can be read");
            return self.report(undeliverable(sid, d.seq, &why));
        }
        let history = &self.followed[sid].history;
        if let Some(out) = self.deliveries.taken(sid, prompt, history) {
            return self.report_all(out);
        }
        let Some(owner) = self.owners.get(sid) else {
            let why = self.not_running(sid);
            return self.report(undeliverable(sid, d.seq, &why));
        };
        let process = Process {
            started: owner.entry.started_at,
        };
        match self.deliveries.deliver(sid, prompt, history, process) {
            Decision::Answered(out) => self.report_all(out),
            Decision::UnderWay => {}
            Decision::Write => self.write(sid, d, &msg_id),
        }
    }

    /// The engine's look at `d`, sent into the inbox and unrecorded for
    /// the kind's `record` window: the transcript read up to date, and
    /// what it shows of the prompt reported — or, the read failed, that
    /// this cannot be told (`Evidence::Unsure`: the engine looks again).
    fn look(&mut self, d: &Delivery) {
        let (_, sid) = Kind::of(&d.session);
        let msg_id = prompt_id(&self.project, d.seq, &d.text);
        let prompt = Prompt {
            seq: d.seq,
            msg_id: &msg_id,
            text: &d.text,
        };
        if let Err(why) = self.follow(sid) {
            let why = format!("Claude Code session {sid}: {why}");
            return self.report(Input::Evidence {
                session: d.session.clone(),
                seq: d.seq,
                evidence: Evidence::Unsure(why),
            });
        }
        let process = self.owners.get(sid).map(|o| Process {
            started: o.entry.started_at,
        });
        let f = &self.followed[sid];
        let transcript = f.tail.path.display().to_string();
        let out = (self.deliveries).look(sid, prompt, &f.history, process, &transcript);
        self.report_all(out);
    }

    /// Write prompt `d` into `sid`'s inbox on a thread of its own.
    fn write(&mut self, sid: &str, d: &Delivery, msg_id: &str) {
        let (seq, text) = (d.seq, &d.text);
        let entry = self.owners[sid].entry.clone();
        let target = entry.messaging_socket_path.clone().ok_or_else(|| {
            format!(
                "Claude Code session {sid} (pid {}) has no messaging socket: its cross-session inbox is off",
                entry.pid
            )
        });
        let token = registry::token(&self.config.join("sessions"), &entry);
        let (socket, token) = match target.and_then(|s| Ok((s, token?))) {
            Ok(t) => t,
            Err(why) => {
                let out =
                    self.deliveries
                        .written(sid, seq, Err(why), crate::shell::wall::unix_ms());
                return self.report_all(out);
            }
        };
        // When it went into the inbox: its confirmation comes only with the
        // transcript's next batch, up to ~100 ms and more later.
        tracing::debug!(SESSION = %d.session, STEP = %d.step,
            "writing {} into the inbox of {} (pid {}, {})", d.step, d.session, entry.pid, socket.display());
        let message = Message {
            session_id: sid.to_string(),
            msg_id: msg_id.to_string(),
            from: sender_name(&self.project),
            text: text.to_string(),
        };
        let (back, waker) = (self.back.0.clone(), self.back.1.try_clone());
        let owned = sid.to_string();
        let spawned = std::thread::Builder::new()
            .name("reveille-claude-write".into())
            .spawn(move || {
                let result = inbox::write(&socket, entry.pid, &token, &message);
                let _ = back.send(Command::Written {
                    sid: owned,
                    seq,
                    result,
                });
                if let Ok(w) = waker {
                    w.wake();
                }
            });
        if let Err(e) = spawned {
            let why = format!("cannot start a thread to write the prompt: {e}");
            let out = self
                .deliveries
                .written(sid, seq, Err(why), crate::shell::wall::unix_ms());
            self.report_all(out);
        }
    }

    /// Follow `sid`'s transcript from now on, and read it up to date
    /// (`Err`: the read failed, in words).
    fn follow(&mut self, sid: &str) -> Result<(), String> {
        if !self.followed.contains_key(sid) {
            let path = self.find_transcript(sid);
            if let Some(dir) = path.parent() {
                let _ = self.watches.want(dir.to_path_buf());
            }
            let followed = Followed {
                tail: Tail::new(path),
                history: History::default(),
                last_tool: None,
            };
            self.followed.insert(sid.to_string(), followed);
        }
        self.read_transcript(sid)
    }

    /// Where `sid`'s transcript is, or will be: under the slug of its
    /// process's working directory, else wherever `projects/*/` holds it.
    fn find_transcript(&self, sid: &str) -> PathBuf {
        let name = format!("{sid}.jsonl");
        let expected = self
            .owners
            .get(sid)
            .and_then(|o| transcript::project_dir(&self.config, &o.entry.cwd))
            .map(|d| d.join(&name));
        if let Some(p) = expected.as_ref().filter(|p| p.exists()) {
            return p.clone();
        }
        let projects = self.config.join("projects");
        let found = std::fs::read_dir(&projects).ok().and_then(|dirs| {
            dirs.flatten()
                .map(|d| d.path().join(&name))
                .find(|p| p.exists())
        });
        found
            .or(expected)
            .unwrap_or_else(|| projects.join("?").join(name))
    }

    /// Read `sid`'s transcript on from where the last read ended, and
    /// report what it now says of the prompts on their way. `Err`: the
    /// read failed (in words); nothing was learnt, and the next read
    /// starts where this one would have.
    fn read_transcript(&mut self, sid: &str) -> Result<(), String> {
        // A transcript not written yet may turn up elsewhere than guessed
        // (the session changed directory before its first message).
        let missing = self
            .followed
            .get(sid)
            .is_some_and(|f| !f.tail.path.exists());
        if missing {
            let path = self.find_transcript(sid);
            if let Some(dir) = path.parent() {
                let _ = self.watches.want(dir.to_path_buf());
            }
            if let Some(f) = self.followed.get_mut(sid) {
                if f.tail.path != path {
                    f.tail = Tail::new(path);
                }
            }
        }
        let Some(f) = self.followed.get_mut(sid) else {
            return Ok(());
        };
        let batch = f.tail.read().map_err(|e| {
            let why = format!(
                "reading its transcript {} failed: {e}",
                f.tail.path.display()
            );
            tracing::debug!("{why}");
            why
        })?;
        if batch.restarted {
            f.history = History::default();
        }
        for record in batch.records {
            match &record {
                Record::ToolUse { what } => f.last_tool = Some(what.clone()),
                Record::ToolDone => f.last_tool = None,
                _ => {}
            }
            f.history.apply(record);
        }
        self.review(sid);
        Ok(())
    }

    /// What `sid`'s transcript now says about the prompts on their way.
    fn review(&mut self, sid: &str) {
        let (Some(owner), Some(f)) = (self.owners.get(sid), self.followed.get(sid)) else {
            return;
        };
        let process = Process {
            started: owner.entry.started_at,
        };
        let out = self.deliveries.review(sid, &f.history, process);
        self.report_all(out);
    }

    fn not_running(&self, sid: &str) -> String {
        let registry = self.config.join("sessions");
        let why = if registry.is_dir() {
            "no running process holds it"
        } else {
            "no Claude Code has run with this config directory"
        };
        format!(
            "Claude Code session {sid} is not running: {why} (registry {}); start it again with `claude --resume {sid}`",
            registry.display()
        )
    }

    fn report(&self, input: Input) {
        let _ = self.reports.send(input);
    }

    fn report_all(&self, inputs: Vec<Input>) {
        inputs.into_iter().for_each(|i| self.report(i));
    }
}

/// The `from` of reveille's messages: Claude Code shows it in its notices
/// ("Dropped a peer message from reveille-myproj: …") and keys its
/// duplicate and rate guards by it. Letters, digits, `-`, `_`, `.` only.
pub fn sender_name(project: &str) -> String {
    let clean: String = project
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("reveille-{clean}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// An observer of Claude Code's config dir `config`, in which no
    /// session runs, and what it reports.
    fn observer(config: &Path) -> (Observer, tokio::sync::mpsc::UnboundedReceiver<Input>) {
        let (reports, rx) = Reports::channel();
        let (tx, commands) = std::sync::mpsc::channel();
        let (waker, wakeup) = wait::waker().unwrap();
        let config = config.to_path_buf();
        let observer = Observer::new(config, "p", reports, commands, (tx, waker), wakeup);
        (observer.unwrap(), rx)
    }

    fn delivery(again: bool) -> Delivery {
        Delivery {
            session: "claude:s1".into(),
            seq: 1,
            text: "do s1".into(),
            plan: "p.md".into(),
            step: "s1".into(),
            parent: None,
            again,
        }
    }

    #[test]
    fn a_transcript_that_cannot_be_read_tells_nothing_and_nothing_is_written_on_a_guess() {
        let config = tempfile::tempdir().unwrap();
        // In the transcript's place, a directory: its read fails (EISDIR),
        // as a failing disk's does (EIO).
        let transcript = config.path().join("projects/-w/s1.jsonl");
        std::fs::create_dir_all(&transcript).unwrap();
        let (mut o, mut rx) = observer(config.path());
        o.look(&delivery(false));
        match rx.try_recv() {
            Ok(Input::Evidence {
                evidence: Evidence::Unsure(why),
                ..
            }) => assert!(why.contains("s1.jsonl"), "{why}"),
            other => panic!("a failed read was taken for an answer: {other:?}"),
        }
        o.deliver(&delivery(true));
        match rx.try_recv() {
            Ok(Input::Undeliverable { why, .. }) => {
                assert!(why.reason.contains("not written again"), "{why:?}")
            }
            other => panic!("handed out again and not checked for: {other:?}"),
        }
        // Readable, and the prompt not in it: not taken.
        std::fs::remove_dir(&transcript).unwrap();
        std::fs::write(&transcript, "").unwrap();
        o.look(&delivery(false));
        assert!(
            matches!(
                rx.try_recv(),
                Ok(Input::Evidence {
                    evidence: Evidence::NotRecorded(_),
                    ..
                })
            ),
            "an absence read is not taken"
        );
    }
}
