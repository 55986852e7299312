//! A tap between reveille and a Codex app-server on a unix socket: it
//! relays the bytes both ways untouched and reads the WebSocket frames
//! passing through, so a test knows every method reveille called and
//! every request the server sent reveille — what the server saw, not what
//! reveille says it did.
//!
//! On command it injects a fault on that real wire, one a real app-server
//! cannot be made to show at will: the answer to the next call of a
//! method is lost with the connection (the server did what was asked), or
//! comes late. The request always reaches the server untouched.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// A fault to inject on the answer to a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The answer never reaches the client: the connection is closed
    /// both ways instead, once the server has answered.
    Drop,
    /// The answer (and whatever the server sends after it) reaches the
    /// client this much later.
    Delay(Duration),
    /// The client is answered with this JSON-RPC error instead (the
    /// server did what was asked all the same).
    Error(String),
}

/// The messages seen, each way, and the faults armed.
#[derive(Default)]
struct Seen {
    /// From the client (reveille) to the server.
    sent: Vec<Value>,
    /// From the server to the client.
    received: Vec<Value>,
    /// Per method: the fault for the answer to its next calls, and
    /// whether it stays armed after one.
    armed: Vec<(String, Fault, bool)>,
    /// The ids of calls whose answer meets a fault, with it.
    doomed: Vec<(Value, Fault)>,
    /// The faults injected: the method and the fault.
    injected: Vec<(String, Fault)>,
    /// Calls with a fault made while another such call's answer had not
    /// been passed on yet.
    overlapped: usize,
}

pub struct WsTap {
    /// Where the client connects: `unix://` this.
    pub path: PathBuf,
    seen: Arc<Mutex<Seen>>,
}

impl WsTap {
    /// Listen at `path`, relaying each connection to the server at
    /// `upstream` (a unix socket).
    pub fn start(path: &Path, upstream: &Path) -> WsTap {
        let listener = UnixListener::bind(path).expect("bind the tap's socket");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (upstream, shared) = (upstream.to_path_buf(), seen.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = UnixStream::connect(&upstream) else {
                    continue;
                };
                relay(&client, &server, shared.clone(), true);
                relay(&server, &client, shared.clone(), false);
            }
        });
        WsTap {
            path: path.to_path_buf(),
            seen,
        }
    }

    /// The methods the client called, in order.
    pub fn called(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        let requests = seen.sent.iter().filter(|m| m.get("id").is_some());
        requests
            .filter_map(|m| m["method"].as_str().map(str::to_string))
            .collect()
    }

    /// The answer to the next call of `method` meets `fault` (every call's,
    /// with `always`).
    pub fn arm(&self, method: &str, fault: Fault, always: bool) {
        let mut seen = self.seen.lock().unwrap();
        seen.armed.push((method.to_string(), fault, always));
    }

    /// The faults injected so far: the method whose answer met it.
    pub fn injected(&self) -> Vec<(String, Fault)> {
        self.seen.lock().unwrap().injected.clone()
    }

    /// How many calls meeting a fault the client made while the answer to
    /// an earlier one had not reached it: a client that waits for each
    /// answer makes none.
    pub fn overlapped(&self) -> usize {
        self.seen.lock().unwrap().overlapped
    }

    /// The requests the server sent the client (an approval, a question).
    pub fn asked(&self) -> Vec<Value> {
        let seen = self.seen.lock().unwrap();
        let requests = seen.received.iter();
        requests
            .filter(|m| m.get("id").is_some() && m.get("method").is_some())
            .cloned()
            .collect()
    }
}

