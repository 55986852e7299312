//! The ollie-9p file tree over the agents: paths (server.go `pathType`),
//! reads (server.go `read`, store/sessionfile.go `fileSpec`), stat sizes
//! (server.go `makeStat`, store/runfilestore.go `stat`), writes at clunk
//! (server.go `clunk`, `isAsyncWrite`, `handleWrite`) and removes (server.go
//! `remove`), in the current layout and in the older one
//! (`internal/p9/server.go` before the `workdir` → `cwd` rename).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::super::fuse::{errno_for, Node, Tree};
use super::agent::{display_name, new_backend, Agent, Behaviour};
use super::lingering::{Leads, Lingering};
use super::{Command, Flavour, Record};

/// Fixed files directly under `s/` (store/session.go `sessionStoreOrder`).
const STORE_FILES: &[(&str, u16)] = &[
    ("new", 0o666),
    ("idx", 0o444),
    ("ls", 0o555),
    ("kill", 0o555),
    ("sh", 0o555),
    ("b", 0o555),
    ("bfg", 0o555),
    ("bbg", 0o555),
    ("cleanup", 0o555),
];

/// The older layout had only `s/new` (no `idx`, no scripts).
const LEGACY_STORE_FILES: &[(&str, u16)] = &[("new", 0o666)];

/// A session directory (store/sessionfile.go `SessionFileList`).
const SESSION_FILES: &[(&str, u16)] = &[
    ("plan", 0o666),
    ("ctl", 0o200),
    ("prompt", 0o200),
    ("fifo.in", 0o200),
    ("fifo.out", 0o444),
    ("chat", 0o666),
    ("offset", 0o444),
    ("cfg", 0o666),
    ("statewait", 0o444),
    ("usage", 0o444),
    ("cost", 0o444),
    ("ctxsz", 0o444),
    ("models", 0o444),
    ("systemprompt", 0o444),
    ("env", 0o444),
    ("tail", 0o555),
    ("prompt.prev", 0o444),
    ("context", 0o444),
];

/// The older session directory (`internal/p9/server.go` `readDir`).
const LEGACY_SESSION_FILES: &[(&str, u16)] = &[
    ("ctl", 0o200),
    ("prompt", 0o200),
    ("enqueue", 0o200),
    ("dequeue", 0o444),
    ("chat", 0o444),
    ("reply", 0o444),
    ("state", 0o444),
    ("backend", 0o666),
    ("agent", 0o666),
    ("model", 0o666),
    ("workdir", 0o666),
    ("usage", 0o444),
    ("ctxsz", 0o444),
    ("models", 0o444),
    ("mcp", 0o444),
];

/// Where a path points.
enum At<'a> {
    Root,
    Sessions,
    StoreFile(&'a str),
    Session(&'a str),
    SessionFile(&'a str, &'a str),
}

fn at(path: &str) -> Option<At<'_>> {
    let mut parts = path.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(""), None, None) => Some(At::Root),
        (Some("s"), None, None) => Some(At::Sessions),
        (Some("s"), Some(name), None) => Some(At::Session(name)),
        (Some("s"), Some(id), Some(file)) if !file.contains('/') => Some(At::SessionFile(id, file)),
        _ => None,
    }
}

/// The ollie-9p server: sessions by id.
pub struct Server {
    pub flavour: Flavour,
    pub sessions: Mutex<BTreeMap<String, Arc<Agent>>>,
    pub record: Arc<Record>,
    pub behaviour: Arc<Behaviour>,
    /// Killed and renamed ids the mount still resolves for a moment.
    pub lingering: Lingering,
    /// Reads of a session file to fail with EIO, by file name, and how
    /// many more: ollie-9p's store reads time out after 10 s with EIO.
    pub failing_reads: Mutex<BTreeMap<String, u32>>,
}

