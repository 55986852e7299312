//! The words of the Codex app-server protocol reveille uses (v2, as
//! `codex app-server generate-json-schema` of 0.171.0 describes it): the
//! requests it sends, built here, and what it reads from answers and
//! notifications, parsed here into types — so the rest of the backend
//! never touches a JSON key.

use serde_json::{json, Value};

use crate::core::session::{AgentState, Wait};

/// A thread's runtime status (`ThreadStatus`), as reveille's session state:
/// `idle` is idle; `active` is busy — waiting for a person when its flags
/// say `waitingOnApproval` or `waitingOnUserInput` (the status does not
/// say of which command: [`Wait`]'s `what` is empty), else named by its
/// flags or `active`; `systemError` is busy (nothing runs it until a
/// person looks); `notLoaded` is idle — the thread is stored, and a resume
/// loads it to run a prompt at once.
pub fn state_of(status: &Value) -> Option<AgentState> {
    match status["type"].as_str()? {
        "idle" | "notLoaded" => Some(AgentState::Idle),
        "active" => {
            let flags: Vec<&str> = status["activeFlags"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if flags.contains(&"waitingOnApproval") {
                return Some(AgentState::Waiting(Wait::approval("")));
            }
            if flags.contains(&"waitingOnUserInput") {
                return Some(AgentState::Waiting(Wait::question("")));
            }
            Some(AgentState::Busy(if flags.is_empty() {
                "active".into()
            } else {
                flags.join(", ")
            }))
        }
        other => Some(AgentState::Busy(other.to_string())),
    }
}

/// `thread/resume`, without the history (reveille reads what it needs).
pub fn resume(thread: &str) -> Value {
    json!({ "threadId": thread, "excludeTurns": true })
}

/// `thread/queue/add`: the agent's own queue — a turn on the text now on
/// an idle thread, its own turn after the running one on a busy thread.
pub fn queue_add(thread: &str, text: &str, client_id: &str) -> Value {
    json!({
        "threadId": thread,
        "clientUserMessageId": client_id,
        "input": [{ "type": "text", "text": text, "text_elements": [] }],
    })
}

/// `thread/turns/list`, newest first, with the user messages in each turn.
pub fn recent_turns(thread: &str, limit: u32) -> Value {
    json!({ "threadId": thread, "limit": limit, "itemsView": "summary" })
}

/// The user messages that carry a client id, in `items` (a turn's or a
/// `thread/turns/list` page's turns): (client id, text).
pub fn client_messages(turns: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for turn in turns["data"].as_array().into_iter().flatten() {
        for item in turn["items"].as_array().into_iter().flatten() {
            if let Some(m) = client_message(item) {
                out.push(m);
            }
        }
    }
    out
}

/// A `userMessage` item's (client id, text), when it has a client id.
pub fn client_message(item: &Value) -> Option<(String, String)> {
    if item["type"] != "userMessage" {
        return None;
    }
    let id = item["clientId"].as_str()?.to_string();
    Some((id, input_text(&item["content"])))
}

/// The waiting submissions of `thread/queue/list`: (client id, text).
pub fn queued(list: &Value) -> Vec<(String, String)> {
    list["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let id = s["clientUserMessageId"].as_str()?.to_string();
            Some((id, input_text(&s["input"])))
        })
        .collect()
}

/// The text parts of a user input, joined by newlines.
fn input_text(parts: &Value) -> String {
    parts
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a thread carries that reveille uses (`Thread`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    pub id: String,
    pub name: Option<String>,
    pub cwd: String,
    pub state: Option<AgentState>,
}

impl ThreadInfo {
    pub fn of(thread: &Value) -> Option<ThreadInfo> {
        Some(ThreadInfo {
            id: thread["id"].as_str()?.to_string(),
            name: thread["name"].as_str().map(str::to_string),
            cwd: thread["cwd"].as_str().unwrap_or("").to_string(),
            state: state_of(&thread["status"]),
        })
    }
}

/// A notification reveille acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `thread/status/changed` (sent to every client, subscribed or not).
    Status {
        thread: String,
        state: Option<AgentState>,
        /// `false` for `notLoaded`: the server dropped its subscribers.
        loaded: bool,
    },
    /// `thread/archived` or `thread/deleted`: the thread is gone.
    Gone { thread: String },
    /// `thread/closed`: the server unloaded the thread; a resume loads it
    /// again.
    Closed { thread: String },
    /// A request of the server's to this client (an approval, a question).
    /// Codex sends them to a thread's subscribers only, and reveille is
    /// none: never expected, never answered — a person answers in the
    /// agent's own TUI.
    Request {
        thread: Option<String>,
        method: String,
    },
}

