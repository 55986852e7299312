//! A fake model on 127.0.0.1 for the real agent CLIs (Codex, Claude Code,
//! opencode), so that the whole loop — plan → reveille → the agent's turn →
//! the agent ticks the step with its own shell tool → the next step — runs
//! through the real programs, offline.
//!
//! The server is shared; each model API the CLIs speak is one [`Api`]
//! (its own file here), which reads the request's messages and answers in
//! its wire format. What every API does with a prompt is in `script`:
//! `TICK` lines and reveille's close instruction become one shell tool
//! call per step; after the tool's result comes back the model says
//! `ticked: <title>`; any other prompt gets `fake reply <n> to: <first
//! line>`.
//!
//! Every request is logged ([`FakeModel::requests`]) with when it came and
//! the last user text it carried: a test asks "did the model see this
//! prompt, once, and when" — what the agent experienced.

pub mod chat;
pub mod http;
pub mod messages;
pub mod responses;
pub mod script;

use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{Request, Response};
pub use script::{sed_tick_command, tick_command, Script, Tick};

/// One model API (a wire format), answering the requests it recognises.
pub trait Api: Send + Sync + 'static {
    /// Whether this API serves `req` (by method and path).
    fn serves(&self, req: &Request) -> bool;
    /// What the request asks of the model: the last user text, and whether
    /// the last message is a tool result (the second half of a tick turn).
    fn read(&self, req: &Request) -> Asked;
    /// Answer `req`. `reply` is what to say; the API frames it.
    fn answer(&self, req: &Request, reply: &Reply, out: &mut Response) -> std::io::Result<()>;
}

/// What a request carries, as an [`Api`] reads it.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// The text of the last user message (empty when there is none).
    pub last_user: String,
    /// The last message is a tool result: the model says how the tool did.
    pub after_tool: bool,
    /// The text of the tool results, for the final answer.
    pub tool_output: String,
    /// A request the CLI makes for itself (titles, summaries, warm-up):
    /// answered plainly and logged as such.
    pub auxiliary: bool,
}

/// What the model says to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Plain text.
    Text(String),
    /// One shell tool call per step, each with its bash command.
    Ticks(Vec<(Tick, String)>),
    /// A question for the person, through the agent's question tool (an
    /// API without one says it as text).
    Question(String),
}

/// One request as the test sees it.
#[derive(Debug, Clone)]
pub struct Logged {
    /// 1, 2, … in arrival order.
    pub n: u64,
    pub at: Instant,
    pub path: String,
    pub last_user: String,
    pub after_tool: bool,
    /// The tool results it carried (a person's answer to a question among
    /// them).
    pub tool_output: String,
    pub auxiliary: bool,
    /// When its answer was fully written (`None` while streaming).
    pub done: Option<Instant>,
}

struct Shared {
    apis: Vec<Box<dyn Api>>,
    log: Mutex<Vec<Logged>>,
    count: AtomicU64,
    /// The pace of a model: how long each answer takes unless the prompt
    /// says `delay=`.
    delay: Duration,
    /// Ticks are one `sed -i` each ([`sed_tick_command`]).
    sed: std::sync::atomic::AtomicBool,
}

/// The running fake model; stops accepting when dropped (its threads end
/// with their connections).
pub struct FakeModel {
    port: u16,
    shared: Arc<Shared>,
}

impl FakeModel {
    /// Serve `apis` on a free port of 127.0.0.1; each answer takes `delay`.
    pub fn start(apis: Vec<Box<dyn Api>>, delay: Duration) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            apis,
            log: Mutex::new(Vec::new()),
            count: AtomicU64::new(0),
            delay,
            sed: std::sync::atomic::AtomicBool::new(false),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                std::thread::spawn(move || serve(&s, conn));
            }
        });
        FakeModel { port, shared }
    }

    /// From now on, tick each step with one `sed -i` (a command an
    /// approval rule can name) instead of the pure-bash script.
    pub fn tick_with_sed(&self) {
        self.shared.sed.store(true, Ordering::SeqCst);
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Logged> {
        self.shared.log.lock().unwrap().clone()
    }

    /// The requests whose last user text contains `needle` and that are the
    /// first of their turn (not the answer to a tool result, not the CLI's
    /// own auxiliary requests): how many times the model was asked this.
    pub fn turns_on(&self, needle: &str) -> Vec<Logged> {
        self.requests()
            .into_iter()
            .filter(|r| !r.after_tool && !r.auxiliary && r.last_user.contains(needle))
            .collect()
    }
}

fn serve(s: &Shared, conn: TcpStream) {
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    while let Ok(Some(req)) = read_request_logged(&mut reader) {
        let Some(api) = s.apis.iter().find(|a| a.serves(&req)) else {
            let mut r = Response::new(&mut out);
            if r.json(404, &serde_json::json!({"error": "not found"}))
                .is_err()
            {
                return;
            }
            continue;
        };
        let asked = api.read(&req);
        let n = s.count.fetch_add(1, Ordering::SeqCst) + 1;
        let index = {
            let mut log = s.log.lock().unwrap();
            log.push(Logged {
                n,
                at: Instant::now(),
                path: req.path().to_string(),
                last_user: asked.last_user.clone(),
                after_tool: asked.after_tool,
                tool_output: asked.tool_output.clone(),
                auxiliary: asked.auxiliary,
                done: None,
            });
            log.len() - 1
        };
        let reply = reply(n, &asked, s.sed.load(Ordering::SeqCst));
        let mut r = Response::new(&mut out);
        let delay = Script::of(&asked.last_user).delay.unwrap_or(s.delay);
        if !asked.auxiliary {
            r.pause(delay / 2);
        }
        let result = api.answer(&req, &reply, &mut r);
        s.log.lock().unwrap()[index].done = Some(Instant::now());
        if result.is_err() || r.is_streaming() {
            return;
        }
    }
}

fn read_request_logged(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    http::read_request(r)
}

/// The model's answer to what was asked.
fn reply(n: u64, asked: &Asked, sed: bool) -> Reply {
    if asked.auxiliary {
        return Reply::Text("Fake title".into());
    }
    let script = Script::of(&asked.last_user);
    // A prompt that both asks and ticks: the question first, the ticks
    // once the person answered (the tool's output is the answer).
    let asks_first = script.ask.is_some() && !script.ticks.is_empty();
    let answered = asked.after_tool && !asked.tool_output.contains("ticked: ");
    if asks_first && !asked.after_tool {
        return Reply::Question(script.ask.unwrap_or_default());
    }
    if asked.after_tool && !(asks_first && answered) {
        let lines: Vec<String> = asked
            .tool_output
            .lines()
            .filter(|l| {
                l.starts_with("ticked: ") || l.contains("not found") || l.contains("no such file")
            })
            .map(str::to_string)
            .collect();
        return Reply::Text(if lines.is_empty() {
            format!("fake reply {n}: the tool ran")
        } else {
            lines.join("\n")
        });
    }
    if !script.ticks.is_empty() {
        return Reply::Ticks(
            script
                .ticks
                .into_iter()
                .map(|t| {
                    let cmd = match sed {
                        true => sed_tick_command(&t),
                        false => tick_command(&t),
                    };
                    (t, cmd)
                })
                .collect(),
        );
    }
    if let Some(question) = script.ask {
        return Reply::Question(question);
    }
    let first = asked.last_user.lines().next().unwrap_or("");
    Reply::Text(format!("fake reply {n} to: {first}"))
}
