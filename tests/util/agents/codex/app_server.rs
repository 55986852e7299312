//! A test's own client of a Codex app-server (`codex app-server --listen`,
//! or the TUI's daemon socket): the JSON-RPC Codex speaks — objects without
//! the `"jsonrpc"` member, `initialize` then the `initialized`
//! notification — over a WebSocket on a unix socket or TCP. Blocking, one
//! call at a time; notifications that arrive meanwhile are kept for the
//! test to look at. Independent of the backend under test, so the agent's
//! own fastest path is measured without it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

/// A stream a WebSocket runs over.
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// One connection to an app-server.
pub struct AppServer {
    ws: WebSocket<Box<dyn Stream>>,
    next_id: u64,
    /// Notifications seen so far (method, params, when).
    pub notes: Vec<(String, Value, Instant)>,
}

impl AppServer {
    /// Connect to `unix://PATH` or `ws://HOST:PORT` and initialize.
    pub fn connect(endpoint: &str) -> Result<AppServer, String> {
        AppServer::connect_with(endpoint, None)
    }

    /// The same, sending `token` as `Authorization: Bearer` (an app-server
    /// started with `--ws-auth capability-token`).
    pub fn connect_with(endpoint: &str, token: Option<&str>) -> Result<AppServer, String> {
        let stream: Box<dyn Stream> = if let Some(path) = endpoint.strip_prefix("unix://") {
            let s = UnixStream::connect(Path::new(path)).map_err(|e| format!("{endpoint}: {e}"))?;
            s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
            Box::new(s)
        } else {
            let addr = endpoint.strip_prefix("ws://").unwrap_or(endpoint);
            let s = TcpStream::connect(addr).map_err(|e| format!("{endpoint}: {e}"))?;
            s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
            Box::new(s)
        };
        let url = if endpoint.starts_with("unix://") {
            "ws://localhost/".to_string()
        } else {
            format!("{endpoint}/")
        };
        let mut request = tungstenite::client::IntoClientRequest::into_client_request(url.as_str())
            .map_err(|e| e.to_string())?;
        if let Some(token) = token {
            request
                .headers_mut()
                .insert("Authorization", format!("Bearer {token}").parse().unwrap());
        }
        let (ws, _) = tungstenite::client::client(request, stream)
            .map_err(|e| format!("{endpoint}: websocket handshake: {e}"))?;
        let mut server = AppServer {
            ws,
            next_id: 0,
            notes: Vec::new(),
        };
        server.call(
            "initialize",
            json!({"clientInfo": {"name": "reveille-test", "version": "0"},
                   "capabilities": {"experimentalApi": true}}),
        )?;
        server.notify("initialized")?;
        Ok(server)
    }

    fn notify(&mut self, method: &str) -> Result<(), String> {
        let text = json!({ "method": method }).to_string();
        self.ws.send(Message::text(text)).map_err(|e| e.to_string())
    }

    /// Send a request and wait for its answer: the `result`, or the
    /// `error`'s message.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let text = json!({ "id": id, "method": method, "params": params }).to_string();
        self.ws
            .send(Message::text(text))
            .map_err(|e| e.to_string())?;
        loop {
            let msg = self.next()?;
            if msg["id"] == id && msg.get("method").is_none() {
                return match msg.get("error") {
                    Some(e) => Err(format!(
                        "{method}: {}",
                        e["message"].as_str().unwrap_or("error")
                    )),
                    None => Ok(msg["result"].clone()),
                };
            }
        }
    }

    /// The next message; a notification is also kept in `notes`.
    fn next(&mut self) -> Result<Value, String> {
        loop {
            match self.ws.read().map_err(|e| e.to_string())? {
                Message::Text(t) => {
                    let v: Value = serde_json::from_str(t.as_str()).map_err(|e| e.to_string())?;
                    if let Some(m) = v["method"].as_str() {
                        if v.get("id").is_none() {
                            self.notes
                                .push((m.to_string(), v["params"].clone(), Instant::now()));
                        }
                    }
                    return Ok(v);
                }
                Message::Close(_) => return Err("connection closed".into()),
                _ => continue,
            }
        }
    }

    /// `thread/queue/add`: the agent's own way to give a thread a prompt.
    pub fn queue(&mut self, thread: &str, text: &str, client_id: &str) -> Result<Value, String> {
        self.call(
            "thread/queue/add",
            json!({"threadId": thread, "clientUserMessageId": client_id,
                   "input": [{"type": "text", "text": text, "text_elements": []}]}),
        )
    }

    /// The thread's status type (`idle`, `active`, `notLoaded`, …).
    pub fn status(&mut self, thread: &str) -> Result<String, String> {
        let read = self.call("thread/read", json!({ "threadId": thread }))?;
        Ok(read["thread"]["status"]["type"]
            .as_str()
            .unwrap_or("")
            .to_string())
    }

    /// The user messages of the thread's last `limit` turns, oldest first:
    /// (text, the `clientId` it was sent with).
    pub fn user_messages(
        &mut self,
        thread: &str,
        limit: u32,
    ) -> Result<Vec<(String, String)>, String> {
        let page = self.call(
            "thread/turns/list",
            json!({"threadId": thread, "limit": limit, "itemsView": "summary"}),
        )?;
        let mut out = Vec::new();
        for turn in page["data"].as_array().into_iter().flatten().rev() {
            for item in turn["items"].as_array().into_iter().flatten() {
                if item["type"] == "userMessage" {
                    let text: Vec<&str> = item["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["text"].as_str())
                        .collect();
                    out.push((
                        text.join("\n"),
                        item["clientId"].as_str().unwrap_or("").to_string(),
                    ));
                }
            }
        }
        Ok(out)
    }
}
