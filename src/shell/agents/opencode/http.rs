//! The little HTTP/1.1 reveille speaks to an opencode server on this
//! machine: one request per connection (`Connection: close`), JSON bodies,
//! answers framed by `Content-Length`, chunked, or by the end of the
//! stream; and the server-sent event stream of `GET /global/event`. No TLS
//! and no redirects: the server is a local process (`opencode serve`,
//! `opencode --port`), and a hand-written client of a few screens is
//! smaller than any crate that would bring an async runtime or TLS along.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long a connection may take to open: a local server answers in
/// microseconds, so anything slower means it is not there.
const CONNECT: Duration = Duration::from_secs(1);
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

/// Why a call did not get an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// No connection could be opened: the server is not running there.
    Unreachable(String),
    /// The connection broke, timed out, or the answer made no sense.
    Broken(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unreachable(why) | Failure::Broken(why) => f.write_str(why),
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

/// An opencode server, by its `http://host:port` URL.
#[derive(Debug, Clone)]
pub struct Server {
    url: String,
    host: String,
    port: u16,
    /// Anything after the authority, without a trailing `/`.
    prefix: String,
    /// `Authorization: Basic …` when the server asks for a password
    /// (`OPENCODE_SERVER_PASSWORD`, the variable opencode itself reads).
    auth: Option<String>,
}

impl Server {
    /// Parse `http://host[:port][/prefix]`; the password, if any, comes
    /// from `OPENCODE_SERVER_USERNAME` / `OPENCODE_SERVER_PASSWORD`.
    pub fn parse(url: &str) -> Result<Server, String> {
        let bad = |why: &str| format!("opencode.url {url:?} {why}");
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("is not an http:// URL"))?;
        let (authority, prefix) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => v6.split_once(']').unwrap_or((v6, "")),
            None => authority.rsplit_once(':').unwrap_or((authority, "")),
        };
        let port = match port.trim_start_matches(':') {
            "" => 80,
            p => p
                .parse::<u16>()
                .map_err(|_| bad("has a port that is not a number"))?,
        };
        if host.is_empty() {
            return Err(bad("names no host"));
        }
        let auth = std::env::var("OPENCODE_SERVER_PASSWORD")
            .ok()
            .filter(|p| !p.is_empty())
            .map(|password| {
                let user =
                    std::env::var("OPENCODE_SERVER_USERNAME").unwrap_or_else(|_| "opencode".into());
                format!("Basic {}", base64(format!("{user}:{password}").as_bytes()))
            });
        Ok(Server {
            url: url.trim_end_matches('/').to_string(),
            host: host.to_string(),
            port,
            prefix: prefix.trim_end_matches('/').to_string(),
            auth,
        })
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
        self.host == "localhost" || self.host == "::1" || self.host.starts_with("127.")
    }

    /// One call; `target` is the path with its query.
    pub fn call(
        &self,
        method: &str,
        target: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, Failure> {
        let mut conn = self.connect()?;
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut head = self.head(method, target);
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        // One write: the request goes out in one segment.
        head.push_str(&body);
        let broken = |e: io::Error| Failure::Broken(format!("{method} {target}: {e}"));
        conn.write_all(head.as_bytes()).map_err(broken)?;
        let (status, mut body) = read_head(conn, ANSWER, ANSWER).map_err(broken)?;
        let mut bytes = Vec::new();
        body.read_to_end(&mut bytes).map_err(broken)?;
        Ok(Answer {
            status,
            body: bytes,
        })
    }

    /// Open `GET /global/event`: every event of every directory the
    /// server serves.
    pub fn events(&self) -> Result<EventStream, Failure> {
        let mut conn = self.connect()?;
        let stop = conn
            .try_clone()
            .map_err(|e| Failure::Broken(format!("event stream: {e}")))?;
        let mut head = self.head("GET", "/global/event");
        head.push_str("Accept: text/event-stream\r\n\r\n");
        let broken = |e: io::Error| Failure::Broken(format!("GET /global/event: {e}"));
        conn.write_all(head.as_bytes()).map_err(broken)?;
        let (status, body) = read_head(conn, HEAD, SILENCE).map_err(broken)?;
        if status != 200 {
            return Err(Failure::Broken(format!(
                "GET /global/event answered {status}"
            )));
        }
        Ok(EventStream {
            lines: BufReader::new(body),
            stop,
        })
    }

    fn connect(&self) -> Result<TcpStream, Failure> {
        let unreachable = |why: String| {
            Failure::Unreachable(format!(
                "opencode server not reachable at {} ({why})",
                self.url
            ))
        };
        let addrs = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| unreachable(e.to_string()))?;
        let mut last = String::from("no address");
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, CONNECT) {
                Ok(conn) => {
                    let _ = conn.set_nodelay(true);
                    let _ = conn.set_read_timeout(Some(ANSWER));
                    let _ = conn.set_write_timeout(Some(ANSWER));
                    return Ok(conn);
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(unreachable(last))
    }

    fn head(&self, method: &str, target: &str) -> String {
        let mut head = format!(
            "{method} {}{target} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\n",
            self.prefix, self.host, self.port
        );
        if let Some(auth) = &self.auth {
            head.push_str(&format!("Authorization: {auth}\r\n"));
        }
        head
    }
}

