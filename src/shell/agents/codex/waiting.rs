//! What a Codex thread waits for a person for: the command to approve, or
//! the question to answer. The status Codex broadcasts says only
//! `waitingOnApproval` or `waitingOnUserInput`; the request naming the
//! command or question goes to the thread's subscribers, which reveille
//! never is, and the thread's reads (`thread/turns/list`,
//! `thread/items/list`) do not show the call until it is over (measured,
//! 0.171.0). The thread's rollout file — its path is in `thread/read`, on
//! the agent's machine — already holds the model's tool call when the
//! request goes out, as its newest `function_call`. reveille reads that,
//! where the file can be read (a local server); elsewhere the wait is told
//! without what it is about.
//! The file's format is Codex's own, not a published one: anything
//! unexpected in it just leaves the command unknown.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::{json, Value};

use super::worker::Worker;
use crate::core::session::WaitOn;

/// How much of the rollout's end is read: the newest tool call is among
/// its last few lines.
const TAIL: u64 = 256 * 1024;

impl Worker {
    /// The command `thread` waits to have approved, or the question it
    /// waits to have answered (`on`), if it can be read.
    pub(super) fn waiting_for(&mut self, thread: &str, on: WaitOn) -> Option<String> {
        let read = self
            .call("thread/read", json!({ "threadId": thread }))
            .ok()?;
        let path = read["thread"]["path"].as_str()?;
        newest_call(&tail(Path::new(path))?, on)
    }
}

/// The last `TAIL` bytes of `path`, from a line's start.
fn tail(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let from = len.saturating_sub(TAIL);
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Some(match (from, text.split_once('\n')) {
        (0, _) | (_, None) => text,
        (_, Some((_, rest))) => rest.to_string(),
    })
}

/// What the newest tool call in rollout lines `text` asks the person:
/// a shell command's command, or `request_user_input`'s first question.
fn newest_call(text: &str, on: WaitOn) -> Option<String> {
    text.lines().rev().find_map(|line| {
        let v: Value = serde_json::from_str(line).ok()?;
        let payload = &v["payload"];
        if v["type"] != "response_item" || payload["type"] != "function_call" {
            return None;
        }
        let args: Value = serde_json::from_str(payload["arguments"].as_str()?).ok()?;
        match (on, payload["name"] == QUESTION_TOOL) {
            (WaitOn::Question, true) => question_of(&args),
            (WaitOn::Approval, false) => command_of(&args),
            _ => None,
        }
    })
}

/// Codex's tool for asking the person (Plan mode, or with the
/// `default_mode_request_user_input` feature).
const QUESTION_TOOL: &str = "request_user_input";

/// `request_user_input {"questions": [{"question": …}, …]}`: the first.
fn question_of(args: &Value) -> Option<String> {
    let q = args["questions"][0]["question"].as_str()?;
    Some(q.to_string())
}

/// A shell tool call's command: `cmd` (a string), or `command` (a string
/// or an argv).
fn command_of(args: &Value) -> Option<String> {
    match args.get("cmd").or_else(|| args.get("command"))? {
        Value::String(s) => Some(s.clone()),
        Value::Array(argv) => {
            let words: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
            (!words.is_empty()).then(|| words.join(" "))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_tool_call_of_a_rollout_names_the_command() {
        let call = |args: &str| {
            json!({"type": "response_item", "payload": {"type": "function_call",
                "name": "exec_command", "arguments": args}})
            .to_string()
        };
        let rollout = [
            call(r#"{"cmd": "ls"}"#),
            json!({"type": "event_msg", "payload": {"type": "item_completed"}}).to_string(),
            call(r#"{"cmd": "sed -i 's/a/b/' plan.md"}"#),
            json!({"type": "token_usage_record", "payload": {}}).to_string(),
        ]
        .join("\n");
        let approval = |t: &str| newest_call(t, WaitOn::Approval);
        assert_eq!(
            approval(&rollout).as_deref(),
            Some("sed -i 's/a/b/' plan.md")
        );
        let argv = call(r#"{"command": ["bash", "-lc", "make"]}"#);
        assert_eq!(approval(&argv).as_deref(), Some("bash -lc make"));
        assert_eq!(approval("not json\n{}"), None);
        let asked = json!({"type": "response_item", "payload": {"type": "function_call",
            "name": "request_user_input",
            "arguments": r#"{"questions": [{"id": "a", "question": "Which parser?"}]}"#}});
        let both = format!("{rollout}\n{asked}");
        assert_eq!(
            newest_call(&both, WaitOn::Question).as_deref(),
            Some("Which parser?")
        );
        assert_eq!(approval(&both).as_deref(), Some("sed -i 's/a/b/' plan.md"));
    }
}
