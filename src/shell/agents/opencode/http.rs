//! HTTP to an opencode server, on this machine or another: JSON calls and
//! the server-sent event stream of `GET /global/event`, through ureq (a
//! well-kept blocking client) with rustls for `https://`. The server is
//! verified against the system's roots or the configured CA file; HTTP
//! Basic carries the password when one is configured. One connection per
//! call, as opencode's server closes idle ones at will and a stale pooled
//! connection would turn a healthy server into a failed delivery.

use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ureq::tls::{Certificate, RootCerts, TlsConfig};
use ureq::Agent;

use crate::config::secret::{Secret, SecretSource};
use crate::shell::agents::remote::address;
use crate::shell::agents::remote::link::{LinkDown, Program, Why};
use crate::shell::agents::remote::tls::{self, Roots};

/// How long a connection may take to open: a server on this machine
/// answers in microseconds, so anything slower means it is not there.
const CONNECT_LOCAL: Duration = Duration::from_secs(1);
/// The same across a network, TLS handshake included.
const CONNECT_REMOTE: Duration = Duration::from_secs(5);
/// How long one answer may take. `prompt_async` answers in 14–32 ms and
/// every other call reveille makes is a read of the server's database.
const ANSWER: Duration = Duration::from_secs(10);
/// How long the head of the event stream's answer may take. opencode
/// 1.18.33 never answers a request it accepted as its listener opened,
/// while it was still starting (seen: 70 s and counting; the next request,
/// 250 ms later, was answered in 190 ms), and the follower, which tries
/// every 250 ms, meets exactly that moment: its request is given up soon
/// and made again, rather than leaving the server's return unseen for the
/// whole silence timeout. (Not for calls: a transcript read on a loaded
/// machine, during a turn, took longer than 3 s to begin.)
const HEAD: Duration = Duration::from_secs(3);
/// How long the event stream may be silent: the server sends a heartbeat
/// every 10 s, so three missed ones mean the connection is dead.
const SILENCE: Duration = Duration::from_secs(30);

/// Which server this is, in messages.
pub const SERVER: Program = Program::Opencode;

/// Why a call did not get an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Nothing reached the server: no connection, a failed handshake, or
    /// credentials it refused (a 401 is an answer to no request).
    Unreachable(LinkDown),
    /// The connection broke, timed out, or the answer made no sense.
    Broken(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unreachable(link) => link.fmt(f),
            Failure::Broken(why) => f.write_str(why),
        }
    }
}

/// An answer: its status and its whole body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON.
    pub fn json(&self) -> Result<serde_json::Value, Failure> {
        serde_json::from_slice(&self.body).map_err(|e| {
            Failure::Broken(format!(
                "the answer is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body[..self.body.len().min(200)])
            ))
        })
    }

    /// The body as text, shortened, for an error message.
    pub fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text = text.trim();
        match text.char_indices().nth(300) {
            Some((at, _)) => format!("{}…", &text[..at]),
            None => text.to_string(),
        }
    }
}

/// How reveille is let in: HTTP Basic with the server's user name and
/// password (`OPENCODE_SERVER_USERNAME`, `OPENCODE_SERVER_PASSWORD` on the
/// server's side), and the CA its certificate must chain to.
#[derive(Debug, Clone, Default)]
pub struct Access {
    pub username: String,
    pub password: Option<Secret>,
    /// Where the password came from: read again when the server refuses
    /// it, so a corrected file is used without a restart.
    pub password_file: Option<SecretSource>,
    pub ca_file: Option<PathBuf>,
}

/// An opencode server, by its `http(s)://host:port` URL.
#[derive(Debug, Clone)]
pub struct Server {
    url: String,
    /// The URL requests are made under: scheme, authority and any prefix,
    /// without a trailing `/`.
    base: String,
    host: String,
    port: u16,
    roots: Roots,
    /// `Authorization: Basic …`, when there is a password; shared by the
    /// clones (the worker's and the follower's), replaced when its file
    /// changed after a refusal.
    auth: Arc<Mutex<Option<Secret>>>,
    username: String,
    password_file: Option<SecretSource>,
    calls: Agent,
    events: Agent,
}

