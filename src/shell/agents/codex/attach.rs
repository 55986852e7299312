//! Attaching to a session's thread: finding it (by id, or by its exact
//! name), `thread/resume` on this connection — which subscribes reveille
//! to the thread's turns and proves that this server is the thread's
//! writer ("thread … already has an active writer" when another Codex
//! process owns it) — and reading which of reveille's prompts the thread
//! already holds, so a prompt repeated after a restart is not sent twice.

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
        match self.subscribe(name, &thread) {
            Ok(()) => Ok(thread),
            Err(CallError::Lost(why)) => Err(why),
            Err(CallError::Refused(m)) if m.contains("no rollout found") => {
                self.attach_unstored(name, &thread, &m)?;
                Ok(thread)
            }
            Err(CallError::Refused(m)) => Err(self.refused(name, &thread, &m)),
        }
    }

    /// `thread/resume` on this connection, then what the thread holds of
    /// ours and its state; a turn started on one of ours that the engine
    /// was not told of yet is told now.
    pub(super) fn subscribe(&mut self, name: &str, thread: &str) -> Result<(), CallError> {
        let resumed = self.call("thread/resume", protocol::resume(thread))?;
        let info = ThreadInfo::of(&resumed["thread"]);
        if let Some(s) = self.sessions.get(name) {
            s.attached = true;
            s.subscribed = true;
            s.resumed = resumed;
        }
        self.read_held(name, thread).map_err(CallError::Lost)?;
        let state = info.and_then(|i| i.state);
        let input = self.sessions.set_state(name, state);
        self.report_all(input);
        self.tell_started(name);
        Ok(())
    }

    /// A thread with no turn yet has no rollout to resume from ("no
    /// rollout found"), so no client can subscribe to it until its first
    /// turn; if this server has it loaded, it is this server's, and its
    /// queue runs a prompt all the same. Subscribed once a turn started.
    fn attach_unstored(&mut self, name: &str, thread: &str, message: &str) -> Result<(), String> {
        let read = match self.call("thread/read", json!({ "threadId": thread })) {
            Ok(read) => read,
            Err(CallError::Lost(why)) => return Err(why),
            Err(CallError::Refused(_)) => return Err(self.refused(name, thread, message)),
        };
        if read["thread"]["status"]["type"] == "notLoaded" {
            return Err(self.refused(name, thread, message));
        }
        let info = ThreadInfo::of(&read["thread"]);
        if let Some(s) = self.sessions.get(name) {
            s.attached = true;
            s.subscribed = false;
            s.resumed = json!({ "cwd": info.as_ref().map(|i| i.cwd.clone()) });
        }
        let input = self.sessions.set_state(name, info.and_then(|i| i.state));
        self.report_all(input);
        Ok(())
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
            "codex thread {thread} cannot be resumed at {}: {message}",
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
    /// turn yet has no history to list ("not materialized yet").
    pub(super) fn read_held(&mut self, name: &str, thread: &str) -> Result<(), String> {
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
            for ((id, text), started) in ours {
                let held = s.held.entry(id).or_insert(Held {
                    text,
                    started: false,
                    told: false,
                });
                held.started |= started;
            }
        }
        Ok(())
    }
}
