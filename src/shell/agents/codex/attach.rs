//! Attaching to a session's thread without ever subscribing to it:
//! finding it (by id, or by its exact name), reading it (`thread/read`),
//! and reading which of reveille's prompts it already holds, so a prompt
//! repeated after a restart is not sent twice.
//!
//! A client subscribed to a thread (`thread/start`, `thread/resume`) is
//! sent its approval requests and questions — also one asked before it
//! subscribed — and its answer counts. reveille must never be a party to
//! a person's answer, so it stays a client that only sent `initialize`:
//! Codex still broadcasts every thread's `thread/status/changed` to it,
//! and `thread/queue/add` starts or queues a turn on any thread this
//! server has loaded (doc/agents/codex.md, measured). Only a thread that
//! is stored but not loaded needs a resume — its queue runs only once
//! something loads it — and reveille unsubscribes in the same breath:
//! the thread stays loaded and its queue drains.

use serde_json::{json, Value};

use super::protocol::{self, ThreadInfo};
use super::rpc::CallError;
use super::sessions::Held;
use super::worker::Worker;
use crate::core::input::Input;
use crate::core::session::Kind;

/// How many of a thread's latest turns are read for reveille's prompts:
/// a prompt repeated after a restart is one of the last few.
const HISTORY_TURNS: u32 = 32;

impl Worker {
    /// Make sure `name`'s thread is reachable on this connection; its
    /// thread id, or why it cannot be reached, in words.
    pub(super) fn attach(&mut self, name: &str) -> Result<String, String> {
        let given = Kind::of(name).1.to_string();
        let session = self.sessions.know(name);
        if session.attached {
            if let Some(thread) = session.thread.clone() {
                return Ok(thread);
            }
        }
        let thread = match session.thread.clone() {
            Some(thread) => thread,
            None => self.resolve(&given)?,
        };
        if let Some(s) = self.sessions.get(name) {
            s.thread = Some(thread.clone());
        }
        let read = match self.call("thread/read", json!({ "threadId": thread })) {
            Ok(read) => read,
            Err(CallError::Lost(why)) => return Err(why),
            Err(CallError::Refused(m)) => return Err(self.refused(name, &thread, &m)),
        };
        let mut settings = read["thread"].clone();
        let mut state = ThreadInfo::of(&read["thread"]).and_then(|i| i.state);
        if read["thread"]["status"]["type"] == "notLoaded" {
            let loaded = self.load(name, &thread)?;
            state = ThreadInfo::of(&loaded["thread"]).and_then(|i| i.state);
            merge(&mut settings, &loaded);
        }
        if let Some(s) = self.sessions.get(name) {
            s.attached = true;
            s.settings = settings;
        }
        self.read_held(name, &thread)?;
        let input = self.sessions.set_state(name, state);
        self.report_all(input);
        self.tell_started(name);
        self.look_soon(name);
        Ok(thread)
    }

    /// Load a stored thread no process runs (`notLoaded` here): a
    /// `thread/resume` — which also proves this server may be its writer
    /// ("… already has an active writer" when another Codex process runs
    /// it) — and at once `thread/unsubscribe`. The thread stays loaded
    /// (measured: no `thread/closed`, its queue runs, later prompts start
    /// turns), and nothing of it is asked of reveille from then on. A
    /// thread just loaded has no request pending: none survives its
    /// server. The resume's answer (with the thread's approval policy and
    /// sandbox).
    fn load(&mut self, name: &str, thread: &str) -> Result<Value, String> {
        let resumed = match self.call("thread/resume", protocol::resume(thread)) {
            Ok(resumed) => resumed,
            Err(CallError::Lost(why)) => return Err(why),
            Err(CallError::Refused(m)) => return Err(self.refused(name, thread, &m)),
        };
        match self.call("thread/unsubscribe", json!({ "threadId": thread })) {
            Ok(_) => Ok(resumed),
            Err(e) => Err(format!(
                "codex thread {thread} at {} was loaded, but reveille could not unsubscribe from it \
                 ({e}); it delivers only to threads it is not subscribed to, so that it is never \
                 asked to approve anything",
                self.endpoint
            )),
        }
    }

    /// The engine hears of every turn started on one of ours it was not
    /// told of.
    pub(super) fn tell_started(&mut self, name: &str) {
        let Some(s) = self.sessions.get(name) else {
            return;
        };
        let mut seqs = Vec::new();
        for (id, held) in s.held.iter_mut() {
            if held.started && !held.told {
                held.told = true;
                seqs.extend(self.ids.seq(id));
            }
        }
        seqs.sort_unstable();
        for seq in seqs {
            self.report(Input::TurnStarted {
                session: name.to_string(),
                seq,
            });
        }
    }