impl Server {
    /// Parse `http(s)://host[:port][/prefix]`.
    pub fn new(url: &str, access: &Access) -> Result<Server, String> {
        let bad = |why: &str| format!("opencode.url {url:?} {why}");
        let (rest, https) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
            (Some(rest), _) => (rest, false),
            (_, Some(rest)) => (rest, true),
            _ => return Err(bad("is not an http:// or https:// URL")),
        };
        let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
        let host = address::host(url).ok_or_else(|| bad("names no host"))?;
        let after_host = match authority.strip_prefix('[') {
            Some(v6) => v6.split_once(']').map_or("", |(_, rest)| rest),
            None => authority.find(':').map_or("", |at| &authority[at..]),
        };
        let port = match after_host.strip_prefix(':') {
            None | Some("") if https => 443,
            None | Some("") => 80,
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| bad("has a port that is not a number"))?,
        };
        let roots = Roots::of(access.ca_file.as_deref());
        let tls = if https {
            let certs: Vec<Certificate<'static>> = roots
                .certificates()?
                .iter()
                .map(|c| Certificate::from_der(c.as_ref()).to_owned())
                .collect();
            TlsConfig::builder()
                .root_certs(RootCerts::new_with_certs(&certs))
                .build()
        } else {
            TlsConfig::default()
        };
        let connect = if address::is_loopback(host) {
            CONNECT_LOCAL
        } else {
            CONNECT_REMOTE
        };
        let auth = access
            .password
            .as_ref()
            .map(|password| basic(&access.username, password));
        let base = url.trim_end_matches('/').to_string();
        Ok(Server {
            url: base.clone(),
            base,
            host: host.to_string(),
            port,
            roots,
            auth: Arc::new(Mutex::new(auth)),
            username: access.username.clone(),
            password_file: access.password_file.clone(),
            calls: agent(&tls, connect, ANSWER, ANSWER),
            events: agent(&tls, connect, HEAD, SILENCE),
        })
    }

    /// Parse a URL with no credentials (tests).
    pub fn parse(url: &str) -> Result<Server, String> {
        Server::new(url, &Access::default())
    }

    /// The URL as configured, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the server runs on this machine (its processes can be seen).
    pub fn is_local(&self) -> bool {
        address::is_loopback(&self.host)
    }

    /// One call; `target` is the path with its query.
    pub fn call(
        &self,
        method: &str,
        target: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, Failure> {
        let what = format!("{method} {target}");
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{target}", self.base));
        let request = self.authorized(request);
        let sent = match (body, method) {
            (None, "GET" | "DELETE" | "HEAD") => request.body(()).map(|r| self.calls.run(r)),
            _ => request
                .header("Content-Type", "application/json")
                .body(body.map(|b| b.to_string()).unwrap_or_default())
                .map(|r| self.calls.run(r)),
        };
        let answer = sent
            .map_err(|e| Failure::Broken(format!("{what}: {e}")))?
            .map_err(|e| self.failure(&what, e, ANSWER))?;
        let status = answer.status().as_u16();
        self.refused(status)?;
        let mut bytes = Vec::new();
        answer
            .into_body()
            .into_reader()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::Broken(format!("{what}: {}", self.io_words(&e))))?;
        Ok(Answer {
            status,
            body: bytes,
        })
    }

    /// Open `GET /global/event`: every event of every directory the
    /// server serves.
    pub fn events(&self) -> Result<EventStream, Failure> {
        let what = "GET /global/event";
        let request = ureq::http::Request::builder()
            .method("GET")
            .uri(format!("{}/global/event", self.base))
            .header("Accept", "text/event-stream");
        let request = self
            .authorized(request)
            .body(())
            .map_err(|e| Failure::Broken(format!("{what}: {e}")))?;
        let answer = self
            .events
            .run(request)
            .map_err(|e| self.failure(what, e, HEAD))?;
        let status = answer.status().as_u16();
        self.refused(status)?;
        if status != 200 {
            return Err(Failure::Broken(format!("{what} answered {status}")));
        }
        Ok(EventStream {
            lines: BufReader::new(answer.into_body().into_reader()),
        })
    }

    fn authorized(&self, request: ureq::http::request::Builder) -> ureq::http::request::Builder {
        match &*self.auth.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(auth) => request.header("Authorization", auth.expose()),
            None => request,
        }
    }

    /// A 401: the server refused the credentials (or wants some). The
    /// password file is read again: a corrected one is sent next time.
    fn refused(&self, status: u16) -> Result<(), Failure> {
        if status != 401 {
            return Ok(());
        }
        let mut auth = self.auth.lock().unwrap_or_else(|e| e.into_inner());
        let sent = auth.is_some();
        if let Some(Ok(password)) = self.password_file.as_ref().map(SecretSource::read) {
            *auth = Some(basic(&self.username, &password));
        }
        Err(Failure::Unreachable(self.link(Why::Credentials { sent })))
    }

    fn link(&self, why: Why) -> LinkDown {
        LinkDown {
            server: SERVER,
            address: self.url.clone(),
            why,
        }
    }

    /// What a failed exchange means: nothing reached the server
    /// (unreachable) or the exchange broke after the request went out.
    fn failure(&self, what: &str, e: ureq::Error, head: Duration) -> Failure {
        use ureq::Timeout;
        let unreachable = |why| Failure::Unreachable(self.link(why));
        match e {
            ureq::Error::Timeout(Timeout::Connect | Timeout::Resolve) => {
                unreachable(Why::TimedOut("the connection was not made in time".into()))
            }
            ureq::Error::Timeout(Timeout::RecvResponse) => Failure::Broken(format!(
                "{what}: no answer within {head:?} (an opencode still starting never answers what it took as it opened)"
            )),
            ureq::Error::HostNotFound => unreachable(Why::NoConnection("no such host".into())),
            ureq::Error::ConnectionFailed => {
                unreachable(Why::NoConnection("the connection failed".into()))
            }
            ureq::Error::Io(e) => match tls::in_io(&e) {
                Some(t) => unreachable(Why::Tls(tls::describe(t, &self.roots))),
                None if no_connection(&e) => unreachable(Why::NoConnection(e.to_string())),
                None => Failure::Broken(format!("{what}: {e}")),
            },
            ureq::Error::Rustls(t) => unreachable(Why::Tls(tls::describe(&t, &self.roots))),
            e => Failure::Broken(format!("{what}: {e}")),
        }
    }

    fn io_words(&self, e: &io::Error) -> String {
        match tls::in_io(e) {
            Some(t) => tls::describe(t, &self.roots),
            None => e.to_string(),
        }
    }
}

