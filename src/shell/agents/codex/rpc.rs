//! One connection to a Codex app-server: JSON-RPC as Codex speaks it —
//! objects without the `"jsonrpc"` member; `initialize {clientInfo,
//! capabilities: {experimentalApi: true}}` answered, then the
//! `initialized` notification — over a WebSocket.
//!
//! The socket is non-blocking and waited on with `poll(2)` together with
//! the worker's wake-up pipe, so one thread both answers commands at once
//! and reads what the server pushes, with no timer. A call waits for its
//! own answer; notifications read meanwhile are kept, in order, for the
//! worker to handle after it.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::HandshakeError;
use tungstenite::http::HeaderValue;
use tungstenite::{Message, WebSocket};

use super::access::Access;
use super::endpoint::{Endpoint, Socket};
use crate::shell::agents::remote::link::{LinkDown, Program, Why};
use crate::shell::agents::remote::tls;

/// Which server this is, in messages.
pub const SERVER: Program = Program::Codex;

/// How long one call may wait for its answer before the server counts as
/// hung (a resume of a long thread reads its rollout; nothing here is
/// slower than that).
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// Why a call got no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The server answered with an error: its message.
    Refused(String),
    /// The connection broke or the server did not answer: why.
    Lost(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Refused(m) | CallError::Lost(m) => f.write_str(m),
        }
    }
}

/// An initialized connection.
pub struct Connection {
    ws: WebSocket<Socket>,
    fd: RawFd,
    next_id: u64,
    /// Notifications read while a call waited, oldest first.
    backlog: VecDeque<Value>,
}

impl Connection {
    /// Connect to `endpoint`, shake hands (with the token, over TLS for
    /// `wss://`) and initialize; the error says why in words.
    pub fn open(endpoint: &Endpoint, access: &Access) -> Result<Connection, LinkDown> {
        let down = |why| LinkDown {
            server: SERVER,
            address: endpoint.to_string(),
            why,
        };
        let socket = endpoint
            .connect(access.tls.as_ref())
            .map_err(|e| down(connect_failure(&e)))?;
        socket
            .set_timeouts(Some(CALL_TIMEOUT))
            .map_err(|e| down(Why::Cut(e.to_string())))?;
        let mut request = endpoint
            .url()
            .into_client_request()
            .map_err(|e| down(Why::NoConnection(format!("bad address: {e}"))))?;
        if let Some(token) = &access.token {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
                .map_err(|_| down(Why::Cut("the token is not a valid header value".into())))?;
            value.set_sensitive(true);
            request.headers_mut().insert("Authorization", value);
        }
        let (ws, _) = tungstenite::client::client(request, socket)
            .map_err(|e| down(handshake_failure(e, access)))?;
        ws.get_ref()
            .set_nonblocking(true)
            .map_err(|e| down(Why::Cut(e.to_string())))?;
        let fd = ws.get_ref().as_raw_fd();
        let mut conn = Connection {
            ws,
            fd,
            next_id: 0,
            backlog: VecDeque::new(),
        };
        let version = env!("CARGO_PKG_VERSION");
        conn.call(
            "initialize",
            json!({"clientInfo": {"name": "reveille", "title": "reveille", "version": version},
                   "capabilities": {"experimentalApi": true}}),
        )
        .map_err(|e| down(Why::Cut(format!("initialize: {e}"))))?;
        conn.send(json!({ "method": "initialized" }))
            .map_err(|e| down(Why::Cut(format!("initialized: {e}"))))?;
        Ok(conn)
    }

