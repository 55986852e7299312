//! Anthropic's Messages API, as Claude Code calls it: `POST
//! /v1/messages?beta=true`, streamed as server-sent events (`message_start`,
//! `content_block_*`, `message_delta`, `message_stop`), or one JSON message
//! when the request does not ask for a stream.
//!
//! What Claude Code 2.1.332 sends, as seen here: `messages` alternate
//! `user` and `assistant`, and may end with a `system` message (the date
//! reminder) after the last user one; a user message's `content` is a
//! string or a list of blocks — `text` (Claude's own `<system-reminder>`
//! blocks among them), `tool_result` (`content` a string or a list of text
//! blocks). A message from another session over the messaging socket
//! arrives framed: "Another Claude session sent a message:\n<text>\n\n…".
//! Its shell tool is `Bash`, `{"command", "description"}`.

use std::time::Duration;

use serde_json::{json, Value};

use super::http::{Request, Response};
use super::{Api, Asked, Reply, Script};

/// The Messages API.
pub struct Messages;

impl Api for Messages {
    fn serves(&self, req: &Request) -> bool {
        req.method == "POST" && req.path().starts_with("/v1/messages")
    }

    fn read(&self, req: &Request) -> Asked {
        let body = req.json();
        let users: Vec<&Value> = body["messages"]
            .as_array()
            .map(|m| m.iter().filter(|m| m["role"] == "user").collect())
            .unwrap_or_default();
        let last = users.last().copied().unwrap_or(&Value::Null);
        let results = tool_results(last);
        // The turn's prompt: the latest user message with text of its own
        // (a tool result's message carries none), so `delay=` lasts the turn.
        let prompt = users
            .iter()
            .rev()
            .map(|m| user_text(m))
            .find(|t| !t.is_empty())
            .unwrap_or_default();
        Asked {
            last_user: prompt,
            after_tool: !results.is_empty(),
            tool_output: results.join("\n"),
            auxiliary: auxiliary(req, &body),
        }
    }

    fn answer(&self, req: &Request, reply: &Reply, out: &mut Response) -> std::io::Result<()> {
        let body = req.json();
        if req.path().ends_with("/count_tokens") {
            return out.json(200, &json!({"input_tokens": 1}));
        }
        let model = body["model"].as_str().unwrap_or("fake-model").to_string();
        let blocks = blocks(reply);
        let stop = if matches!(reply, Reply::Ticks(_) | Reply::Question(_)) {
            "tool_use"
        } else {
            "end_turn"
        };
        if body["stream"] != true {
            return out.json(200, &message(&model, blocks, Some(stop)));
        }
        out.start_stream()?;
        out.event(
            Some("message_start"),
            &json!({"type": "message_start", "message": message(&model, vec![], None)}),
        )?;
        // A person's long turn: the stream is open and the model is slow,
        // as when it thinks (the core waited the first half already).
        if let Some(delay) = turn_delay(&self.read(req)) {
            out.pause(delay / 2);
        }
        for (index, block) in blocks.iter().enumerate() {
            stream_block(out, index, block)?;
        }
        out.event(
            Some("message_delta"),
            &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                    "usage": {"output_tokens": 1}}),
        )?;
        out.event(Some("message_stop"), &json!({"type": "message_stop"}))
    }
}

/// The delay the turn's prompt asks for (`delay=`), for every request of
/// that turn; none for Claude Code's own side requests.
fn turn_delay(asked: &Asked) -> Option<Duration> {
    if asked.auxiliary {
        return None;
    }
    Script::of(&asked.last_user).delay
}

/// A request Claude Code makes for itself: token counting, or one without
/// tools (titles, summaries, the quota probe) — the agent's turns always
/// carry its tools.
fn auxiliary(req: &Request, body: &Value) -> bool {
    req.path().ends_with("/count_tokens") || body["tools"].as_array().is_none_or(|t| t.is_empty())
}

/// The text blocks of a user message, without Claude's own
/// `<system-reminder>` blocks.
fn user_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .filter(|t| !t.trim_start().starts_with("<system-reminder>"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text of each `tool_result` block of a user message.
fn tool_results(message: &Value) -> Vec<String> {
    let Some(blocks) = message["content"].as_array() else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        })
        .collect()
}

/// The content blocks of the answer: one text, one `Bash` call per step,
/// or the question asked through Claude Code's `AskUserQuestion` tool.
fn blocks(reply: &Reply) -> Vec<Value> {
    match reply {
        Reply::Text(text) => vec![json!({"type": "text", "text": text})],
        Reply::Question(question) => {
            let options = json!([
                {"label": "Yes", "description": "go on"},
                {"label": "No", "description": "stop"},
            ]);
            let questions = json!([
                {"question": question, "header": "Asked", "options": options, "multiSelect": false},
            ]);
            vec![
                json!({"type": "tool_use", "id": format!("toolu_fake_{}_q", unique()),
                        "name": "AskUserQuestion", "input": {"questions": questions}}),
            ]
        }
        Reply::Ticks(ticks) => ticks
            .iter()
            .enumerate()
            .map(|(i, (_, command))| {
                json!({"type": "tool_use", "id": format!("toolu_fake_{}_{i}", unique()),
                       "name": "Bash",
                       "input": {"command": command, "description": "Tick the plan step"}})
            })
            .collect(),
    }
}

/// A number no other answer of this process used, for tool-use ids.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// An assistant message with `content`; `stop` `None` while it streams.
fn message(model: &str, content: Vec<Value>, stop: Option<&str>) -> Value {
    json!({"id": format!("msg_fake_{}", unique()), "type": "message", "role": "assistant",
           "model": model, "content": content, "stop_reason": stop, "stop_sequence": null,
           "usage": {"input_tokens": 1, "output_tokens": 1}})
}

/// One content block as `content_block_start`, one delta, `content_block_stop`.
fn stream_block(out: &mut Response, index: usize, block: &Value) -> std::io::Result<()> {
    let (start, delta) = if block["type"] == "tool_use" {
        (
            json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
            json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
        )
    } else {
        (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": block["text"]}),
        )
    };
    out.event(
        Some("content_block_start"),
        &json!({"type": "content_block_start", "index": index, "content_block": start}),
    )?;
    out.event(
        Some("content_block_delta"),
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )?;
    out.event(
        Some("content_block_stop"),
        &json!({"type": "content_block_stop", "index": index}),
    )
}
