//! The little HTTP/1.1 the agent CLIs speak to their model: one request at
//! a time per connection (keep-alive), bodies by `Content-Length` or
//! chunked, and answers that are either one JSON body or a server-sent
//! event stream ended by closing the connection.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One request as the client sent it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path with its query (`/v1/messages?beta=true`).
    pub target: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The path without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Read the next request of a connection; `None` at a clean end of the
/// connection.
pub fn read_request(r: &mut BufReader<TcpStream>) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 {
            return Ok(None);
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut req = Request {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    if req
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        req.body = read_chunked(r)?;
    } else if let Some(n) = req.header("content-length").and_then(|v| v.parse().ok()) {
        let mut body = vec![0; n];
        r.read_exact(&mut body)?;
        req.body = body;
    }
    Ok(Some(req))
}

fn read_chunked(r: &mut BufReader<TcpStream>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        r.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                let mut t = String::new();
                if r.read_line(&mut t)? == 0 || t.trim_end().is_empty() {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        r.read_exact(&mut crlf)?;
    }
}

/// Where an answer is written.
pub struct Response<'a> {
    out: &'a mut TcpStream,
    /// Set once an event stream began: the connection closes after it.
    streaming: bool,
}

impl<'a> Response<'a> {
    pub fn new(out: &'a mut TcpStream) -> Response<'a> {
        Response {
            out,
            streaming: false,
        }
    }

    /// One JSON answer (the connection stays open for the next request).
    pub fn json(&mut self, status: u16, value: &serde_json::Value) -> io::Result<()> {
        let body = serde_json::to_vec(value).unwrap_or_default();
        write!(
            self.out,
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            reason(status),
            body.len()
        )?;
        self.out.write_all(&body)?;
        self.out.flush()
    }

    /// Begin a server-sent event stream; it ends when the connection is
    /// closed (`Response::finish`, or dropping the connection).
    pub fn start_stream(&mut self) -> io::Result<()> {
        self.streaming = true;
        self.out.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
        )?;
        self.out.flush()
    }

    /// One event: `event: <name>` (when given) and `data: <json>`.
    pub fn event(&mut self, name: Option<&str>, data: &serde_json::Value) -> io::Result<()> {
        let mut text = String::new();
        if let Some(name) = name {
            text.push_str(&format!("event: {name}\n"));
        }
        text.push_str(&format!("data: {data}\n\n"));
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }

    /// A raw `data:` line (OpenAI's `data: [DONE]`).
    pub fn raw_data(&mut self, data: &str) -> io::Result<()> {
        self.out.write_all(format!("data: {data}\n\n").as_bytes())?;
        self.out.flush()
    }

    /// Wait between two parts of an answer, as a model streams.
    pub fn pause(&mut self, d: Duration) {
        std::thread::sleep(d);
    }

    pub fn is_streaming(&self) -> bool {
        self.streaming
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Status",
    }
}