impl Server {
    /// Whether this read of `file` is one to fail (counted down).
    fn fail_read(&self, file: &str) -> bool {
        let mut failing = self.failing_reads.lock().unwrap();
        match failing.get_mut(file) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    fn store_files(&self) -> &'static [(&'static str, u16)] {
        match self.flavour {
            Flavour::Current => STORE_FILES,
            Flavour::Legacy => LEGACY_STORE_FILES,
        }
    }

    fn session_files(&self) -> &'static [(&'static str, u16)] {
        match self.flavour {
            Flavour::Current => SESSION_FILES,
            Flavour::Legacy => LEGACY_SESSION_FILES,
        }
    }

    /// Tells `s/<name>` apart: a fixed file or a session directory.
    fn classify<'a>(&self, at: At<'a>) -> At<'a> {
        match at {
            At::Session(name) if self.store_files().iter().any(|(n, _)| *n == name) => {
                At::StoreFile(name)
            }
            other => other,
        }
    }

    pub fn session(&self, id: &str) -> Option<Arc<Agent>> {
        self.sessions.lock().unwrap().get(id).cloned()
    }

    /// The session a path under `s/<id>` reaches: a live one, or, for a
    /// moment after a rename, the renamed one (see [`Lingering`]).
    fn reached(&self, id: &str) -> Option<Arc<Agent>> {
        self.session(id)
            .or_else(|| match self.lingering.lookup(id)? {
                Leads::To(new) => self.session(&new),
                Leads::Nowhere => None,
            })
    }

    /// Whether `s/<id>` resolves: a live session, or one that lingers.
    fn resolves(&self, id: &str) -> bool {
        self.session(id).is_some() || self.lingering.lookup(id).is_some()
    }

    fn file_mode(&self, name: &str) -> Option<u16> {
        self.session_files()
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, m)| m)
    }

    /// store/session.go `index`: `id\tstate\tcwd\tbackend\tmodel`, sorted.
    fn index(&self) -> String {
        let sessions = self.sessions.lock().unwrap();
        sessions
            .iter()
            .map(|(id, agent)| {
                let f = agent.fields();
                let backend = display_name(&f.backend);
                format!("{id}\t{}\t{}\t{backend}\t{}\n", f.state, f.cwd, f.model)
            })
            .collect()
    }

    /// A session file's content (store/sessionfile.go `fileSpec` Read and
    /// `content`; the older `readFile`). `fifo.out` / `dequeue` pop.
    fn session_read(&self, agent: &Agent, file: &str) -> Vec<u8> {
        let text = match file {
            "plan" => return agent.fields().plan.clone(),
            "chat" => return agent.fields().chat.clone(),
            "prompt.prev" => return agent.fields().prev_prompt.clone(),
            "fifo.out" | "dequeue" => agent.pop_queue().unwrap_or_default(),
            "statewait" => agent.statewait(),
            "cfg" => cfg_content(agent),
            "state" => format!("{}\n", agent.fields().state),
            "backend" => format!("{}\n", display_name(&agent.fields().backend)),
            "model" => format!("{}\n", agent.fields().model),
            "agent" => format!("{}\n", agent.fields().agent),
            "workdir" => format!("{}\n", agent.fields().cwd),
            "env" => format!("OLLIE_SESSION_ID={}\n", agent.id()),
            "offset" => "0\n".into(),
            "usage" | "ctxsz" | "models" => "\n".into(),
            "tail" => "#!/bin/sh\nexec tail -f \"$(dirname \"$0\")/chat\"\n".into(),
            _ => String::new(),
        };
        text.into_bytes()
    }

    /// What stat reports as a session file's size: server.go `makeStat` →
    /// runfilestore.go `stat`: the size function if any (plan, chat), 4096
    /// for a wait file, else the length of a Read — so a stat of `fifo.out`
    /// pops, as upstream. The older server reported the length of chat,
    /// reply and the mutable one-line files, 0 for the rest.
    fn session_size(&self, agent: &Agent, file: &str) -> u64 {
        match (self.flavour, file) {
            (_, "chat") => agent.fields().chat.len() as u64,
            (Flavour::Current, "plan") => agent.fields().plan.len() as u64,
            (Flavour::Current, "statewait") => 4096,
            (Flavour::Current, "fifo.out") => lookup_fifo_out(agent),
            (Flavour::Current, _) => self.session_read(agent, file).len() as u64,
            (Flavour::Legacy, "state" | "backend" | "agent" | "model" | "usage" | "workdir") => {
                self.session_read(agent, file).len() as u64
            }
            (Flavour::Legacy, _) => 0,
        }
    }

    /// server.go `clunk`: trim, then act — on its own thread for the files
    /// whose writes block (`isAsyncWrite`: prompt, fifo.in / enqueue, ctl),
    /// in the request otherwise.
    fn clunk(self: &Arc<Self>, path: &str, text: &[u8]) -> Result<(), String> {
        let input = String::from_utf8_lossy(text).trim().to_string();
        let Some(at) = at(path).map(|a| self.classify(a)) else {
            return Ok(());
        };
        match at {
            At::StoreFile("new") => self.create_from(&input),
            At::StoreFile(name) => Err(format!("{name}: not writable")),
            At::SessionFile(id, file)
                if matches!(file, "prompt" | "fifo.in" | "enqueue" | "ctl") =>
            {
                let (server, id, file) = (self.clone(), id.to_string(), file.to_string());
                std::thread::spawn(move || {
                    if let Err(e) = server.session_write(&id, &file, input) {
                        server.record.error(format!("{id}/{file}: {e}"));
                    }
                });
                Ok(())
            }
            At::SessionFile(id, file) => self.session_write(id, file, input),
            _ => Ok(()),
        }
    }

    /// server.go `handleWrite` for `s/new`: an empty text is ignored (the
    /// older server ignored every empty write). The session appears a few
    /// ms after the writer's `close` returned: 9pfuse sends the clunk on
    /// the RELEASE the kernel sends after it (the real package measured
    /// `s/<id>` missing on 16 % of tries, there 2–14 ms later); the double
    /// is late every time.
    fn create_from(&self, input: &str) -> Result<(), String> {
        if input.is_empty() {
            return Ok(());
        }
        std::thread::sleep(create_lag());
        let args: Vec<&str> = input.split_whitespace().collect();
        self.create(&args).map(|_| ())
    }

    /// A session file write: store/sessionfile.go `fileSpec` Write, or the
    /// older `handleWrite`.
    fn session_write(&self, id: &str, file: &str, input: String) -> Result<(), String> {
        let agent = self
            .reached(id)
            .ok_or_else(|| format!("session not found: {id}"))?;
        // A name this layout lacks: the current store fails to open it, the
        // older handleWrite fell through its switch and returned nil.
        if self.file_mode(file).is_none() {
            return match self.flavour {
                Flavour::Current => Err(format!("{file}: not found")),
                Flavour::Legacy => Ok(()),
            };
        }
        if input.is_empty() && (self.flavour == Flavour::Legacy || file != "plan") {
            return Ok(());
        }
        match file {
            // A plan write replaces it, even with nothing (truncate).
            "plan" => agent.fields().plan = input.into_bytes(),
            "prompt" => {
                agent.fields().prev_prompt = input.clone().into_bytes();
                agent.submit(input);
            }
            "fifo.in" | "enqueue" => agent.queue(input),
            "ctl" => self.ctl(&agent, &input)?,
            "cfg" => cfg_write(&agent, &input)?,
            "backend" | "agent" | "model" => switch_setting(&agent, file, &input)?,
            "workdir" => set_cwd(&agent, &input)?,
            "chat" => {} // saved as a transcript
            _ if self.flavour == Flavour::Legacy => {}
            _ => return Err(format!("{file}: read-only")),
        }
        Ok(())
    }

    /// store/sessionfile.go `handleCtl`.
    fn ctl(&self, agent: &Arc<Agent>, input: &str) -> Result<(), String> {
        let id = agent.id();
        self.control(agent, input)?;
        self.record.control(Command::new(&id, input));
        Ok(())
    }

    fn control(&self, agent: &Arc<Agent>, input: &str) -> Result<(), String> {
        let word = input.split_whitespace().next().unwrap_or("");
        match word {
            "stop" => agent.interrupt(),
            "kill" => self.kill(&agent.id()),
            "rn" => {
                let new_id = input.get(3..).unwrap_or("").trim();
                if !new_id.is_empty() {
                    // Logged upstream, never returned.
                    if let Err(e) = self.rename(&agent.id(), new_id) {
                        self.record.error(format!("rename: {e}"));
                    }
                }
            }
            "save" => {}
            "compact" | "clear" | "backend" | "model" | "models" | "agents" | "agent"
            | "sessions" | "cwd" | "skills" | "tools" | "context" | "usage" | "cost"
            | "history" | "irw" | "help" | "mcp" => agent.submit(format!("/{input}")),
            _ => return Err(format!("unknown ctl command: {word}")),
        }
        Ok(())
    }

    /// store/session.go `createSession` (the older one takes `workdir`).
    /// Returns the new id.
    pub fn create(&self, args: &[&str]) -> Result<String, String> {
        let dir_key = match self.flavour {
            Flavour::Current => "cwd",
            Flavour::Legacy => "workdir",
        };
        let (mut name, mut cwd, mut settings) = (None, None, Vec::new());
        for arg in args {
            let (k, v) = arg
                .split_once('=')
                .ok_or(format!("invalid option {arg:?} (expected key=value)"))?;
            if v.is_empty() {
                continue;
            }
            match k {
                "name" => name = Some(v.to_string()),
                // session.go `createSession`: `backend.NewWithName` refuses
                // a name it has no constructor for — any display name.
                "backend" => {
                    new_backend(v).map_err(|e| format!("backend: {e}"))?;
                    settings.push((k, v));
                }
                "model" | "agent" => settings.push((k, v)),
                k if k == dir_key => cwd = Some(v.to_string()),
                _ => {
                    return Err(format!(
                        "unknown option {k:?} (valid: name, backend, model, agent, {dir_key})"
                    ))
                }
            }
        }
        let cwd = cwd.ok_or(format!(
            "{dir_key} is required (e.g. new {dir_key}=/path/to/project)"
        ))?;
        let id = name.unwrap_or_else(new_session_id);
        let mut sessions = self.sessions.lock().unwrap();
        if sessions.contains_key(&id) {
            return Err(format!("session already exists: {id}"));
        }
        let agent = Agent::new(&id, &cwd, self.record.clone(), self.behaviour.clone());
        for (k, v) in settings {
            let mut f = agent.fields();
            let field = match k {
                "backend" => &mut f.backend,
                "model" => &mut f.model,
                _ => &mut f.agent,
            };
            *field = v.to_string();
        }
        sessions.insert(id.clone(), Arc::new(agent));
        self.record.created(&id);
        Ok(id)
    }

    /// store/session.go `KillSession`.
    pub fn kill(&self, id: &str) {
        if let Some(agent) = self.sessions.lock().unwrap().remove(id) {
            self.lingering.killed(id);
            agent.kill();
        }
    }

    /// store/session.go `renameSession`.
    fn rename(&self, old: &str, new: &str) -> Result<(), String> {
        let mut sessions = self.sessions.lock().unwrap();
        let agent = sessions
            .get(old)
            .cloned()
            .ok_or(format!("session not found: {old}"))?;
        if sessions.contains_key(new) {
            return Err(format!("session already exists: {new}"));
        }
        if agent.is_running() {
            return Err("cannot rename while agent is running".into());
        }
        agent.fields().id = new.to_string();
        sessions.remove(old);
        sessions.insert(new.to_string(), agent.clone());
        self.lingering.renamed(old, new);
        agent.append_chat(&format!(":: session renamed: {old} -> {new}\n"));
        Ok(())
    }

    /// server.go `remove`: a session file is a no-op (so `rm -r` goes on to
    /// the directory), the directory kills the session. The older server
    /// killed the session named by the last path element, whatever it was.
    fn remove_at(&self, path: &str) -> Result<(), String> {
        let at = at(path).map(|a| self.classify(a));
        match (self.flavour, at) {
            (Flavour::Current, Some(At::SessionFile(..))) => Ok(()),
            (Flavour::Current, Some(At::Session(id))) => {
                self.session(id).ok_or(format!("session not found: {id}"))?;
                self.kill(id);
                Ok(())
            }
            (Flavour::Current, Some(At::StoreFile(name))) if name != "new" => {
                Err(format!("session not found: {name}"))
            }
            (Flavour::Legacy, Some(At::Session(name) | At::SessionFile(_, name))) => {
                self.kill(name);
                Ok(())
            }
            _ => Err("remove not supported".into()),
        }
    }
}

