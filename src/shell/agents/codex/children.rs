//! Fan-out children as Codex threads: `thread/start` in the parent's
//! working directory (with its model and provider), unsubscribed at once,
//! named with `thread/name/set` by the child's deterministic
//! id — so a create repeated after a crash finds the thread by its name
//! and creates nothing — and reaped with `thread/archive` (Codex's own end
//! of a thread: unloaded, kept on disk, out of every list).

use serde_json::{json, Map, Value};

use super::protocol::ThreadInfo;
use super::worker::Worker;
use crate::core::effect::Spawn;
use crate::core::input::Input;
use crate::core::session::Kind;

impl Worker {
    /// Create (or find) the child `spawn` asks for; the engine's answer.
    pub(super) fn spawn(&mut self, spawn: &Spawn) -> Input {
        let name = Kind::of(&spawn.child).1.to_string();
        let child = Kind::Codex.qualify(&name);
        let outcome = self.create_child(spawn, &name, &child);
        Input::ChildSpawned {
            child,
            outcome: outcome.map(|()| crate::shell::wall::unix_ms()),
        }
    }

    fn create_child(&mut self, spawn: &Spawn, name: &str, child: &str) -> Result<(), String> {
        if self.conn.is_none() {
            self.connect();
        }
        if self.conn.is_none() {
            return Err(self.down.clone());
        }
        self.attach(&spawn.parent)?;
        let thread = match self.find_by_name(name)?.as_slice() {
            [] => self.start_thread(&spawn.parent, name)?,
            [one] => one.clone(),
            several => {
                return Err(format!(
                    "{} codex threads are named {name:?}: not creating another",
                    several.len()
                ))
            }
        };
        self.sessions.know(child).thread = Some(thread);
        self.attach(child).map(|_| ())
    }

    /// `thread/start` with the parent's settings, then its name.
    fn start_thread(&mut self, parent: &str, name: &str) -> Result<String, String> {
        let settings = self
            .sessions
            .get(parent)
            .map(|s| s.settings.clone())
            .unwrap_or(Value::Null);
        let started = self
            .call("thread/start", child_settings(&settings))
            .map_err(|e| format!("thread/start: {e}"))?;
        let thread = ThreadInfo::of(&started["thread"])
            .ok_or("thread/start answered no thread")?
            .id;
        // `thread/start` subscribed reveille to the child: unsubscribed at
        // once, so a request of the child's goes to whoever opens it in
        // codex, never to reveille. It stays loaded, its queue runs
        // (measured).
        self.call("thread/unsubscribe", json!({ "threadId": thread }))
            .map_err(|e| format!("thread/unsubscribe: {e}"))?;
        self.call(
            "thread/name/set",
            json!({ "threadId": thread, "name": name }),
        )
        .map_err(|e| format!("thread/name/set: {e}"))?;
        tracing::info!(SESSION = %Kind::Codex.qualify(name), PARENT = %parent, "created codex thread {thread}");
        Ok(thread)
    }

    /// End a child reveille made: archive its thread.
    pub(super) fn reap(&mut self, child: &str) {
        let thread = match self.sessions.get(child).and_then(|s| s.thread.clone()) {
            Some(thread) => Ok(thread),
            None => self.resolve(Kind::of(child).1),
        };
        let result = thread.and_then(|t| {
            self.call("thread/archive", json!({ "threadId": t }))
                .map_err(|e| e.to_string())
        });
        match result {
            Ok(_) => {
                self.sessions.forget(child);
            }
            Err(why) => tracing::warn!(SESSION = %child, "cannot archive the codex thread: {why}"),
        }
    }
}

/// The parent's settings as `thread/start` parameters: its cwd, model and
/// provider, and — when a resume told them — its approval policy and
/// sandbox (the policy object's type as the mode `thread/start` takes);
/// otherwise the server's configuration gives those.
fn child_settings(resumed: &Value) -> Value {
    let mut params = Map::new();
    for key in ["cwd", "model", "modelProvider", "approvalPolicy"] {
        if !resumed[key].is_null() {
            params.insert(key.into(), resumed[key].clone());
        }
    }
    let mode = match resumed["sandbox"]["type"].as_str() {
        Some("dangerFullAccess") => Some("danger-full-access"),
        Some("workspaceWrite") => Some("workspace-write"),
        Some("readOnly") => Some("read-only"),
        _ => None,
    };
    if let Some(mode) = mode {
        params.insert("sandbox".into(), mode.into());
    }
    Value::Object(params)
}

#[cfg(test)]
mod tests {
    use super::child_settings;
    use serde_json::json;

    #[test]
    fn a_child_starts_with_its_parents_directory_model_and_policies() {
        let resumed = json!({"cwd": "/w", "model": "m", "modelProvider": "p",
            "approvalPolicy": "never", "sandbox": {"type": "workspaceWrite", "writableRoots": []},
            "thread": {"id": "t"}, "reasoningEffort": null});
        assert_eq!(
            child_settings(&resumed),
            json!({"cwd": "/w", "model": "m", "modelProvider": "p",
                   "approvalPolicy": "never", "sandbox": "workspace-write"})
        );
        assert_eq!(child_settings(&json!(null)), json!({}));
    }
}