impl Event {
    /// The event a server message is, if reveille cares.
    pub fn of(msg: &Value) -> Option<Event> {
        let params = &msg["params"];
        let thread = || params["threadId"].as_str().map(str::to_string);
        if msg.get("id").is_some() {
            return Some(Event::Request {
                thread: thread(),
                method: msg["method"].as_str()?.to_string(),
            });
        }
        match msg["method"].as_str()? {
            "thread/status/changed" => Some(Event::Status {
                thread: thread()?,
                state: state_of(&params["status"]),
                loaded: params["status"]["type"] != "notLoaded",
            }),
            "thread/archived" | "thread/deleted" => Some(Event::Gone { thread: thread()? }),
            "thread/closed" => Some(Event::Closed { thread: thread()? }),
            _ => None,
        }
    }
}

/// Whether `id` is a Codex-generated thread id (a UUID) rather than a
/// thread's name.
pub fn is_thread_id(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_to_this_connection_is_an_event() {
        let msg = json!({"id": 0, "method": "item/commandExecution/requestApproval",
            "params": {"threadId": "t", "command": "/bin/bash -lc \"sed -i x f\""}});
        assert_eq!(
            Event::of(&msg),
            Some(Event::Request {
                thread: Some("t".into()),
                method: "item/commandExecution/requestApproval".into(),
            })
        );
    }

    #[test]
    fn thread_statuses_are_idle_or_busy_in_codexs_own_words() {
        let s = |v: Value| state_of(&v);
        assert_eq!(s(json!({"type": "idle"})), Some(AgentState::Idle));
        assert_eq!(s(json!({"type": "notLoaded"})), Some(AgentState::Idle));
        assert_eq!(
            s(json!({"type": "active", "activeFlags": []})),
            Some(AgentState::Busy("active".into()))
        );
        assert_eq!(
            s(json!({"type": "active", "activeFlags": ["waitingOnApproval"]})),
            Some(AgentState::Waiting(Wait::approval("")))
        );
        assert_eq!(
            s(json!({"type": "systemError"})),
            Some(AgentState::Busy("systemError".into()))
        );
        assert_eq!(s(json!({})), None);
    }

    #[test]
    fn notifications_become_events() {
        let status = json!({"method": "thread/status/changed",
            "params": {"threadId": "t", "status": {"type": "idle"}}});
        assert_eq!(
            Event::of(&status),
            Some(Event::Status {
                thread: "t".into(),
                state: Some(AgentState::Idle),
                loaded: true
            })
        );
        // Turns and items go to a thread's subscribers, not to reveille.
        let started = json!({"method": "item/started", "params": {"threadId": "t", "turnId": "u",
            "item": {"type": "userMessage", "id": "i", "clientId": "reveille:p:7",
                     "content": [{"type": "text", "text": "hi", "text_elements": []}]}}});
        assert_eq!(Event::of(&started), None);
        let done = json!({"method": "turn/completed", "params": {"threadId": "t",
            "turn": {"id": "u", "items": [], "status": "completed"}}});
        assert_eq!(Event::of(&done), None);
        let gone = json!({"method": "thread/archived", "params": {"threadId": "t"}});
        assert_eq!(Event::of(&gone), Some(Event::Gone { thread: "t".into() }));
    }

    #[test]
    fn history_and_queue_give_their_client_ids_and_texts() {
        let page = json!({"data": [{"id": "u", "items": [
            {"type": "userMessage", "id": "a", "clientId": "c1",
             "content": [{"type": "text", "text": "one", "text_elements": []}]},
            {"type": "agentMessage", "id": "m", "text": "reply"},
            {"type": "userMessage", "id": "b", "content": [{"type": "text", "text": "typed"}]}]}]});
        assert_eq!(client_messages(&page), vec![("c1".into(), "one".into())]);
        let queue = json!({"data": [{"id": "q", "clientUserMessageId": "c2",
            "input": [{"type": "text", "text": "two", "text_elements": []}]}]});
        assert_eq!(queued(&queue), vec![("c2".into(), "two".into())]);
    }

    #[test]
    fn thread_ids_are_uuids_and_anything_else_is_a_name() {
        assert!(is_thread_id("01a234d4-e8df-7351-9747-9d5834537c54"));
        assert!(!is_thread_id("hello there"));
        assert!(!is_thread_id("01a234d4-e8df-7351-9747-9d5834537c5"));
        assert!(!is_thread_id("reveille-child-s2"));
    }
}