/// What a lookup of `fifo.out` costs upstream: the walk (server.go `walk`
/// → `pathType` → runfilestore.go `stat`, which sizes the file by reading
/// it: `PopQueue`) pops one, the Tstat 9pfuse sends with every lookup
/// (`fuselookup` → `fsdirfstat`; server.go `makeStat` → `pathType`, then
/// `sfs.Stat` for the length) two more. Returns the size the last one
/// gives. A getattr alone costs only the Tstat's two; the double charges
/// every stat a lookup's three.
fn lookup_fifo_out(agent: &Agent) -> u64 {
    (0..3).fold(0, |_, _| agent.pop_queue().unwrap_or_default().len() as u64)
}

/// What listing `s/<id>` costs a client that wants each entry's type:
/// 9pfuse's readdir packs no type (plan9port src/cmd/9pfuse/main.c
/// `canpack` sets only ino, off, namelen and name), so `read_dir` +
/// `file_type()` stats every entry, and the lookup of `fifo.out` pops
/// (see [`lookup_fifo_out`]). The FUSE layer here (fuser 0.18) cannot send
/// an entry without a type, so the listing itself is charged that lookup —
/// harsher for a client that wanted only the names, never kinder. The
/// kernel keeps a looked-up entry for 9pfuse's 1 s `entrytimeout`, so a
/// listing pays at most once a second (a `read_dir` is several readdirs).
fn typeless_listing(agent: &Agent) {
    let mut f = agent.fields();
    if f.listed
        .is_some_and(|at| at.elapsed() < super::lingering::ENTRY_TIMEOUT)
    {
        return;
    }
    f.listed = Some(std::time::Instant::now());
    drop(f);
    lookup_fifo_out(agent);
}

