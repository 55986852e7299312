//! The calls reveille makes to an opencode server, typed: a session's
//! record, the status of a directory's sessions, a session's recent
//! messages, `prompt_async`, and creating, aborting and deleting a session.
//! Routes and shapes are opencode 1.18.33's (`GET /doc`).

use serde_json::{json, Value};

use super::http::{Answer, Failure, Server};
use crate::core::session::{AgentState, Wait};
use crate::shell::agents::remote::link::LinkDown;

/// Why a call failed, in words a person understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// Nothing reached the server: not running at its URL, the network,
    /// TLS, or credentials it refused.
    Unreachable(LinkDown),
    /// The server says there is no such session.
    NoSession(String),
    /// The server refused or broke: the reason, with what it said.
    Failed(String),
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Unreachable(link) => link.fmt(f),
            ApiError::NoSession(why) | ApiError::Failed(why) => f.write_str(why),
        }
    }
}

impl From<Failure> for ApiError {
    fn from(f: Failure) -> ApiError {
        match f {
            Failure::Unreachable(link) => ApiError::Unreachable(link),
            Failure::Broken(why) => ApiError::Failed(why),
        }
    }
}

/// A session's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: String,
    /// Its working directory: the server instance its status and events
    /// belong to.
    pub directory: String,
    pub parent: Option<String>,
    pub title: String,
}

/// One message of a session's transcript, without its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageInfo {
    pub id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// For an assistant message, the user message it answers.
    pub parent: Option<String>,
}

/// The typed calls, over one server.
#[derive(Debug, Clone)]
pub struct Api {
    pub server: Server,
}

impl Api {
    /// `GET /session/:id`.
    pub fn session(&self, id: &str) -> Result<SessionInfo, ApiError> {
        let answer = self.ok(id, self.server.call("GET", &session_path(id, ""), None)?)?;
        session_info(&answer.json()?)
    }

    /// `GET /session/status?directory=`: the state of session `id`, which
    /// lives in `directory` (a session the map does not name is idle).
    pub fn state(&self, id: &str, directory: &str) -> Result<AgentState, ApiError> {
        let target = format!("/session/status?directory={}", encode(directory));
        let answer = self.ok(id, self.server.call("GET", &target, None)?)?;
        let map = answer.json()?;
        Ok(super::events::status(&map[id]).unwrap_or(AgentState::Idle))
    }

    /// `GET /permission` and `GET /question` of `directory`: the requests
    /// waiting for a person there, as (session, request, what it asks).
    pub fn pending(&self, directory: &str) -> Result<Vec<(String, String, Wait)>, ApiError> {
        let mut out = Vec::new();
        for route in ["/permission", "/question"] {
            let target = format!("{route}?directory={}", encode(directory));
            let answer = self.server.call("GET", &target, None)?;
            if answer.status != 200 {
                return Err(ApiError::Failed(format!("GET {route}: {}", answer.status)));
            }
            let list = answer.json()?;
            let list = list
                .as_array()
                .ok_or_else(|| shape("a request list", &answer))?;
            out.extend(list.iter().filter_map(super::events::request));
        }
        Ok(out)
    }

    /// `GET /session/:id/message?limit=`: the last `limit` messages, oldest
    /// first.
    pub fn messages(&self, id: &str, limit: usize) -> Result<Vec<MessageInfo>, ApiError> {
        let target = session_path(id, &format!("/message?limit={limit}"));
        let answer = self.ok(id, self.server.call("GET", &target, None)?)?;
        let list = answer.json()?;
        let list = list
            .as_array()
            .ok_or_else(|| shape("a message list", &answer))?;
        Ok(list
            .iter()
            .filter_map(|m| message_info(&m["info"]))
            .collect())
    }

    /// `POST /session/:id/prompt_async` with our `messageID`: 204 once the
    /// server has taken it (the turn runs in the background).
    pub fn prompt(&self, id: &str, message_id: &str, text: &str) -> Result<(), ApiError> {
        let body = json!({
            "messageID": message_id,
            "parts": [{"type": "text", "text": text}],
        });
        let answer = self
            .server
            .call("POST", &session_path(id, "/prompt_async"), Some(&body))?;
        self.ok(id, answer).map(drop)
    }

