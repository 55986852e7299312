//! OpenAI's Responses API as Codex speaks it: `POST /v1/responses` with
//! `stream: true`, answered as server-sent events (`response.created`,
//! `response.output_item.added` / `.done`, `response.output_text.delta`,
//! `response.completed`).
//!
//! What a request carries (seen from `@openai/codex` 0.171.0): `input` is
//! the whole conversation — `message` items (`role` `developer` / `user` /
//! `assistant`, text parts `input_text` / `output_text`), `function_call`
//! items and their `function_call_output`s. Codex puts its own context
//! (`<environment_context>`, instructions) in earlier user messages, so the
//! prompt is the *last* user message. The shell tool is `exec_command`
//! (`{"cmd": "<script>"}`, run by the user's shell); older Codex versions
//! offered `shell` (`{"command": ["bash", "-lc", …]}`), used when that is
//! the one offered. Codex's own side requests — the thread title, which
//! asks for JSON (`text.format` of type `json_schema`) in a helper thread
//! whose `x-codex-turn-metadata` says `thread_source: "thread_title"`, and
//! remote compaction — are auxiliary.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Value};

use super::http::{Request, Response};
use super::{Api, Asked, Reply, Script};

/// The Responses API (Codex's `wire_api = "responses"`).
pub struct Responses;

/// Ids of the items this model writes, unique within the test process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Api for Responses {
    fn serves(&self, req: &Request) -> bool {
        req.method == "POST" && req.path().starts_with("/v1/responses")
    }

    fn read(&self, req: &Request) -> Asked {
        let body = req.json();
        let input: &[Value] = body["input"].as_array().map_or(&[], Vec::as_slice);
        let last_user_at = input.iter().rposition(is_user_message);
        let last_user = last_user_at.map_or(String::new(), |i| message_text(&input[i]));
        let after = last_user_at.map_or(input, |i| &input[i + 1..]);
        let outputs: Vec<String> = after
            .iter()
            .filter(|item| is_tool_output(item))
            .map(|item| output_text(&item["output"]))
            .collect();
        Asked {
            last_user,
            after_tool: input.last().is_some_and(is_tool_output),
            tool_output: outputs.join("\n"),
            auxiliary: is_auxiliary(req, &body),
        }
    }

    fn answer(&self, req: &Request, reply: &Reply, out: &mut Response) -> std::io::Result<()> {
        let body = req.json();
        let asked = self.read(req);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        out.start_stream()?;
        send(
            out,
            json!({"type": "response.created", "response": {"id": format!("resp_{id}")}}),
        )?;
        match reply {
            Reply::Question(question) if offers(&body, QUESTION_TOOL) => {
                let call = question_call(&format!("{id}_q"), question);
                send(
                    out,
                    json!({"type": "response.output_item.added", "output_index": 0, "item": call}),
                )?;
                send(
                    out,
                    json!({"type": "response.output_item.done", "output_index": 0, "item": call}),
                )?;
            }
            Reply::Text(text) | Reply::Question(text) => {
                let text = framed_text(&body, text);
                // The other half of a `delay=` turn (the core waited the
                // first half): the answer is still streaming meanwhile.
                if !asked.auxiliary {
                    if let Some(delay) = Script::of(&asked.last_user).delay {
                        out.pause(delay / 2);
                    }
                }
                message(out, id, &text)?;
            }
            Reply::Ticks(ticks) => {
                let tool = ShellTool::offered(&body);
                for (i, (_, cmd)) in ticks.iter().enumerate() {
                    let call = tool.call(&format!("{id}_{i}"), cmd);
                    send(
                        out,
                        json!({"type": "response.output_item.added", "output_index": i, "item": call}),
                    )?;
                    send(
                        out,
                        json!({"type": "response.output_item.done", "output_index": i, "item": call}),
                    )?;
                }
            }
        }
        send(out, completed(id))
    }
}

fn send(out: &mut Response, event: Value) -> std::io::Result<()> {
    let name = event["type"].as_str().unwrap_or("").to_string();
    out.event(Some(&name), &event)
}

