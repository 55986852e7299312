//! One agent session as ollie-core runs it (`pkg/agent/core.go`), reduced to
//! what a waker can observe: its state, its prompt queue, and the turns it
//! runs. The model's reply is replaced by a turn of a set duration with one
//! tool call in the middle, during which a test's script acts.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{Command, Outcome, Received, Record, TurnScope};

/// The tool a turn calls in its middle, as every ollie agent's tool is
/// called today (ollie-core pkg/tools/execute/server.go: `execute_code`);
/// the state then reads `calling: execute_code` (core.go `executeTurn`:
/// `s.setState("calling: " + ev.Name)` on each `call` event).
pub const TOOL: &str = "execute_code";

/// What a session runs on when `s/new` names no backend: `OLLIE_BACKEND`,
/// an openai-compatible server on this machine — whose display name, the
/// one `idx` and `cfg` show, is `local` (ollie-core pkg/backend/new.go
/// `openAIName`).
pub const DEFAULT_BACKEND: &str = "openai";

/// The backend names `s/new backend=` and `/backend` take (ollie-core
/// pkg/backend/new.go `newBackend`); anything else is refused with this
/// message — among them every display name but the plain ones (`local`).
pub fn new_backend(which: &str) -> Result<(), String> {
    match which {
        "ollama" | "openai" | "openrouter" | "anthropic" | "copilot" | "kiro" | "codewhisperer" => {
            Ok(())
        }
        _ => Err(format!(
            "unknown OLLIE_BACKEND {which:?} (supported: ollama, openai, openrouter, anthropic, copilot, kiro)"
        )),
    }
}

/// What `idx` and `cfg` show for a backend: its `Name()` — for the
/// openai-compatible ones a label derived from `OLLIE_OPENAI_URL` (new.go
/// `openAIName`), `local` for the double's, which is on 127.0.0.1.
pub fn display_name(which: &str) -> &str {
    match which {
        "openai" | "openrouter" => "local",
        "codewhisperer" => "kiro",
        other => other,
    }
}

/// How long `statewait` blocks without a change (ollie-9p server.go `read`:
/// `context.WithTimeout(ctx, 5*time.Second)` around the blocking read).
pub const STATEWAIT: Duration = Duration::from_secs(5);

/// Slash commands ollie-core handles itself (pkg/agent/commands.go
/// `handleCommand`'s table). Any other text, even one starting with `/`, is
/// a prompt and starts a turn.
const COMMANDS: &[&str] = &[
    "/i",
    "/irw",
    "/backend",
    "/models",
    "/model",
    "/agents",
    "/agent",
    "/compact",
    "/context",
    "/cost",
    "/usage",
    "/history",
    "/clear",
    "/sessions",
    "/cwd",
    "/skills",
    "/tools",
    "/sp",
    "/help",
];

/// A test's script, run at a turn's tool call.
pub type Script = Arc<dyn Fn(&TurnScope) + Send + Sync>;

/// What a turn does and how long it takes; shared by every session of a
/// double, with a per-session override of the duration.
pub struct Behaviour {
    /// How long a turn runs (model time), unless the session overrides it.
    pub turn: Mutex<Duration>,
    /// How long ollie-core's pre-turn hooks run: the window in which a turn
    /// has begun (`Submit` holds `submitMu`) but `IsRunning` is still false.
    pub pre_turn: Mutex<Duration>,
    /// Run at the turn's tool call.
    pub script: Mutex<Option<Script>>,
}

/// The mutable part of a session (ollie-core `agent` fields and ollie-9p
/// `Session` fields).
pub struct Fields {
    pub id: String,
    /// `idle`, `thinking`, `calling: <tool>` (core.go `state`).
    pub state: String,
    /// `currentAction`: the record index of the running turn.
    running: Option<usize>,
    /// The cause the current action was cancelled with (`Interrupt`).
    interrupted: bool,
    /// The session's context is cancelled (killed).
    pub killed: bool,
    /// The prompt queue (`s.fifo`).
    pub fifo: VecDeque<String>,
    pub cwd: String,
    /// The backend as `s/new` or `/backend` named it (`openai`); shown by
    /// its [`display_name`].
    pub backend: String,
    pub model: String,
    pub agent: String,
    /// `s/<id>/plan`, as last written (trimmed, like every write).
    pub plan: Vec<u8>,
    /// `s/<id>/chat`: the session log.
    pub chat: Vec<u8>,
    /// The last submitted prompt (`prompt.prev`).
    pub prev_prompt: Vec<u8>,
    /// This session's turn duration, overriding the double's.
    pub turn: Option<Duration>,
    /// statewait reads blocked right now (for tests to know one is).
    pub statewaiting: usize,
    /// When a listing of the session's directory last paid for the lookup
    /// of `fifo.out` a typed listing makes (files.rs `typeless_listing`).
    pub listed: Option<Instant>,
}

