//! What an opencode server's event stream says, as far as reveille cares:
//! the data of one `GET /global/event` event (`{"directory", "payload":
//! {"type", "properties"}}`) read into a typed [`Event`]. The shapes are
//! those of opencode 1.18.33's OpenAPI document (`GET /doc`: `GlobalEvent`,
//! `EventSessionStatus`, `EventMessageUpdated`, `ToolPart`, …).

use serde_json::Value;

use crate::core::session::{AgentState, Wait};

/// One event of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `server.connected`: the first event of a new stream, written once
    /// the server listens for the stream's events (its head comes before).
    Connected,
    /// `server.heartbeat`: sent every 10 s on an otherwise quiet stream.
    Heartbeat,
    /// `session.status`: idle, busy, or retrying a failed model call.
    Status { session: String, state: AgentState },
    /// `session.idle`: a session's run of turns ended.
    Idle { session: String },
    /// `message.updated` of a user message.
    User { session: String, id: String },
    /// `message.updated` of an assistant message: a model call answering
    /// the user message `parent`.
    Assistant { session: String, parent: String },
    /// `message.part.updated` of a tool part: `tool` runs (`Some`) or has
    /// finished (`None`).
    Tool {
        session: String,
        running: Option<String>,
    },
    /// `session.deleted`.
    Deleted { session: String },
    /// `permission.asked` or `question.asked`: the session waits for a
    /// person to answer request `request`.
    Asked {
        session: String,
        request: String,
        wait: Wait,
    },
    /// `permission.replied`, `question.replied` or `question.rejected`:
    /// request `request` was answered.
    Answered { session: String, request: String },
    /// Anything else (deltas, other kinds of event).
    Other,
}

/// Read one event's data; what cannot be read is [`Event::Other`].
pub fn parse(data: &str) -> Event {
    let Ok(v) = serde_json::from_str::<Value>(data) else {
        return Event::Other;
    };
    // `/global/event` wraps each event in `payload`; `/event` does not.
    let payload = v.get("payload").unwrap_or(&v);
    let props = &payload["properties"];
    let session = || props["sessionID"].as_str().map(str::to_string);
    match payload["type"].as_str().unwrap_or("") {
        "server.connected" => Event::Connected,
        "server.heartbeat" => Event::Heartbeat,
        "session.status" => match (session(), status(&props["status"])) {
            (Some(session), Some(state)) => Event::Status { session, state },
            _ => Event::Other,
        },
        "session.idle" => session().map_or(Event::Other, |session| Event::Idle { session }),
        "session.deleted" => session()
            .or_else(|| props["info"]["id"].as_str().map(str::to_string))
            .map_or(Event::Other, |session| Event::Deleted { session }),
        "message.updated" => message(&props["info"]).unwrap_or(Event::Other),
        "message.part.updated" => tool(&props["part"]).unwrap_or(Event::Other),
        "permission.asked" | "question.asked" => match request(props) {
            Some((session, request, wait)) => Event::Asked {
                session,
                request,
                wait,
            },
            None => Event::Other,
        },
        "permission.replied" | "question.replied" | "question.rejected" => {
            match (session(), props["requestID"].as_str()) {
                (Some(session), Some(request)) => Event::Answered {
                    session,
                    request: request.to_string(),
                },
                _ => Event::Other,
            }
        }
        _ => Event::Other,
    }
}

/// A `SessionStatus` (`{"type": "idle" | "busy" | "retry", …}`) in the
/// words reveille shows.
pub fn status(v: &Value) -> Option<AgentState> {
    match v["type"].as_str()? {
        "idle" => Some(AgentState::Idle),
        "busy" => Some(AgentState::Busy("busy".into())),
        "retry" => {
            let message = v["message"].as_str().unwrap_or("").trim();
            let attempt = v["attempt"].as_u64().unwrap_or(0);
            Some(AgentState::Busy(format!("retry {attempt}: {message}")))
        }
        other => Some(AgentState::Busy(other.to_string())),
    }
}