/// One assistant message, streamed as Codex reads it: the item opened, its
/// text as one delta, the item done.
fn message(out: &mut Response, id: u64, text: &str) -> std::io::Result<()> {
    let item_id = format!("msg_{id}");
    send(
        out,
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "role": "assistant", "id": item_id, "content": []}}),
    )?;
    send(
        out,
        json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": 0,
               "content_index": 0, "delta": text}),
    )?;
    send(
        out,
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"type": "message", "role": "assistant", "id": item_id,
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}}),
    )
}

fn completed(id: u64) -> Value {
    json!({"type": "response.completed", "response": {"id": format!("resp_{id}"), "usage": {
        "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15}}})
}

/// A request that asks for JSON gets the text as the one string field its
/// schema names (the title generator's `{"title": …}`).
fn framed_text(body: &Value, text: &str) -> String {
    let format = &body["text"]["format"];
    if format["type"] != "json_schema" {
        return text.to_string();
    }
    let field = format["schema"]["properties"]
        .as_object()
        .and_then(|p| p.keys().next().cloned())
        .unwrap_or_else(|| "title".into());
    json!({ field: text }).to_string()
}

fn is_user_message(item: &Value) -> bool {
    item["type"] == "message" && item["role"] == "user"
}

fn is_tool_output(item: &Value) -> bool {
    matches!(
        item["type"].as_str(),
        Some("function_call_output" | "custom_tool_call_output")
    )
}

fn message_text(item: &Value) -> String {
    match &item["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A tool output is a string, or (newer Codex) a list of content parts.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        Value::Array(_) => message_text(&json!({ "content": output })),
        other => other["content"].as_str().unwrap_or("").to_string(),
    }
}

/// Codex's own side requests: a helper thread's (`thread_source` other than
/// the user's), one asking for structured JSON, or remote compaction.
fn is_auxiliary(req: &Request, body: &Value) -> bool {
    let metadata: Value = req
        .header("x-codex-turn-metadata")
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or(Value::Null);
    let helper = metadata["thread_source"]
        .as_str()
        .is_some_and(|s| s != "user");
    let not_a_turn = metadata["request_kind"]
        .as_str()
        .is_some_and(|k| k != "turn");
    helper
        || not_a_turn
        || body["text"]["format"]["type"] == "json_schema"
        || req.path() != "/v1/responses"
}

/// Codex's tool for asking the person (Plan mode, or the
/// `default_mode_request_user_input` feature).
const QUESTION_TOOL: &str = "request_user_input";

/// Whether the request offers the tool `name`.
fn offers(body: &Value, name: &str) -> bool {
    let tools = body["tools"].as_array().map_or(&[][..], Vec::as_slice);
    tools.iter().any(|t| t["name"] == name)
}

/// A `request_user_input` call asking `question`, with two choices.
fn question_call(id: &str, question: &str) -> Value {
    let arguments = json!({"questions": [{"id": "choice", "header": "Question",
        "question": question, "options": [
            {"label": "Yes (Recommended)", "description": "Go on with the step."},
            {"label": "No", "description": "Leave the step."}]}]});
    json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
           "name": QUESTION_TOOL, "arguments": arguments.to_string()})
}

/// The shell tool the request offers.
enum ShellTool {
    /// `exec_command {"cmd": …}` (Codex's unified exec, the default now).
    ExecCommand,
    /// `shell {"command": [argv]}` (older Codex).
    Shell,
}

impl ShellTool {
    fn offered(body: &Value) -> ShellTool {
        let names: Vec<&str> = body["tools"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        if !names.contains(&"exec_command") && names.contains(&"shell") {
            ShellTool::Shell
        } else {
            ShellTool::ExecCommand
        }
    }

    fn call(&self, id: &str, cmd: &str) -> Value {
        let (name, arguments) = match self {
            ShellTool::ExecCommand => ("exec_command", json!({ "cmd": cmd })),
            ShellTool::Shell => ("shell", json!({ "command": ["bash", "-c", cmd] })),
        };
        json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
               "name": name, "arguments": arguments.to_string()})
    }
}