/// How late a session created through `s/new` appears: 2–14 ms.
fn create_lag() -> std::time::Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    std::time::Duration::from_millis(2 + u64::from(nanos % 13))
}

/// agent.NewSessionID: `<unix-nanos>-<6 hex>`.
fn new_session_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mut random = [0u8; 3];
    let _ = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut random));
    format!(
        "{nanos}-{:02x}{:02x}{:02x}",
        random[0], random[1], random[2]
    )
}

/// store/sessionfile.go `cfgContent`.
fn cfg_content(agent: &Agent) -> String {
    let f = agent.fields();
    format!(
        "state={}\nbackend={}\nmodel={}\nagent={}\ncwd={}\nmaxTokens=0\ntemperature=\nfrequencyPenalty=\npresencePenalty=\n",
        f.state, display_name(&f.backend), f.model, f.agent, f.cwd
    )
}

/// store/sessionfile.go `handleCfg`: one `key=value` per line (not per
/// word); `backend`/`model`/`agent` are refused while a turn runs and are
/// otherwise a `/key value` Submit; `state` and unknown keys are ignored.
fn cfg_write(agent: &Agent, input: &str) -> Result<(), String> {
    for line in input.lines().map(str::trim) {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "backend" | "model" | "agent" if !v.is_empty() => switch_setting(agent, k, v)?,
            "cwd" if !v.is_empty() => set_cwd(agent, v)?,
            "maxTokens" | "temperature" | "frequencyPenalty" | "presencePenalty"
                if agent.is_running() =>
            {
                return Err("cannot change params while agent is running".into())
            }
            _ => {}
        }
    }
    Ok(())
}