/// A body as it arrives: by length, chunked, or to the end of the stream.
type Body = Box<dyn Read + Send>;

/// Read the status line and headers (within `head`); return the status
/// and the body, which may take `then` between two reads.
fn read_head(conn: TcpStream, head: Duration, then: Duration) -> io::Result<(u16, Body)> {
    conn.set_read_timeout(Some(head))?;
    let rest = conn.try_clone()?;
    let mut r = BufReader::new(conn);
    let head = read_status_and_headers(&mut r).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer within {head:?} (an opencode still starting never answers what it took as it opened)"),
        ),
        _ => e,
    });
    rest.set_read_timeout(Some(then))?;
    let (status, chunked, length) = head?;
    let body: Body = match (chunked, length) {
        (true, _) => Box::new(Chunked {
            inner: r,
            left: 0,
            done: false,
        }),
        (false, Some(n)) => Box::new(r.take(n)),
        (false, None) => Box::new(r),
    };
    Ok((status, body))
}

/// The status, whether the body is chunked, and its length if given.
fn read_status_and_headers(r: &mut BufReader<TcpStream>) -> io::Result<(u16, bool, Option<u64>)> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection without answering",
        ));
    }
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("{line:?}")))?;
    let (mut chunked, mut length) = (false, None);
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let Some((k, v)) = h.split_once(':') else {
            continue;
        };
        let v = v.trim();
        if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if k.eq_ignore_ascii_case("content-length") {
            length = v.parse::<u64>().ok();
        }
    }
    Ok((status, chunked, length))
}

/// A chunked body, de-chunked.
struct Chunked {
    inner: BufReader<TcpStream>,
    left: usize,
    done: bool,
}

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut size = String::new();
            self.inner.read_line(&mut size)?;
            if size.trim().is_empty() {
                // The CRLF that ends the previous chunk.
                size.clear();
                self.inner.read_line(&mut size)?;
            }
            let hex = size.trim().split(';').next().unwrap_or("");
            self.left = usize::from_str_radix(hex, 16).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, format!("chunk size {size:?}"))
            })?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.left -= n;
        Ok(n)
    }
}

/// `GET /global/event`, one event at a time.
pub struct EventStream {
    lines: BufReader<Body>,
    stop: TcpStream,
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

    /// A handle that ends the stream from another thread.
    pub fn stopper(&self) -> io::Result<Stopper> {
        Ok(Stopper(self.stop.try_clone()?))
    }
}

/// Ends an event stream: its blocked read returns at once.
pub struct Stopper(TcpStream);

impl Stopper {
    pub fn stop(&self) {
        let _ = self.0.shutdown(Shutdown::Both);
    }
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
mod tests {
    use super::*;

    #[test]
    fn an_event_stream_that_never_begins_is_given_up_after_the_head_timeout() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts, reads, and holds the connection without a word.
        let held = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf);
            conn
        });
        let s = Server::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let t0 = std::time::Instant::now();
        let Err(err) = s.events() else {
            panic!("an answer from a server that said nothing")
        };
        assert!(
            t0.elapsed() < HEAD + Duration::from_secs(2),
            "{:?}",
            t0.elapsed()
        );
        assert!(err.to_string().contains("no answer within 3s"), "{err}");
        drop(held.join());
    }

    #[test]
    fn urls_are_read_and_bad_ones_named() {
        let s = Server::parse("http://127.0.0.1:4096").unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.prefix.as_str()),
            ("127.0.0.1", 4096, "")
        );
        assert!(s.is_local());
        let s = Server::parse("http://localhost/oc/").unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.prefix.as_str()),
            ("localhost", 80, "/oc")
        );
        let s = Server::parse("http://[::1]:5000").unwrap();
        assert_eq!((s.host.as_str(), s.port), ("::1", 5000));
        assert!(Server::parse("https://x:1")
            .unwrap_err()
            .contains("not an http://"));
        assert!(Server::parse("http://x:port").unwrap_err().contains("port"));
        assert!(!Server::parse("http://example.org:1").unwrap().is_local());
    }

    #[test]
    fn base64_pads_as_the_standard_says() {
        assert_eq!(base64(b"opencode:pw"), "b3BlbmNvZGU6cHc=");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(base64(b"a"), "YQ==");
    }

    #[test]
    fn a_server_not_running_is_unreachable_by_name() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let s = Server::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        match s.call("GET", "/session/status", None) {
            Err(Failure::Unreachable(why)) => assert!(
                why.starts_with(&format!(
                    "opencode server not reachable at http://127.0.0.1:{port}"
                )),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
    }
}