/// An I/O error that can only come from a connection never made.
fn no_connection(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionRefused | HostUnreachable | NetworkUnreachable | AddrNotAvailable | NotFound
    )
}

/// A client with the given limits: `head` for the answer's head, `read`
/// between two reads of it.
fn agent(tls: &TlsConfig, connect: Duration, head: Duration, read: Duration) -> Agent {
    Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .max_idle_connections(0)
        .user_agent(format!("reveille/{}", env!("CARGO_PKG_VERSION")))
        .tls_config(tls.clone())
        .timeout_connect(Some(connect))
        .timeout_recv_response(Some(head))
        .timeout_per_read(Some(read))
        .timeout_per_write(Some(ANSWER))
        .build()
        .new_agent()
}

/// `GET /global/event`, one event at a time.
pub struct EventStream {
    lines: BufReader<ureq::BodyReader<'static>>,
}

impl EventStream {
    /// The data of the next event (its `data:` lines joined); `None` when
    /// the server ended the stream. A read fails after [`SILENCE`].
    pub fn next_event(&mut self) -> io::Result<Option<String>> {
        let mut data = String::new();
        loop {
            let mut line = String::new();
            if self.lines.read_line(&mut line)? == 0 {
                return Ok(None);
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !data.is_empty() {
                    return Ok(Some(data));
                }
                continue;
            }
            if let Some(d) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(d.strip_prefix(' ').unwrap_or(d));
            }
        }
    }
}

/// `Basic base64(user:password)`.
fn basic(username: &str, password: &Secret) -> Secret {
    let pair = format!("{username}:{}", password.expose());
    Secret::new(format!("Basic {}", base64(pair.as_bytes())))
}

/// Standard base64 with padding, for the one `Authorization` header.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
