//! A fault-injecting HTTP/1.1 proxy between reveille and a real server
//! (opencode's): the faults a real program cannot be made to show — a
//! read answered 500, a connection reset, an answer that comes seconds
//! late, an event lost — injected on the real wire, with the real program
//! behind. Everything else passes through as it is, each request on a
//! connection of its own (reveille keeps none idle); the server-sent
//! event stream is passed on one event at a time, as it comes (never
//! buffered), less the events a test asked to be lost.
//!
//! Every request is logged with what was done to it and when its answer
//! was passed on, so a test can say what crossed the wire.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::fakemodel::http::{read_request, Request};

/// What is done to a request a rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answered 500 by the proxy: the server never sees it.
    Status500,
    /// The connection is reset (RST) before anything is passed on.
    Reset,
    /// Passed on, and the connection reset instead of the server's answer:
    /// the server took it, its answer is lost.
    ResetAfter,
    /// Passed on, and the server's answer passed back this much later.
    Delay(Duration),
}

/// One request that crossed the proxy.
#[derive(Debug, Clone)]
pub struct Crossed {
    pub method: String,
    pub target: String,
    pub body: Vec<u8>,
    pub fault: Option<Fault>,
    /// When it came.
    pub at: Instant,
    /// When its answer (or its fault) went back to the client.
    pub answered: Option<Instant>,
}

struct Rule {
    method: String,
    /// The path (with its query) contains this.
    path: String,
    fault: Fault,
    /// How many more requests it applies to.
    left: usize,
}

#[derive(Default)]
struct State {
    rules: Vec<Rule>,
    /// Events of `GET /global/event` whose data contains every string of
    /// one of these are lost.
    lost: Vec<Vec<String>>,
    crossed: Vec<Crossed>,
}

/// The proxy, listening on a port of its own on 127.0.0.1.
pub struct FaultProxy {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl FaultProxy {
    /// A proxy to the server at 127.0.0.1:`upstream`.
    pub fn start(upstream: u16) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, stopped) = (state.clone(), stop.clone());
        let upstream = SocketAddr::from(([127, 0, 0, 1], upstream));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let st = st.clone();
                std::thread::spawn(move || {
                    let _ = serve(client, upstream, &st);
                });
            }
        });
        FaultProxy { addr, state, stop }
    }

    /// Its URL, for `[opencode] url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next `times` requests `method` whose path contains `path` meet
    /// `fault`.
    pub fn fail(&self, method: &str, path: &str, fault: Fault, times: usize) {
        self.lock().rules.push(Rule {
            method: method.to_string(),
            path: path.to_string(),
            fault,
            left: times,
        });
    }

    /// From now on, every event of the stream whose data contains each of
    /// `needles` is lost.
    pub fn lose_events(&self, needles: &[&str]) {
        let needles = needles.iter().map(|n| n.to_string()).collect();
        self.lock().lost.push(needles);
    }

    /// Every request so far.
    pub fn crossed(&self) -> Vec<Crossed> {
        self.lock().crossed.clone()
    }

    /// The requests that met `fault` so far.
    pub fn met(&self, fault: Fault) -> usize {
        let crossed = self.lock().crossed.clone();
        crossed.iter().filter(|c| c.fault == Some(fault)).count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

/// One client connection: one request, passed on or not.
fn serve(client: TcpStream, upstream: SocketAddr, state: &Mutex<State>) -> io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let Some(request) = read_request(&mut reader)? else {
        return Ok(());
    };
    let fault = take_fault(state, &request);
    let index = log(state, &request, fault);
    let mut client = client;
    let answered = |state: &Mutex<State>| {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.crossed[index].answered = Some(Instant::now());
    };
    match fault {
        Some(Fault::Status500) => {
            let body = "injected by the test's proxy";
            write!(
                client,
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )?;
            answered(state);
            return client.flush();
        }
        Some(Fault::Reset) => {
            answered(state);
            return reset(client);
        }
        _ => {}
    }
    let mut server = TcpStream::connect(upstream)?;
    server.write_all(&forwarded(&request))?;
    let mut answer = BufReader::new(server.try_clone()?);
    let head = read_head(&mut answer)?;
    match fault {
        Some(Fault::ResetAfter) => {
            answered(state);
            let _ = server.shutdown(Shutdown::Both);
            return reset(client);
        }
        Some(Fault::Delay(d)) => std::thread::sleep(d),
        _ => {}
    }
    if request.path() == "/global/event" {
        return events(head, answer, client, state);
    }
    client.write_all(head.as_bytes())?;
    answered(state);
    io::copy(&mut answer, &mut client)?;
    client.flush()
}