    /// Why a resume was refused, for a person; a thread that is not there
    /// (archived, deleted, never was) is reported gone.
    fn refused(&mut self, name: &str, thread: &str, message: &str) -> String {
        if message.contains("active writer") {
            return format!(
                "codex thread {thread} is owned by another codex process ({message}); \
                 reveille reaches it only through the app-server at {}, the one [codex] names",
                self.endpoint
            );
        }
        let input = self.sessions.set_state(name, None);
        self.report_all(input);
        format!(
            "codex thread {thread} cannot be loaded at {}: {message}; open it in codex \
             (`codex resume {thread}`) and reveille delivers there",
            self.endpoint
        )
    }

    /// The thread a session names: its id as given, or the one thread
    /// whose name is exactly the given text.
    pub(super) fn resolve(&mut self, given: &str) -> Result<String, String> {
        if protocol::is_thread_id(given) {
            return Ok(given.to_string());
        }
        let found = self.find_by_name(given)?;
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(format!(
                "no codex thread is named {given:?} at {}",
                self.endpoint
            )),
            several => Err(format!(
                "{} codex threads are named {given:?} at {}: name the session by its thread id",
                several.len(),
                self.endpoint
            )),
        }
    }

    /// Every thread named exactly `name`: the stored ones (`thread/list`,
    /// which searches titles) and the loaded ones that are not stored yet
    /// (a thread with no turn is not listed until its first turn).
    pub(super) fn find_by_name(&mut self, name: &str) -> Result<Vec<String>, String> {
        let named = |t: &ThreadInfo| t.name.as_deref() == Some(name);
        let listed = self
            .call("thread/list", json!({ "searchTerm": name, "limit": 100 }))
            .map_err(|e| e.to_string())?;
        let mut found: Vec<String> = listed["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(ThreadInfo::of)
            .filter(named)
            .map(|t| t.id)
            .collect();
        let loaded = self
            .call("thread/loaded/list", json!({}))
            .map_err(|e| e.to_string())?;
        let loaded: Vec<String> = loaded["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|id| id.as_str().map(str::to_string))
            .filter(|id| !found.contains(id))
            .collect();
        for id in loaded {
            let read = self
                .call("thread/read", json!({ "threadId": id }))
                .map_err(|e| e.to_string())?;
            if ThreadInfo::of(&read["thread"]).is_some_and(|t| named(&t)) {
                found.push(id);
            }
        }
        Ok(found)
    }

    /// Which of this project's prompts `thread` holds: in its latest turns
    /// (a turn started on them) or waiting in its queue. A thread with no
    /// turn yet has no history to list ("not materialized yet"). Whether
    /// one of ours is in neither (Codex is starting it: `started.rs`). The
    /// turns read (newest first; null when there are none).
    pub(super) fn read_held(&mut self, name: &str, thread: &str) -> Result<Value, String> {
        let turns = match self.call(
            "thread/turns/list",
            protocol::recent_turns(thread, HISTORY_TURNS),
        ) {
            Ok(turns) => turns,
            Err(CallError::Refused(_)) => Value::Null,
            Err(CallError::Lost(why)) => return Err(why),
        };
        let queue = self
            .call("thread/queue/list", json!({ "threadId": thread }))
            .map_err(|e| e.to_string())?;
        let started = protocol::client_messages(&turns)
            .into_iter()
            .map(|m| (m, true));
        let waiting = protocol::queued(&queue).into_iter().map(|m| (m, false));
        let ours: Vec<_> = started
            .chain(waiting)
            .filter(|((id, _), _)| self.ids.seq(id).is_some())
            .collect();
        if let Some(s) = self.sessions.get(name) {
            let seen: Vec<String> = ours.iter().map(|((id, _), _)| id.clone()).collect();
            for ((id, text), started) in ours {
                let held = s.held.entry(id).or_insert(Held {
                    text,
                    started: false,
                    told: false,
                });
                held.started |= started;
            }
            s.hidden = s
                .held
                .iter()
                .any(|(id, h)| !h.started && !seen.contains(id));
        }
        Ok(turns)
    }
}

/// The settings a child inherits: the thread's own (`cwd`, `model`,
/// `modelProvider`), and what a resume told besides (`approvalPolicy`,
/// `sandbox`).
fn merge(settings: &mut Value, resumed: &Value) {
    let Value::Object(map) = settings else {
        return;
    };
    for key in ["cwd", "model", "modelProvider", "approvalPolicy", "sandbox"] {
        if !resumed[key].is_null() {
            map.insert(key.into(), resumed[key].clone());
        }
    }
}