/// Copy `from` to `to` on a thread of its own, reading the frames. From
/// the client, a call whose method is armed marks its id doomed before it
/// is passed on; from the server, whole frames are passed on one by one,
/// so that the answer to a doomed call can be held back or kept.
fn relay(from: &UnixStream, to: &UnixStream, seen: Arc<Mutex<Seen>>, client: bool) {
    let (mut from, mut to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
    std::thread::spawn(move || {
        let mut frames = Frames::default();
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let passed = if client {
                let messages = frames.feed(&buf[..n]);
                doom(&seen, &messages);
                seen.lock()
                    .unwrap()
                    .sent
                    .extend(messages.into_iter().map(|(_, m)| m));
                to.write_all(&buf[..n]).is_ok()
            } else {
                frames
                    .feed_raw(&buf[..n])
                    .into_iter()
                    .all(|(raw, message)| pass(&mut from, &mut to, &seen, raw, message))
            };
            if !passed {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
}

/// The client's calls of an armed method: their answers are doomed.
fn doom(seen: &Mutex<Seen>, messages: &[(Vec<u8>, Value)]) {
    let mut seen = seen.lock().unwrap();
    for (_, m) in messages {
        let (Some(id), Some(method)) = (m.get("id"), m["method"].as_str()) else {
            continue;
        };
        let Some(i) = seen.armed.iter().position(|(a, _, _)| a == method) else {
            continue;
        };
        let (_, fault, always) = seen.armed[i].clone();
        if !always {
            seen.armed.remove(i);
        }
        if !seen.doomed.is_empty() {
            seen.overlapped += 1;
        }
        seen.doomed.push((id.clone(), fault.clone()));
        seen.injected.push((method.to_string(), fault));
    }
}

/// Pass one frame from the server on (`raw`, its message if it is a
/// whole text message), unless it answers a doomed call; whether the
/// relay goes on.
fn pass(
    from: &mut UnixStream,
    to: &mut UnixStream,
    seen: &Mutex<Seen>,
    raw: Vec<u8>,
    message: Option<Value>,
) -> bool {
    let fault = {
        let mut seen = seen.lock().unwrap();
        let fault = message.as_ref().and_then(|m| {
            let answer = m.get("method").is_none();
            let i = seen
                .doomed
                .iter()
                .position(|(id, _)| answer && m.get("id") == Some(id))?;
            Some(seen.doomed.remove(i).1)
        });
        seen.received.extend(message.clone());
        fault
    };
    match fault {
        Some(Fault::Drop) => {
            let _ = from.shutdown(std::net::Shutdown::Both);
            false
        }
        Some(Fault::Delay(by)) => {
            // The fault itself: a server that answers late.
            std::thread::sleep(by);
            to.write_all(&raw).is_ok()
        }
        Some(Fault::Error(text)) => {
            let id = message.as_ref().map_or(Value::Null, |m| m["id"].clone());
            let error = serde_json::json!({
                "id": id,
                "error": { "code": -32603, "message": text },
            });
            to.write_all(&text_frame(&error.to_string())).is_ok()
        }
        None => to.write_all(&raw).is_ok(),
    }
}

/// A byte stream's WebSocket text messages: past the HTTP handshake,
/// frames (masked from a client), continuation frames joined.
#[derive(Default)]
struct Frames {
    buf: Vec<u8>,
    upgraded: bool,
    message: Vec<u8>,
}

impl Frames {
    /// The whole messages in what came so far (each with the bytes of its
    /// last frame).
    fn feed(&mut self, bytes: &[u8]) -> Vec<(Vec<u8>, Value)> {
        let frames = self.feed_raw(bytes).into_iter();
        frames.filter_map(|(raw, m)| Some((raw, m?))).collect()
    }

    /// Every whole piece of what came so far, in order, as its bytes: the
    /// HTTP handshake, then each frame — with its message when it ends a
    /// text message.
    fn feed_raw(&mut self, bytes: &[u8]) -> Vec<(Vec<u8>, Option<Value>)> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        if !self.upgraded {
            let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                return out;
            };
            out.push((self.buf.drain(..end + 4).collect(), None));
            self.upgraded = true;
        }
        while let Some((fin, opcode, payload, used)) = frame(&self.buf) {
            let raw: Vec<u8> = self.buf.drain(..used).collect();
            let mut message = None;
            if opcode == 1 || opcode == 0 {
                self.message.extend(payload);
                if fin {
                    let text = std::mem::take(&mut self.message);
                    message = serde_json::from_slice::<Value>(&text).ok();
                }
            }
            out.push((raw, message));
        }
        out
    }
}

/// A server's (unmasked) WebSocket text frame holding `text`.
fn text_frame(text: &str) -> Vec<u8> {
    let payload = text.as_bytes();
    let mut out = vec![0x81];
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= u16::MAX as usize => {
            out.push(126);
            out.extend((n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend((n as u64).to_be_bytes());
        }
    }
    out.extend(payload);
    out
}

/// The first whole frame of `buf`: (fin, opcode, payload unmasked, bytes
/// it took).
fn frame(buf: &[u8]) -> Option<(bool, u8, Vec<u8>, usize)> {
    let (b0, b1) = (*buf.first()?, *buf.get(1)?);
    let mut at = 2;
    let mut len = (b1 & 0x7f) as usize;
    if len == 126 {
        len = u16::from_be_bytes(buf.get(2..4)?.try_into().ok()?) as usize;
        at = 4;
    } else if len == 127 {
        len = u64::from_be_bytes(buf.get(2..10)?.try_into().ok()?) as usize;
        at = 10;
    }
    let mask = if b1 & 0x80 != 0 {
        let key: [u8; 4] = buf.get(at..at + 4)?.try_into().ok()?;
        at += 4;
        Some(key)
    } else {
        None
    };
    let mut payload = buf.get(at..at + len)?.to_vec();
    if let Some(key) = mask {
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= key[i % 4];
        }
    }
    Some((b0 & 0x80 != 0, b0 & 0x0f, payload, at + len))
}