    /// `POST /session?directory=` with a parent and a title.
    pub fn create(
        &self,
        directory: &str,
        parent: &str,
        title: &str,
    ) -> Result<SessionInfo, ApiError> {
        let target = format!("/session?directory={}", encode(directory));
        let body = json!({"parentID": parent, "title": title});
        let answer = self.ok(parent, self.server.call("POST", &target, Some(&body))?)?;
        session_info(&answer.json()?)
    }

    /// `GET /session/:id/children`.
    pub fn children(&self, id: &str) -> Result<Vec<SessionInfo>, ApiError> {
        let answer = self.ok(
            id,
            self.server
                .call("GET", &session_path(id, "/children"), None)?,
        )?;
        let list = answer.json()?;
        let list = list
            .as_array()
            .ok_or_else(|| shape("a session list", &answer))?;
        list.iter().map(session_info).collect()
    }

    /// `POST /session/:id/abort`: interrupt the running turn.
    pub fn abort(&self, id: &str) -> Result<(), ApiError> {
        let answer = self
            .server
            .call("POST", &session_path(id, "/abort"), None)?;
        self.ok(id, answer).map(drop)
    }

    /// `DELETE /session/:id`.
    pub fn delete(&self, id: &str) -> Result<(), ApiError> {
        let answer = self.server.call("DELETE", &session_path(id, ""), None)?;
        self.ok(id, answer).map(drop)
    }

    /// A 2xx answer, or the error it means.
    fn ok(&self, id: &str, answer: Answer) -> Result<Answer, ApiError> {
        match answer.status {
            200..=299 => Ok(answer),
            404 => Err(ApiError::NoSession(format!(
                "no session {id} on the opencode server at {} (deleted, or kept by an opencode with another data directory)",
                self.server.url()
            ))),
            403 => Err(ApiError::Failed(format!(
                "the opencode server at {} refused reveille (403): {}",
                self.server.url(),
                answer.text()
            ))),
            status => Err(ApiError::Failed(format!(
                "the opencode server at {} answered {status}: {}",
                self.server.url(),
                answer.text()
            ))),
        }
    }
}

/// `/session/<id><rest>`, the id percent-encoded: ids come from data.
fn session_path(id: &str, rest: &str) -> String {
    format!("/session/{}{rest}", encode(id))
}

fn session_info(v: &Value) -> Result<SessionInfo, ApiError> {
    let text = |k: &str| v[k].as_str().map(str::to_string);
    match (text("id"), text("directory")) {
        (Some(id), Some(directory)) => Ok(SessionInfo {
            id,
            directory,
            parent: text("parentID"),
            title: text("title").unwrap_or_default(),
        }),
        _ => Err(ApiError::Failed(format!(
            "the opencode server sent a session without an id or directory: {}",
            short(v)
        ))),
    }
}

fn message_info(info: &Value) -> Option<MessageInfo> {
    Some(MessageInfo {
        id: info["id"].as_str()?.to_string(),
        role: info["role"].as_str()?.to_string(),
        parent: info["parentID"].as_str().map(str::to_string),
    })
}

fn shape(what: &str, answer: &Answer) -> ApiError {
    ApiError::Failed(format!(
        "the opencode server did not send {what}: {}",
        answer.text()
    ))
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    text.chars().take(200).collect()
}

/// Percent-encode everything but RFC 3986's unreserved characters.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_directories_cannot_change_the_route() {
        assert_eq!(
            session_path("ses_a/../x", "/abort"),
            "/session/ses_a%2F..%2Fx/abort"
        );
        assert_eq!(encode("/tmp/my dir"), "%2Ftmp%2Fmy%20dir");
        assert_eq!(encode("ses_AZaz09-._~"), "ses_AZaz09-._~");
    }

    #[test]
    fn records_are_read_and_bad_ones_named() {
        let v = json!({"id": "ses_1", "directory": "/w", "parentID": "ses_0", "title": "t"});
        assert_eq!(
            session_info(&v).unwrap(),
            SessionInfo {
                id: "ses_1".into(),
                directory: "/w".into(),
                parent: Some("ses_0".into()),
                title: "t".into()
            }
        );
        let err = session_info(&json!({"id": "ses_1"})).unwrap_err();
        assert!(
            err.to_string().contains("without an id or directory"),
            "{err}"
        );
        let m = message_info(&json!({"id": "msg_2", "role": "assistant", "parentID": "msg_1"}));
        assert_eq!(m.unwrap().parent.as_deref(), Some("msg_1"));
    }
}