/// Switching backend, model or agent: refused while running, else the
/// `/backend B` (…) command is submitted and the setting changes — unless
/// the command fails, which only the chat says (commands.go `/backend`:
/// "error: failed to switch backend: …", an info event).
fn switch_setting(agent: &Agent, key: &str, value: &str) -> Result<(), String> {
    if agent.is_running() {
        return Err(format!("cannot switch {key} while agent is running"));
    }
    agent.submit(format!("/{key} {value}"));
    if key == "backend" {
        if let Err(e) = new_backend(value) {
            agent.append_chat(&format!("error: failed to switch backend: {e}\n"));
            return Ok(());
        }
    }
    let mut f = agent.fields();
    match key {
        "backend" => f.backend = value.to_string(),
        "model" => f.model = value.to_string(),
        _ => f.agent = value.to_string(),
    }
    Ok(())
}

/// core.go `SetCWD`: the directory must exist.
fn set_cwd(agent: &Agent, dir: &str) -> Result<(), String> {
    std::fs::metadata(dir).map_err(|e| format!("cwd: stat {dir}: {e}"))?;
    agent.fields().cwd = dir.to_string();
    agent.notify();
    Ok(())
}

/// The tree as the FUSE layer sees it. `Arc<Server>` so async writes can
/// outlive the request.
pub struct Served(pub Arc<Server>);

