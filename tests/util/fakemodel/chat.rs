//! OpenAI's Chat Completions API, as opencode speaks it through its
//! bundled `@ai-sdk/openai-compatible` provider: `POST <baseURL>/chat/
//! completions` with `stream: true`, answered as server-sent
//! `chat.completion.chunk` events ended by `data: [DONE]`.
//!
//! Seen from opencode 1.18.33: a turn's requests carry the agent's tools
//! (`bash`, `edit`, `read`, …); its own side requests carry none — the
//! title of a new session (system prompt "You are a title generator", sent
//! beside the first turn, with that turn's user text as its last message)
//! and a compaction summary ("You are a context summarization agent").
//! Those are `auxiliary`. A tick is one `bash` tool call per step, with
//! `{"command": …}` (the tool's only required argument); opencode runs it
//! and sends the next request with the `tool` message holding its output.

use serde_json::{json, Value};

use super::http::{Request, Response};
use super::{Api, Asked, Reply, Script};

/// The system prompts of opencode's own side requests.
const AUXILIARY: [&str; 2] = [
    "You are a title generator",
    "You are a context summarization agent",
];

/// The Chat Completions API.
pub struct Chat;

impl Api for Chat {
    fn serves(&self, req: &Request) -> bool {
        req.method == "POST" && req.path().ends_with("/chat/completions")
    }

    fn read(&self, req: &Request) -> Asked {
        let body = req.json();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last_user = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(|m| text(&m["content"]))
            .unwrap_or_default();
        let trailing_tools: Vec<&Value> = messages
            .iter()
            .rev()
            .take_while(|m| m["role"] == "tool")
            .collect();
        let system = messages
            .iter()
            .filter(|m| m["role"] == "system")
            .map(|m| text(&m["content"]))
            .collect::<Vec<_>>()
            .join("\n");
        let no_tools = body["tools"].as_array().is_none_or(|t| t.is_empty());
        Asked {
            last_user,
            after_tool: !trailing_tools.is_empty(),
            tool_output: trailing_tools
                .iter()
                .rev()
                .map(|m| text(&m["content"]))
                .collect::<Vec<_>>()
                .join("\n"),
            auxiliary: no_tools || AUXILIARY.iter().any(|a| system.starts_with(a)),
        }
    }

    fn answer(&self, req: &Request, reply: &Reply, out: &mut Response) -> std::io::Result<()> {
        let model = req.json()["model"]
            .as_str()
            .unwrap_or("fake-model")
            .to_string();
        let chunk = |delta: Value, finish: Option<&str>| {
            json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            })
        };
        out.start_stream()?;
        out.event(
            None,
            &chunk(json!({"role": "assistant", "content": ""}), None),
        )?;
        // The other half of a delay= turn's pace (the server waited the
        // first half before answering): bytes flow, as a model streams.
        if let Some(delay) = Script::of(&self.read(req).last_user).delay {
            if !self.read(req).auxiliary {
                out.pause(delay / 2);
            }
        }
        let finish = match reply {
            Reply::Text(text) => {
                out.event(None, &chunk(json!({"content": text}), None))?;
                "stop"
            }
            Reply::Ticks(ticks) => {
                let calls: Vec<Value> = ticks
                    .iter()
                    .enumerate()
                    .map(|(i, (_, command))| {
                        json!({
                            "index": i,
                            "id": format!("call_fake_{i}"),
                            "type": "function",
                            "function": {
                                "name": "bash",
                                "arguments": json!({"command": command}).to_string(),
                            },
                        })
                    })
                    .collect();
                out.event(None, &chunk(json!({"tool_calls": calls}), None))?;
                "tool_calls"
            }
            Reply::Question(question) => {
                let options = json!([
                    {"label": "Yes", "description": "go on"},
                    {"label": "No", "description": "stop"},
                ]);
                let questions = json!({"questions": [
                    {"question": question, "header": "Asked", "options": options},
                ]});
                let call = json!({
                    "index": 0,
                    "id": "call_fake_q",
                    "type": "function",
                    "function": {"name": "question", "arguments": questions.to_string()},
                });
                out.event(None, &chunk(json!({"tool_calls": [call]}), None))?;
                "tool_calls"
            }
        };
        let mut last = chunk(json!({}), Some(finish));
        last["usage"] = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
        out.event(None, &last)?;
        out.raw_data("[DONE]")
    }
}

/// A message's content as text: a string, or the text of its parts.
fn text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: Value) -> Request {
        Request {
            method: "POST".into(),
            target: "/v1/chat/completions".into(),
            headers: vec![],
            body: body.to_string().into_bytes(),
        }
    }

    #[test]
    fn turns_tool_results_and_side_requests_are_told_apart() {
        let tools = json!([{"type": "function", "function": {"name": "bash"}}]);
        let turn = request(json!({"messages": [
            {"role": "system", "content": "You are opencode"},
            {"role": "user", "content": [{"type": "text", "text": "do s1"}]},
        ], "tools": tools}));
        let a = Chat.read(&turn);
        assert_eq!(
            (a.last_user.as_str(), a.after_tool, a.auxiliary),
            ("do s1", false, false)
        );
        let after = request(json!({"messages": [
            {"role": "user", "content": "do s1"},
            {"role": "assistant", "tool_calls": []},
            {"role": "tool", "content": "ticked: s1"},
        ], "tools": tools}));
        let a = Chat.read(&after);
        assert!(a.after_tool && !a.auxiliary);
        assert_eq!(a.tool_output, "ticked: s1");
        let title = request(json!({"messages": [
            {"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
            {"role": "user", "content": "Generate a title for this conversation:\n"},
            {"role": "user", "content": "do s1"},
        ]}));
        let a = Chat.read(&title);
        assert!(a.auxiliary && !a.after_tool);
        assert_eq!(a.last_user, "do s1");
        assert!(Chat.serves(&turn));
    }
}