/// One session: its fields, the condition every change broadcasts on
/// (core.go `notifyChange`), and `submitMu`.
pub struct Agent {
    fields: Mutex<Fields>,
    /// Broadcast on every change (state, kill, interrupt): wakes statewait
    /// readers and a turn waiting out its duration.
    changed: Condvar,
    /// `submitMu`: serialises commands and turn chains.
    submit: Mutex<()>,
    record: Arc<Record>,
    behaviour: Arc<Behaviour>,
}

impl Agent {
    pub fn new(id: &str, cwd: &str, record: Arc<Record>, behaviour: Arc<Behaviour>) -> Agent {
        let fields = Fields {
            id: id.to_string(),
            state: "idle".into(),
            running: None,
            interrupted: false,
            killed: false,
            fifo: VecDeque::new(),
            cwd: cwd.to_string(),
            backend: DEFAULT_BACKEND.into(),
            model: "qwen3:8b".into(),
            agent: "default".into(),
            plan: Vec::new(),
            chat: Vec::new(),
            prev_prompt: Vec::new(),
            turn: None,
            statewaiting: 0,
            listed: None,
        };
        Agent {
            fields: Mutex::new(fields),
            changed: Condvar::new(),
            submit: Mutex::new(()),
            record,
            behaviour,
        }
    }

