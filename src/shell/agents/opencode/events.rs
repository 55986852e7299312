//! What an opencode server's event stream says, as far as reveille cares:
//! the data of one `GET /global/event` event (`{"directory", "payload":
//! {"type", "properties"}}`) read into a typed [`Event`]. The shapes are
//! those of opencode 1.18.33's OpenAPI document (`GET /doc`: `GlobalEvent`,
//! `EventSessionStatus`, `EventMessageUpdated`, `ToolPart`, …).

use serde_json::Value;

use crate::core::session::AgentState;

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
}
