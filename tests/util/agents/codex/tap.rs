//! A tap between reveille and a Codex app-server on a unix socket: it
//! relays the bytes both ways untouched and reads the WebSocket frames
//! passing through, so a test knows every method reveille called and
//! every request the server sent reveille — what the server saw, not what
//! reveille says it did.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// The messages seen, each way.
#[derive(Default)]
struct Seen {
    /// From the client (reveille) to the server.
    sent: Vec<Value>,
    /// From the server to the client.
    received: Vec<Value>,
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

/// Copy `from` to `to` on a thread of its own, reading the frames.
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
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
            let messages = frames.feed(&buf[..n]);
            let mut seen = seen.lock().unwrap();
            let side = if client {
                &mut seen.sent
            } else {
                &mut seen.received
            };
            side.extend(messages);
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
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
    fn feed(&mut self, bytes: &[u8]) -> Vec<Value> {
        self.buf.extend_from_slice(bytes);
        if !self.upgraded {
            let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                return Vec::new();
            };
            self.buf.drain(..end + 4);
            self.upgraded = true;
        }
        let mut out = Vec::new();
        while let Some((fin, opcode, payload, used)) = frame(&self.buf) {
            self.buf.drain(..used);
            if opcode == 1 || opcode == 0 {
                self.message.extend(payload);
                if fin {
                    let text = std::mem::take(&mut self.message);
                    out.extend(serde_json::from_slice::<Value>(&text).ok());
                }
            }
        }
        out
    }
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