    pub fn fields(&self) -> MutexGuard<'_, Fields> {
        self.fields.lock().unwrap()
    }

    pub fn id(&self) -> String {
        self.fields().id.clone()
    }

    /// core.go `IsRunning`: a turn's action is set.
    pub fn is_running(&self) -> bool {
        self.fields().running.is_some()
    }

    fn set_state(&self, fields: &mut Fields, state: String) {
        fields.state = state;
        self.changed.notify_all();
    }

    /// core.go `Queue`: push, nothing else.
    pub fn queue(&self, prompt: String) {
        let mut f = self.fields();
        self.record.received(Received::queued(&f.id, &prompt));
        f.fifo.push_back(prompt);
    }

    /// core.go `PopQueue` (`fifo.out`).
    pub fn pop_queue(&self) -> Option<String> {
        self.fields().fifo.pop_front()
    }

    /// core.go `Interrupt` (`ctl stop`): cancel the running turn, if any.
    pub fn interrupt(&self) {
        let mut f = self.fields();
        if f.running.is_some() {
            f.interrupted = true;
            self.changed.notify_all();
        }
    }

    /// ollie-9p store/session.go `KillSession`: cancel the session's context.
    pub fn kill(&self) {
        let mut f = self.fields();
        f.killed = true;
        self.changed.notify_all();
    }

    /// ollie-9p store/sessionfile.go `statewait` Wait and core.go
    /// `WaitChange`: block until the state differs from the state when the
    /// read began; on timeout or a killed session, the current state.
    pub fn statewait(&self) -> String {
        let deadline = Instant::now() + STATEWAIT;
        let mut f = self.fields();
        let base = f.state.clone();
        f.statewaiting += 1;
        while f.state == base && !f.killed {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            f = self.changed.wait_timeout(f, deadline - now).unwrap().0;
        }
        f.statewaiting -= 1;
        format!("{}\n", f.state)
    }

    /// core.go `Submit`: a command runs at once; on a running agent a prompt
    /// is queued; otherwise this call runs the turn, then one queued item
    /// per finished turn, until the queue is empty (the caller's thread is
    /// the goroutine ollie-9p starts for every `prompt` write).
    pub fn submit(&self, input: String) {
        if input.is_empty() {
            return;
        }
        self.record
            .received(Received::submitted(&self.id(), &input));
        // Fast path, without submitMu.
        if self.is_running() {
            if !self.command(&input) {
                self.fields().fifo.push_back(input);
            }
            return;
        }
        let _chain = self.submit.lock().unwrap();
        if self.command(&input) {
            return;
        }
        if self.is_running() {
            self.fields().fifo.push_back(input);
            return;
        }
        let mut input = input;
        while !input.is_empty() && !self.fields().killed {
            input = self.execute_turn(input);
        }
    }

    /// commands.go `handleCommand`: `!shell` and the known slash commands
    /// are handled (recorded here, not executed) and start no turn.
    fn command(&self, input: &str) -> bool {
        let name = input.split_whitespace().next().unwrap_or("");
        let handled = input.starts_with('!') || COMMANDS.contains(&name);
        if handled {
            self.record.command(Command::new(&self.id(), input));
        }
        handled
    }

    /// core.go `executeTurn`: one turn, then the next prompt to run ("" when
    /// none): an interrupted or killed turn drains nothing; a finished one
    /// pops one queued item.
    fn execute_turn(&self, input: String) -> String {
        self.append_chat(&format!("user: {input}\n"));
        // Pre-turn hooks run before currentAction is stored: a Submit
        // arriving now sees an idle agent, waits on submitMu, and runs after
        // this whole chain, behind anything queued meanwhile.
        if self
            .wait_out(*self.behaviour.pre_turn.lock().unwrap())
            .is_some()
        {
            return String::new(); // killed before the turn began
        }
        let (index, scope) = {
            let mut f = self.fields();
            let index = self.record.turn_started(&f.id, &input);
            f.running = Some(index);
            f.interrupted = false;
            self.set_state(&mut f, "thinking".into());
            let scope = TurnScope {
                session: f.id.clone(),
                prompt: input,
                cwd: f.cwd.clone().into(),
                number: index,
            };
            (index, scope)
        };
        let outcome = self.run(&scope);
        let mut f = self.fields();
        // run returned: the action is cleared, then the state is idle.
        f.running = None;
        self.set_state(&mut f, "idle".into());
        self.record.turn_ended(index, outcome);
        f.chat.extend_from_slice(b"assistant: done\n");
        match outcome {
            Outcome::Finished => f.fifo.pop_front().unwrap_or_default(),
            Outcome::Interrupted | Outcome::Killed => String::new(),
        }
    }

    /// The model's part of a turn: half the duration thinking, a tool call
    /// (the test's script runs), the other half thinking.
    fn run(&self, scope: &TurnScope) -> Outcome {
        let duration = self
            .fields()
            .turn
            .unwrap_or(*self.behaviour.turn.lock().unwrap());
        if let Some(outcome) = self.wait_out(duration / 2) {
            return outcome;
        }
        {
            let mut f = self.fields();
            self.set_state(&mut f, format!("calling: {TOOL}"));
        }
        let script = self.behaviour.script.lock().unwrap().clone();
        if let Some(script) = script {
            script(scope);
        }
        {
            let mut f = self.fields();
            if f.interrupted || f.killed {
                return if f.killed {
                    Outcome::Killed
                } else {
                    Outcome::Interrupted
                };
            }
            self.set_state(&mut f, "thinking".into());
        }
        self.wait_out(duration - duration / 2)
            .unwrap_or(Outcome::Finished)
    }

    /// Waits `duration`, or until the turn is interrupted or the session
    /// killed (what ends it early).
    fn wait_out(&self, duration: Duration) -> Option<Outcome> {
        let deadline = Instant::now() + duration;
        let mut f = self.fields();
        loop {
            if f.killed {
                return Some(Outcome::Killed);
            }
            if f.interrupted {
                return Some(Outcome::Interrupted);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            f = self.changed.wait_timeout(f, deadline - now).unwrap().0;
        }
    }

    pub fn append_chat(&self, text: &str) {
        self.fields().chat.extend_from_slice(text.as_bytes());
    }

    /// Broadcasts a change made through [`Agent::fields`] (core.go
    /// `notifyChange`), e.g. a new cwd.
    pub fn notify(&self) {
        self.changed.notify_all();
    }
}