/// A pending request (a `PermissionRequest` or `QuestionRequest`, as
/// `permission.asked`, `question.asked`, `GET /permission` and `GET
/// /question` carry it): its session, its id and what it asks of a person
/// — the command to approve (`metadata.command`), else the permission and
/// its patterns; the first question.
pub fn request(v: &Value) -> Option<(String, String, Wait)> {
    let session = v["sessionID"].as_str()?.to_string();
    let id = v["id"].as_str()?.to_string();
    let wait = if let Some(questions) = v["questions"].as_array() {
        let first = questions.first().and_then(|q| q["question"].as_str());
        Wait::question(first.unwrap_or(""))
    } else if let Some(command) = v["metadata"]["command"].as_str() {
        Wait::approval(command)
    } else {
        let permission = v["permission"].as_str().unwrap_or("");
        let patterns: Vec<&str> = v["patterns"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match patterns.is_empty() {
            true => Wait::approval(permission),
            false => Wait::approval(format!("{permission} {}", patterns.join(" "))),
        }
    };
    Some((session, id, wait))
}

fn message(info: &Value) -> Option<Event> {
    let session = info["sessionID"].as_str()?.to_string();
    match info["role"].as_str()? {
        "user" => Some(Event::User {
            session,
            id: info["id"].as_str()?.to_string(),
        }),
        "assistant" => Some(Event::Assistant {
            session,
            parent: info["parentID"].as_str()?.to_string(),
        }),
        _ => None,
    }
}

fn tool(part: &Value) -> Option<Event> {
    if part["type"].as_str()? != "tool" {
        return None;
    }
    let session = part["sessionID"].as_str()?.to_string();
    let running = match part["state"]["status"].as_str()? {
        "running" => Some(part["tool"].as_str().unwrap_or("tool").to_string()),
        "completed" | "error" => None,
        _ => return None,
    };
    Some(Event::Tool { session, running })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global(payload: &str) -> String {
        format!(r#"{{"directory":"/w","project":"global","payload":{payload}}}"#)
    }

    #[test]
    fn the_events_reveille_follows_are_read() {
        let busy = global(
            r#"{"id":"evt_1","type":"session.status","properties":{"sessionID":"ses_a","status":{"type":"busy"}}}"#,
        );
        assert_eq!(
            parse(&busy),
            Event::Status {
                session: "ses_a".into(),
                state: AgentState::Busy("busy".into())
            }
        );
        let retry = global(
            r#"{"type":"session.status","properties":{"sessionID":"ses_a","status":{"type":"retry","attempt":2,"message":"rate limited","next":1}}}"#,
        );
        assert_eq!(
            parse(&retry),
            Event::Status {
                session: "ses_a".into(),
                state: AgentState::Busy("retry 2: rate limited".into())
            }
        );
        let idle = global(r#"{"type":"session.idle","properties":{"sessionID":"ses_a"}}"#);
        assert_eq!(
            parse(&idle),
            Event::Idle {
                session: "ses_a".into()
            }
        );
        let answer = global(
            r#"{"type":"message.updated","properties":{"sessionID":"ses_a","info":{"id":"msg_2","parentID":"msg_1","role":"assistant","sessionID":"ses_a"}}}"#,
        );
        assert_eq!(
            parse(&answer),
            Event::Assistant {
                session: "ses_a".into(),
                parent: "msg_1".into()
            }
        );
        let tool = global(
            r#"{"type":"message.part.updated","properties":{"sessionID":"ses_a","part":{"type":"tool","tool":"bash","sessionID":"ses_a","state":{"status":"running"}}}}"#,
        );
        assert_eq!(
            parse(&tool),
            Event::Tool {
                session: "ses_a".into(),
                running: Some("bash".into())
            }
        );
        let gone = global(
            r#"{"type":"session.deleted","properties":{"sessionID":"ses_a","info":{"id":"ses_a"}}}"#,
        );
        assert_eq!(
            parse(&gone),
            Event::Deleted {
                session: "ses_a".into()
            }
        );
    }

    #[test]
    fn what_is_not_followed_or_not_json_is_other() {
        for data in [
            "not json",
            r#"{"payload":{"type":"message.part.delta","properties":{"sessionID":"s"}}}"#,
            r#"{"payload":{"type":"session.status","properties":{"sessionID":"s"}}}"#,
        ] {
            assert_eq!(parse(data), Event::Other, "{data}");
        }
        assert_eq!(
            parse(r#"{"payload":{"type":"server.connected","properties":{}}}"#),
            Event::Connected
        );
        assert_eq!(
            parse(r#"{"payload":{"type":"server.heartbeat","properties":{}}}"#),
            Event::Heartbeat
        );
    }

    #[test]
    fn a_permission_or_a_question_asked_is_a_wait_and_its_reply_ends_it() {
        let asked = r#"{"payload":{"type":"permission.asked","properties":{"id":"per_1",
            "sessionID":"ses_a","permission":"bash","patterns":["sed -i s/a/b/ f"],
            "metadata":{"command":"sed -i s/a/b/ f"},"tool":{"messageID":"m","callID":"c"}}}}"#;
        assert_eq!(
            parse(asked),
            Event::Asked {
                session: "ses_a".into(),
                request: "per_1".into(),
                wait: Wait::approval("sed -i s/a/b/ f"),
            }
        );
        let edit = serde_json::json!({"id": "per_2", "sessionID": "ses_a",
            "permission": "edit", "patterns": ["src/a.rs"], "metadata": {}});
        assert_eq!(request(&edit).unwrap().2, Wait::approval("edit src/a.rs"));
        let question = r#"{"type":"question.asked","properties":{"id":"que_1","sessionID":"ses_a",
            "questions":[{"question":"Which one?","header":"Pick","options":[]}]}}"#;
        assert_eq!(
            parse(question),
            Event::Asked {
                session: "ses_a".into(),
                request: "que_1".into(),
                wait: Wait::question("Which one?"),
            }
        );
        for kind in [
            "permission.replied",
            "question.replied",
            "question.rejected",
        ] {
            let data = format!(
                r#"{{"type":"{kind}","properties":{{"sessionID":"ses_a","requestID":"r","reply":"once"}}}}"#
            );
            assert_eq!(
                parse(&data),
                Event::Answered {
                    session: "ses_a".into(),
                    request: "r".into()
                }
            );
        }
    }
}