    /// The socket, for the worker's `poll`.
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// Call `method` and wait for its answer.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, CallError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({ "id": id, "method": method, "params": params }))
            .map_err(|e| CallError::Lost(format!("{method}: {e}")))?;
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let msg = match self.read_one() {
                Ok(Some(msg)) => msg,
                Ok(None) => {
                    if !wait(self.fd, libc::POLLIN, deadline) {
                        return Err(CallError::Lost(format!(
                            "{method}: no answer in {CALL_TIMEOUT:?}"
                        )));
                    }
                    continue;
                }
                Err(e) => return Err(CallError::Lost(format!("{method}: {e}"))),
            };
            if msg.get("method").is_some() {
                // A notification, or a request of the server's to its
                // clients (approvals): the worker sees them after this.
                self.backlog.push_back(msg);
            } else if msg["id"] == id {
                return match msg.get("error") {
                    Some(e) => Err(CallError::Refused(
                        e["message"].as_str().unwrap_or("error").to_string(),
                    )),
                    None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                };
            }
        }
    }

    /// The next message the server pushed, without blocking: `Ok(None)`
    /// when there is none now.
    pub fn next_message(&mut self) -> io::Result<Option<Value>> {
        if let Some(msg) = self.backlog.pop_front() {
            return Ok(Some(msg));
        }
        self.read_one()
    }

    /// One text message off the socket, if one is complete.
    fn read_one(&mut self) -> io::Result<Option<Value>> {
        loop {
            match self.ws.read() {
                Ok(Message::Text(text)) => match serde_json::from_str(text.as_str()) {
                    Ok(v) => return Ok(Some(v)),
                    Err(_) => continue,
                },
                Ok(Message::Close(_)) => {
                    return Err(io::Error::new(io::ErrorKind::ConnectionAborted, "closed"))
                }
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(None)
                }
                Err(e) => return Err(io::Error::other(e.to_string())),
            }
        }
    }

    fn send(&mut self, msg: Value) -> io::Result<()> {
        let deadline = Instant::now() + CALL_TIMEOUT;
        let mut result = self.ws.send(Message::text(msg.to_string()));
        loop {
            match result {
                Ok(()) => return Ok(()),
                Err(tungstenite::Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !wait(self.fd, libc::POLLOUT, deadline) {
                        return Err(io::Error::new(io::ErrorKind::TimedOut, "send timed out"));
                    }
                    result = self.ws.flush();
                }
                Err(e) => return Err(io::Error::other(e.to_string())),
            }
        }
    }
}

/// Why no connection was made.
fn connect_failure(e: &io::Error) -> Why {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            Why::TimedOut("the connection was not made in time".into())
        }
        _ => Why::NoConnection(e.to_string()),
    }
}

/// Why the WebSocket handshake (and the TLS one under it) failed.
fn handshake_failure(
    e: HandshakeError<tungstenite::ClientHandshake<Socket>>,
    access: &Access,
) -> Why {
    let e = match e {
        HandshakeError::Failure(e) => e,
        HandshakeError::Interrupted(_) => {
            return Why::TimedOut("the handshake did not finish".into())
        }
    };
    match e {
        tungstenite::Error::Http(answer) if answer.status() == 401 => Why::Credentials {
            sent: access.token.is_some(),
        },
        tungstenite::Error::Io(e) => match tls::in_io(&e) {
            Some(t) => Why::Tls(tls::describe(t, &access.roots)),
            None if matches!(
                e.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ) =>
            {
                Why::TimedOut("no answer to the handshake in time".into())
            }
            None => Why::Cut(format!("websocket handshake failed: {e}")),
        },
        e => Why::Cut(format!("websocket handshake failed: {e}")),
    }
}

/// Wait until `fd` is ready for `events` or `deadline` passes; whether it
/// is ready (an error or hang-up counts as ready: the next read says).
fn wait(fd: RawFd, events: libc::c_short, deadline: Instant) -> bool {
    let ms = deadline
        .saturating_duration_since(Instant::now())
        .as_millis();
    let mut fds = [libc::pollfd {
        fd,
        events,
        revents: 0,
    }];
    let timeout = ms.min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd, its length passed with it.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 1, timeout) };
    n > 0 || (n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted)
}

/// Wait until any of `fds` is readable, or `timeout` (`None`: forever).
pub fn wait_readable(fds: &[RawFd], timeout: Option<Duration>) {
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // Rounded up: a deadline a fraction of a millisecond away is slept
    // to, not spun on.
    let ms = timeout.map_or(-1, |t| {
        t.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int
    });
    // SAFETY: a valid array of pollfds, its length passed with it.
    unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, ms) };
}