/// The first rule `request` matches, used once.
fn take_fault(state: &Mutex<State>, request: &Request) -> Option<Fault> {
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    let rule = s
        .rules
        .iter_mut()
        .find(|r| r.left > 0 && r.method == request.method && request.target.contains(&r.path))?;
    rule.left -= 1;
    Some(rule.fault)
}

fn log(state: &Mutex<State>, request: &Request, fault: Option<Fault>) -> usize {
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    s.crossed.push(Crossed {
        method: request.method.clone(),
        target: request.target.clone(),
        body: request.body.clone(),
        fault,
        at: Instant::now(),
        answered: None,
    });
    s.crossed.len() - 1
}

/// The request as the server gets it: its body by length, on a
/// connection that closes after the answer.
fn forwarded(request: &Request) -> Vec<u8> {
    let mut out = format!("{} {} HTTP/1.1\r\n", request.method, request.target);
    for (k, v) in &request.headers {
        if !matches!(
            k.as_str(),
            "connection" | "content-length" | "transfer-encoding"
        ) {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        request.body.len()
    ));
    let mut out = out.into_bytes();
    out.extend_from_slice(&request.body);
    out
}

/// The answer's status line and headers, up to and with the empty line.
fn read_head(r: &mut BufReader<TcpStream>) -> io::Result<String> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed before its answer's head",
            ));
        }
        head.push_str(&line);
        if line.trim_end().is_empty() {
            return Ok(head);
        }
    }
}

/// Close `client` with a reset (RST), as a broken connection does.
fn reset(client: TcpStream) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a `linger` of the size given.
    unsafe {
        libc::setsockopt(
            client.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(client);
    Ok(())
}

/// The event stream, passed on event by event as each comes, less the
/// lost ones: its body read whole (chunked or not) and written back
/// closed by the end of the connection.
fn events(
    head: String,
    answer: BufReader<TcpStream>,
    mut client: TcpStream,
    state: &Mutex<State>,
) -> io::Result<()> {
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let kept: String = head
        .split_inclusive("\r\n")
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            !l.starts_with("transfer-encoding:")
                && !l.starts_with("content-length:")
                && !l.starts_with("connection:")
                && !l.trim().is_empty()
        })
        .collect();
    client.write_all(format!("{kept}connection: close\r\n\r\n").as_bytes())?;
    client.flush()?;
    let body: Box<dyn Read + Send> = match chunked {
        true => Box::new(Dechunked {
            inner: answer,
            left: 0,
            done: false,
        }),
        false => Box::new(answer),
    };
    let mut lines = BufReader::new(body);
    let mut event = String::new();
    loop {
        let mut line = String::new();
        if lines.read_line(&mut line)? == 0 {
            return Ok(());
        }
        event.push_str(&line);
        if !line.trim_end().is_empty() {
            continue;
        }
        if !lost(state, &event) {
            client.write_all(event.as_bytes())?;
            client.flush()?;
        }
        event.clear();
    }
}

/// Whether `event` is to be lost.
fn lost(state: &Mutex<State>, event: &str) -> bool {
    let s = state.lock().unwrap_or_else(|e| e.into_inner());
    s.lost
        .iter()
        .any(|needles| needles.iter().all(|n| event.contains(n.as_str())))
}

/// A chunked body, as the bytes it carries.
struct Dechunked {
    inner: BufReader<TcpStream>,
    /// Bytes left in the current chunk.
    left: usize,
    done: bool,
}

impl Read for Dechunked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        if self.left == 0 {
            let mut size = String::new();
            if self.inner.read_line(&mut size)? == 0 {
                return Ok(0);
            }
            if size.trim().is_empty() {
                // The CRLF that ends the chunk before.
                size.clear();
                if self.inner.read_line(&mut size)? == 0 {
                    return Ok(0);
                }
            }
            let hex = size.trim().split(';').next().unwrap_or("0");
            self.left = usize::from_str_radix(hex, 16)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let n = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..n])?;
        if n == 0 {
            return Ok(0);
        }
        self.left -= n;
        Ok(n)
    }
}