impl Tree for Served {
    fn node(&self, path: &str) -> Option<Node> {
        let s = &self.0;
        match s.classify(at(path)?) {
            At::Root | At::Sessions => Some(Node::Dir),
            At::StoreFile(_) => Some(Node::File),
            At::Session(id) => s.resolves(id).then_some(Node::Dir),
            At::SessionFile(id, file) => {
                (s.resolves(id) && s.file_mode(file).is_some()).then_some(Node::File)
            }
        }
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let s = &self.0;
        match at(dir).map(|a| s.classify(a)) {
            Some(At::Root) => vec!["s".into()],
            Some(At::Sessions) => {
                let files = s.store_files().iter().map(|(n, _)| n.to_string());
                files
                    .chain(s.sessions.lock().unwrap().keys().cloned())
                    .collect()
            }
            Some(At::Session(id)) => s.session(id).map_or_else(Vec::new, |agent| {
                if s.flavour == Flavour::Current {
                    typeless_listing(&agent);
                }
                s.session_files()
                    .iter()
                    .map(|(n, _)| n.to_string())
                    .collect()
            }),
            _ => Vec::new(),
        }
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, i32> {
        let s = &self.0;
        match at(path).map(|a| s.classify(a)) {
            Some(At::StoreFile("new")) => Ok(match s.flavour {
                Flavour::Current => b"name=\ncwd=\nbackend=\nmodel=\nagent=\n".to_vec(),
                Flavour::Legacy => b"name=\nworkdir=\nbackend=\nmodel=\nagent=\n".to_vec(),
            }),
            Some(At::StoreFile("idx")) => Ok(s.index().into_bytes()),
            Some(At::StoreFile(_)) => Ok(b"#!/bin/sh\n# a script of the ollie install\n".to_vec()),
            Some(At::SessionFile(_, file)) if s.fail_read(file) => Err(libc::EIO),
            // A read of a session that is gone is empty, not an error.
            Some(At::SessionFile(id, file)) => Ok(s
                .reached(id)
                .map(|a| s.session_read(&a, file))
                .unwrap_or_default()),
            _ => Err(libc::EISDIR),
        }
    }

    fn write(&self, path: &str, text: &[u8]) -> Result<(), i32> {
        self.0.clunk(path, text).map_err(|e| {
            self.0.record.error(format!("{path}: {e}"));
            errno_for(&e)
        })
    }

    /// server.go `create`: a file may be created anywhere outside the
    /// real directories, and nothing is kept; its text, at clunk, goes to a
    /// file that does not exist (an error, or silence in the older layout).
    fn create(&self, _path: &str) -> Result<(), i32> {
        Ok(())
    }

    fn remove(&self, path: &str) -> Result<(), i32> {
        self.0.remove_at(path).map_err(|e| errno_for(&e))
    }

    fn size(&self, path: &str) -> u64 {
        let s = &self.0;
        match at(path).map(|a| s.classify(a)) {
            Some(At::StoreFile(_)) if s.flavour == Flavour::Current => {
                self.read(path).map_or(0, |c| c.len() as u64)
            }
            Some(At::SessionFile(id, file)) => {
                s.session(id).map_or(0, |a| s.session_size(&a, file))
            }
            _ => 0,
        }
    }

    fn mode(&self, path: &str, node: Node) -> u16 {
        let s = &self.0;
        match at(path).map(|a| s.classify(a)) {
            Some(At::StoreFile(name)) => s
                .store_files()
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(0o444, |&(_, m)| m),
            Some(At::SessionFile(_, file)) => s.file_mode(file).unwrap_or(0o444),
            _ if node == Node::Dir => 0o555,
            _ => 0o444,
        }
    }

    /// server.go `read`: `*wait` files and `fifo.out` (older: `dequeue`)
    /// answer a read at a non-zero offset with end of file.
    fn read_once(&self, path: &str) -> bool {
        matches!(at(path), Some(At::SessionFile(_, f)) if f.ends_with("wait") || f == "fifo.out" || f == "dequeue")
    }
}
