//! `reveille run`: the event loop that drives the engine.
//!
//! One task, one thread. It selects over inotify events, background
//! delivery outcomes, the engine's next deadline, the poll timer (only while
//! some root is polled), the group-commit timer (only while records are
//! unsynced), the watchdog (only under systemd with `WatchdogSec`) and
//! signals — so an idle daemon on inotify roots sleeps in `epoll_wait` until
//! something happens. Effects are applied in order, depth-first: a record is
//! in the journal before the prompt that depends on it is written.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::{self, Settings};
use crate::core::effect::{Effect, Level, Log};
use crate::core::engine::{Engine, EngineConfig, Mode, Templates};
use crate::core::input::{Change, FileRead, Input};
use crate::core::prompt;
use crate::core::session::check_name;
use crate::shell::deliver::{Deliverer, Framing, Outcome};
use crate::shell::read::{read_capped, read_fresh};
use crate::shell::store::{Store, StoreError};
use crate::shell::systemd::Notifier;
use crate::shell::tail::{PipeTail, Tail};
use crate::shell::watch::{RootKind, RootMode, Seen, Watch, WatchEvents};

/// Why the daemon could not start or had to stop.
#[derive(Debug)]
pub enum DaemonError {
    Store(StoreError),
    Watch(String),
    Runtime(String),
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DaemonError::Store(e) => write!(f, "state directory: {e}"),
            DaemonError::Watch(e) => write!(f, "cannot watch: {e}"),
            DaemonError::Runtime(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for DaemonError {}

/// The engine's view of the settings.
pub fn engine_config(s: &Settings) -> EngineConfig {
    let mut c = EngineConfig::new(&s.project.plan_dir, &s.sessions.dir);
    c.session_plans = s.sessions.session_plans;
    c.default_session = s.project.default_session.clone();
    c.mode = match s.project.mode {
        config::Mode::Reactive => Mode::Reactive,
        config::Mode::Queue => Mode::Queue,
    };
    c.nudge_done = s.project.nudge_done;
    c.max_plan_bytes = usize::try_from(s.project.max_plan_bytes).unwrap_or(usize::MAX);
    c.settle = s.project.settle;
    c.retry_initial = s.sessions.retry_initial;
    c.retry_max = s.sessions.retry_max;
    c.outbox_cap = s.sessions.outbox_cap;
    c.mounts = s.events.mounts.clone();
    c.assignees = s.events.assignees.clone();
    c.notify_completed = s.events.notify_completed;
    c.resync = s.events.resync;
    c.beads_file = s
        .beads
        .issues_jsonl
        .as_ref()
        .map(|p| p.display().to_string());
    let pick = |t: &Option<String>, d: &str| t.clone().unwrap_or_else(|| d.to_string());
    c.templates = Templates {
        step: pick(&s.prompt.template, prompt::DEFAULT_STEP),
        done: pick(&s.prompt.done_template, prompt::DEFAULT_DONE),
        task: prompt::DEFAULT_TASK.to_string(),
        claim: pick(&s.prompt.claim_template, prompt::DEFAULT_CLAIM),
        completed: pick(&s.prompt.completed_template, prompt::DEFAULT_COMPLETED),
    };
    c
}

/// Check the prompt templates of a configuration (unknown placeholders).
pub fn check_templates(s: &Settings) -> Result<(), String> {
    let checks = [
        ("prompt.template", &s.prompt.template, prompt::STEP_VARS),
        (
            "prompt.done_template",
            &s.prompt.done_template,
            prompt::DONE_VARS,
        ),
        (
            "prompt.claim_template",
            &s.prompt.claim_template,
            prompt::TASK_VARS,
        ),
        (
            "prompt.completed_template",
            &s.prompt.completed_template,
            prompt::TASK_VARS,
        ),
    ];
    for (key, template, vars) in checks {
        if let Some(t) = template {
            prompt::check(t, vars).map_err(|e| format!("{key}: {e}"))?;
        }
    }
    Ok(())
}

fn framing(s: &Settings) -> Framing {
    match s.sessions.framing {
        config::Framing::Auto => Framing::Auto,
        config::Framing::Message => Framing::Message,
        config::Framing::Nul => Framing::Nul,
        config::Framing::Jsonl => Framing::Jsonl,
    }
}

/// Watcher events handled per loop turn before signals and timers are
/// looked at again.
const DRAIN_BATCH: usize = 1024;

/// `1 plan`, `2 plans`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Tracker files (ready lists, issues.jsonl) larger than this are refused.
const TRACKER_FILE_CAP: usize = 256 << 20;

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn add_roots(watch: &mut Watch, s: &Settings) {
    watch.add_root(&s.project.plan_dir, RootKind::Plans);
    watch.add_root(&s.sessions.dir, RootKind::Sessions);
    if let Some(p) = &s.events.path {
        watch.add_root(p, RootKind::File);
    }
    if let Some(p) = &s.beads.issues_jsonl {
        watch.add_root(p, RootKind::File);
    }
}

/// Emit an engine log entry as a tracing event with structured fields.
/// `PLAN=` carries the bare plan identity (`<stamp>_<uid>`) for markdown
/// plans, so `journalctl PLAN=20261130T101500_a1b2c3d4` works.
fn emit(project: &str, l: &Log) {
    macro_rules! ev {
        ($lvl:expr) => {
            tracing::event!(
                $lvl,
                project = project,
                plan = l
                    .plan
                    .as_deref()
                    .map(|p| p.strip_prefix("plan:").unwrap_or(p)),
                step = l.step.as_deref(),
                session = l.session.as_deref(),
                mount = l.mount.as_deref(),
                file = l.file.as_deref(),
                line = l.line.map(|n| n as u64),
                "{}",
                l.message
            )
        };
    }
    match l.level() {
        Level::Debug => ev!(tracing::Level::DEBUG),
        Level::Info => ev!(tracing::Level::INFO),
        Level::Warn => ev!(tracing::Level::WARN),
        Level::Error => ev!(tracing::Level::ERROR),
    }
}

/// The running daemon.
struct Daemon {
    settings: Settings,
    engine: Engine,
    store: Store,
    watch: Watch,
    deliverer: Deliverer,
    notifier: Notifier,
    /// The engine's clock origin.
    started: Instant,
    /// When the journal must next be fdatasync'ed (group commit).
    sync_at: Option<Instant>,
    /// Whether a persistence failure was already reported (said once).
    store_failing: bool,
    /// The last STATUS= sent, so it is only sent on change.
    status: String,
    /// What that STATUS= was made of.
    status_key: [usize; 6],
    /// Deliveries finishing in the background (partial pipe writes, regular
    /// and 9P files); a stop waits briefly for them.
    background: usize,
    /// The tracker's event log, when `[events] path` is a file.
    tail: Option<Tail>,
    /// The tracker's event stream, when `[events] path` is a named pipe.
    pipe: Option<PipeTail>,
}

impl Daemon {
    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// Feed one input and carry out everything that follows from it.
    fn feed(&mut self, input: Input) {
        let now = self.now();
        let mut queue: VecDeque<Effect> = self.engine.handle(now, input).into();
        loop {
            let Some(effect) = queue.pop_front() else {
                // Every effect is carried out (records are in the journal):
                // now write what the engine says can go out.
                match self.deliver_next(now) {
                    Some(input) => {
                        queue.extend(self.engine.handle(now, input));
                        continue;
                    }
                    None => return,
                }
            };
            let follow = match effect {
                Effect::Record(r) => {
                    self.persist(&r);
                    None
                }
                Effect::Log(l) => {
                    emit(&self.settings.project.name, &l);
                    None
                }
                Effect::Read { path, complete } => {
                    let config = self.engine.config();
                    let (read, fresh) = read_fresh(&path, config.max_plan_bytes, config.settle);
                    Some(Input::PlanRead {
                        path,
                        read,
                        complete,
                        fresh,
                    })
                }
                Effect::List { read_all } => Some(Input::Listed {
                    paths: self.watch.list(),
                    read_all,
                }),
                Effect::ReadMount { mount } => Some(self.read_mount(mount)),
                Effect::ReadMountList { mount } => Some(self.read_mount_list(mount)),
                Effect::ReadBeads => self.read_beads(),
            };
            if let Some(input) = follow {
                // Depth-first: what follows from an effect happens before the
                // effects queued after it.
                let more = self.engine.handle(now, input);
                for e in more.into_iter().rev() {
                    queue.push_front(e);
                }
            }
        }
    }

    /// Attempt the next delivery the engine offers; the outcome is the next
    /// input, unless the write finishes in the background.
    fn deliver_next(&mut self, now: Duration) -> Option<Input> {
        while let Some(d) = self.engine.poll_delivery(now) {
            match self.deliverer.deliver(&d) {
                Some(Ok(())) => {
                    return Some(Input::Delivered {
                        session: d.session,
                        seq: d.seq,
                    })
                }
                Some(Err(why)) => {
                    return Some(Input::Undeliverable {
                        session: d.session,
                        seq: d.seq,
                        why,
                    })
                }
                None => self.background += 1,
            }
        }
        None
    }

    /// `<beads_root>/<mount>/ready`. Mount names come from configuration or
    /// from events, where they were validated as one path component.
    fn read_mount(&self, mount: String) -> Input {
        let (read, fresh) = match check_name(&mount) {
            Ok(()) => read_fresh(
                &self.settings.events.beads_root.join(&mount).join("ready"),
                TRACKER_FILE_CAP,
                self.settings.project.settle,
            ),
            Err(why) => (FileRead::Failed(format!("mount name {why}")), false),
        };
        Input::MountRead { mount, read, fresh }
    }

    /// `<beads_root>/<mount>/list`, where 9beads keeps a claimed bead's
    /// assignee. Read whole at once: a synthetic file has no half-written
    /// state, and a claim is told from it at most once.
    fn read_mount_list(&self, mount: String) -> Input {
        let read = match check_name(&mount) {
            Ok(()) => read_capped(
                &self.settings.events.beads_root.join(&mount).join("list"),
                TRACKER_FILE_CAP,
            ),
            Err(why) => FileRead::Failed(format!("mount name {why}")),
        };
        Input::MountListRead { mount, read }
    }

    fn read_beads(&self) -> Option<Input> {
        let path = self.settings.beads.issues_jsonl.as_ref()?;
        Some(Input::BeadsRead {
            read: read_capped(path, TRACKER_FILE_CAP),
            now_unix: unix_now(),
        })
    }

    /// Read what the event log gained and feed it to the engine.
    fn read_events(&mut self) {
        self.open_pipe();
        loop {
            let Some(tail) = self.tail.as_mut() else {
                return;
            };
            match tail.read() {
                Ok(Some(r)) => {
                    if let Some(why) = r.restarted {
                        self.feed(Input::TrackerRestarted { why });
                    }
                    let more = r.more;
                    if !r.lines.is_empty() || Some(r.cursor) != self.engine.memory().cursor {
                        self.feed(Input::TrackerLines {
                            lines: r.lines,
                            cursor: r.cursor,
                        });
                    }
                    if !more {
                        return;
                    }
                }
                Ok(None) => {
                    if tail.first_missing() {
                        tracing::warn!(project = %self.settings.project.name, "tracker event log {} does not exist (yet); waiting for it", tail.path().display());
                    }
                    return;
                }
                Err(e) => {
                    tracing::error!(project = %self.settings.project.name, "cannot read the tracker event log {}: {e}", tail.path().display());
                    return;
                }
            }
        }
    }

    /// Switch to stream mode if the event path is (now) a named pipe.
    fn open_pipe(&mut self) {
        let Some(path) = self.settings.events.path.clone() else {
            return;
        };
        if self.pipe.is_some() {
            return;
        }
        match PipeTail::open(&path) {
            Ok(Some(pipe)) => {
                tracing::info!(project = %self.settings.project.name, "tracker events: reading the named pipe {} as a stream", path.display());
                self.pipe = Some(pipe);
                self.tail = None;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::error!(project = %self.settings.project.name, "cannot open the tracker event pipe {}: {e}", path.display());
            }
        }
    }

    /// Drain the tracker's named pipe.
    fn read_pipe(&mut self) {
        let Some(pipe) = self.pipe.as_mut() else {
            return;
        };
        match pipe.read() {
            Ok(lines) if !lines.is_empty() => {
                let cursor = self.engine.memory().cursor.unwrap_or_default();
                self.feed(Input::TrackerLines { lines, cursor });
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(project = %self.settings.project.name, "cannot read the tracker event pipe {}: {e}", pipe.path().display());
            }
        }
    }

    fn on_outcome(&mut self, outcome: Outcome) {
        self.background = self.background.saturating_sub(1);
        let input = match outcome.result {
            Ok(()) => Input::Delivered {
                session: outcome.session,
                seq: outcome.seq,
            },
            Err(why) => Input::Undeliverable {
                session: outcome.session,
                seq: outcome.seq,
                why,
            },
        };
        self.feed(input);
    }

    fn persist(&mut self, record: &crate::core::record::Record) {
        match self.store.append(record) {
            Ok(()) => {
                if self.store_failing {
                    self.store_failing = false;
                    tracing::info!(project = %self.settings.project.name, "state directory writable again");
                }
                if self.sync_at.is_none() {
                    self.sync_at = Some(Instant::now() + self.settings.state.sync_interval);
                }
            }
            Err(e) => {
                // Keep working from memory: a wake-up that cannot be recorded
                // is still delivered (at-least-once allows a repeat after a
                // crash; silence would lose it).
                if !self.store_failing {
                    self.store_failing = true;
                    tracing::error!(project = %self.settings.project.name, "cannot record state: {e}; continuing from memory, a crash now may repeat prompts");
                }
            }
        }
    }

    fn sync(&mut self) {
        self.sync_at = None;
        if !self.store.needs_sync() {
            return;
        }
        if let Ok(file) = self.store.sync_handle() {
            // Off the event loop: fdatasync costs milliseconds.
            tokio::task::spawn_blocking(move || {
                if let Err(e) = file.sync_data() {
                    tracing::error!("fdatasync of the journal failed: {e}");
                }
            });
        }
        if self.store.journal_bytes() > self.settings.state.compact_bytes {
            self.compact();
        }
    }

    fn compact(&mut self) {
        if let Err(e) = self.store.compact(self.engine.memory()) {
            if !self.store_failing {
                self.store_failing = true;
                tracing::error!(project = %self.settings.project.name, "cannot write the state snapshot: {e}");
            }
        }
    }

    fn on_seen(&mut self, seen: Seen) {
        let reshaped = self.watch.on_dir_event(&seen);
        // A root that changed how it is watched (a new session directory
        // past the watch limit, a root deleted or appearing) says so.
        for (path, mode) in self.watch.take_changes() {
            self.log_mode(&path, &mode);
        }
        if reshaped {
            self.rescan();
        }
        let (path, change) = match seen {
            Seen::Rescan => {
                tracing::warn!(project = %self.settings.project.name, "inotify lost events (its queue overflowed, or it reported an error)");
                return self.rescan();
            }
            Seen::DirCreated(p) => {
                // A new session directory may already hold a plan and a FIFO.
                if let Some(session) = p.file_name().and_then(|n| n.to_str()) {
                    if p.parent() == Some(self.settings.sessions.dir.as_path()) {
                        let session = session.to_string();
                        let plan = p.join("plan");
                        self.feed(Input::Changed {
                            path: plan,
                            change: Change::Appeared,
                        });
                        self.feed(Input::SessionActivity { session });
                    }
                }
                return;
            }
            Seen::Opened(p) => {
                if let Some(session) = self.watch.enqueue_session(&p) {
                    self.feed(Input::SessionActivity { session });
                }
                return;
            }
            Seen::Closed(p) => (p, Change::Closed),
            Seen::MovedIn(p) => (p, Change::Appeared),
            Seen::Modified(p) => (p, Change::Modified),
            Seen::Gone(p) => (p, Change::Gone),
        };
        if let Some(session) = self.watch.enqueue_session(&path) {
            if change != Change::Gone {
                self.feed(Input::SessionActivity { session });
            }
            return;
        }
        if self.settings.events.path.as_deref() == Some(path.as_path()) {
            if change != Change::Gone {
                self.read_events();
            }
            return;
        }
        if self.settings.beads.issues_jsonl.as_deref() == Some(path.as_path()) {
            // An export rewrites the file whole: read it once it is closed
            // or renamed into place, not mid-write.
            if matches!(change, Change::Closed | Change::Appeared) {
                if let Some(input) = self.read_beads() {
                    self.feed(input);
                }
            }
            return;
        }
        self.feed(Input::Changed { path, change });
    }

    /// Say how a root is watched.
    fn log_mode(&self, path: &Path, mode: &RootMode) {
        let project = &self.settings.project.name;
        match mode {
            RootMode::Inotify => {
                tracing::info!(project = %project, "watching {} with inotify", path.display())
            }
            RootMode::Polled(why) => {
                tracing::warn!(project = %project, "polling {} every {:?}: {why}", path.display(), self.settings.events.poll_interval)
            }
            RootMode::Missing(a) => {
                tracing::warn!(project = %project, "{} does not exist yet; watching {} for it", path.display(), a.display())
            }
        }
    }

    /// Read everything again: plans, tracker mounts, beads, the event log.
    fn rescan(&mut self) {
        tracing::info!(project = %self.settings.project.name, "rescanning every root");
        self.scan();
    }

    fn scan(&mut self) {
        let paths = self.watch.list();
        self.feed(Input::Listed {
            paths,
            read_all: true,
        });
        if self.settings.events.path.is_some() {
            for mount in self.settings.events.mounts.clone() {
                let input = self.read_mount(mount);
                self.feed(input);
            }
        }
        if let Some(input) = self.read_beads() {
            self.feed(input);
        }
        self.read_events();
    }

    /// The one-line summary for `STATUS=`.
    fn summary(&self) -> String {
        let mem = self.engine.memory();
        let mut s = format!(
            "{}, {} pending",
            count(self.engine.plan_count(), "plan"),
            count(mem.pending_total(), "prompt")
        );
        let invalid = self.engine.invalid_plans();
        if invalid > 0 {
            s.push_str(&format!(", {invalid} invalid"));
        }
        let failing = self.engine.failing_count();
        if failing > 0 {
            s.push_str(&format!(", {} unreachable", count(failing, "session")));
        }
        for (path, mode) in self.watch.modes() {
            match mode {
                RootMode::Polled(why) => {
                    s.push_str(&format!("; polling {} ({why})", path.display()))
                }
                RootMode::Missing(_) => s.push_str(&format!("; waiting for {}", path.display())),
                RootMode::Inotify => {}
            }
        }
        if self.store_failing {
            s.push_str("; STATE NOT PERSISTED");
        }
        s
    }

    /// `READY=1` with the current `STATUS=` in the same datagram, so the
    /// status is in place when `systemctl start`/`reload` returns.
    fn ready(&mut self) {
        let s = self.summary();
        self.notifier.ready_with_status(&s);
        self.status = s;
    }

    /// Send `STATUS=` when the summary changed. What it is made of is
    /// compared first (a handful of counters), so the string is only built
    /// when it may differ — this runs on every loop turn, the wake path too.
    fn update_status(&mut self) {
        if !self.notifier.is_enabled() {
            return;
        }
        let key = [
            self.engine.plan_count(),
            self.engine.memory().pending_total(),
            self.engine.invalid_plans(),
            self.engine.failing_count(),
            self.watch.generation(),
            usize::from(self.store_failing),
        ];
        if key == self.status_key {
            return;
        }
        self.status_key = key;
        let s = self.summary();
        if s != self.status {
            self.notifier.status(&s);
            self.status = s;
        }
    }

    /// SIGHUP: re-read the configuration; keep the old one if the new one is
    /// invalid.
    fn reload(&mut self, load: &dyn Fn() -> Result<Settings, String>) -> Option<WatchEvents> {
        self.notifier.reloading();
        let mut replaced = None;
        let project = self.settings.project.name.clone();
        match load().and_then(|s| check_templates(&s).map(|()| s)) {
            Err(e) => {
                tracing::error!(project = %project, "reload failed, keeping the running configuration: {e}");
            }
            Ok(new) if new == self.settings => {
                tracing::info!(project = %project, "reload: configuration unchanged");
            }
            Ok(new) => {
                if new.state.dir != self.settings.state.dir {
                    tracing::warn!(project = %project, "reload: state.dir changed; it takes effect at the next restart");
                }
                if new.log != self.settings.log {
                    tracing::warn!(project = %project, "reload: [log] changed; it takes effect at the next restart");
                }
                let roots_changed = new.project.plan_dir != self.settings.project.plan_dir
                    || new.sessions.dir != self.settings.sessions.dir
                    || new.events.path != self.settings.events.path
                    || new.beads.issues_jsonl != self.settings.beads.issues_jsonl
                    || new.sessions.enqueue != self.settings.sessions.enqueue
                    || new.sessions.session_plans != self.settings.sessions.session_plans;
                if roots_changed {
                    match Watch::new(&new.sessions.enqueue, new.sessions.session_plans, 8192) {
                        Ok((watch, events)) => {
                            self.watch = watch;
                            add_roots(&mut self.watch, &new);
                            self.watch.poll();
                            for (path, mode) in self.watch.take_changes() {
                                self.log_mode(&path, &mode);
                            }
                            replaced = Some(events);
                        }
                        Err(e) => {
                            tracing::error!(project = %project, "reload: cannot watch the new roots, keeping the old configuration: {e}");
                            self.ready();
                            return None;
                        }
                    }
                }
                self.deliverer.sessions_dir = new.sessions.dir.clone();
                self.deliverer.enqueue = new.sessions.enqueue.clone();
                self.deliverer.framing = framing(&new);
                if new.events.path != self.settings.events.path {
                    self.tail = new.events.path.as_ref().map(|p| Tail::new(p, None));
                }
                self.engine.reconfigure(engine_config(&new));
                self.settings = new;
                tracing::info!(project = %project, "configuration reloaded");
                self.rescan();
            }
        }
        self.ready();
        replaced
    }
}

/// Run the daemon until SIGTERM or SIGINT. `load` re-reads the
/// configuration on SIGHUP.
pub async fn run(
    settings: Settings,
    load: Box<dyn Fn() -> Result<Settings, String>>,
) -> Result<(), DaemonError> {
    check_templates(&settings).map_err(DaemonError::Runtime)?;
    let project = settings.project.name.clone();
    let (store, memory, report) = Store::open(&settings.state.dir).map_err(DaemonError::Store)?;
    if report.torn_tail {
        tracing::warn!(project = %project, "the journal ended in a torn record (a crash mid-write); it was skipped");
    }
    if !report.bad_lines.is_empty() {
        tracing::error!(project = %project, "journal lines {:?} could not be read and were skipped", report.bad_lines);
    }
    let first_start = memory.as_ref().is_none_or(|m| !m.baselined);
    let engine = Engine::new(engine_config(&settings), memory);
    let (mut watch, mut events) = Watch::new(
        &settings.sessions.enqueue,
        settings.sessions.session_plans,
        8192,
    )
    .map_err(|e| DaemonError::Watch(e.to_string()))?;
    add_roots(&mut watch, &settings);
    // Prime the poller so its first round reports changes, not everything.
    watch.poll();
    let (outcomes_tx, mut outcomes) = mpsc::unbounded_channel::<Outcome>();
    let deliverer = Deliverer {
        sessions_dir: settings.sessions.dir.clone(),
        enqueue: settings.sessions.enqueue.clone(),
        framing: framing(&settings),
        outcomes: outcomes_tx,
    };
    let mut sigterm =
        signal(SignalKind::terminate()).map_err(|e| DaemonError::Runtime(e.to_string()))?;
    let mut sigint =
        signal(SignalKind::interrupt()).map_err(|e| DaemonError::Runtime(e.to_string()))?;
    let mut sighup =
        signal(SignalKind::hangup()).map_err(|e| DaemonError::Runtime(e.to_string()))?;

    let mut d = Daemon {
        settings,
        engine,
        store,
        watch,
        deliverer,
        notifier: Notifier::from_env(),
        started: Instant::now(),
        sync_at: None,
        store_failing: false,
        status: String::new(),
        status_key: [usize::MAX; 6],
        background: 0,
        tail: None,
        pipe: None,
    };
    if let Some(path) = d.settings.events.path.clone() {
        d.tail = Some(Tail::new(&path, d.engine.memory().cursor));
    }
    for (path, mode) in d.watch.take_changes() {
        d.log_mode(&path, &mode);
    }
    // Start-up reconcile: every plan, mount and issue is read and diffed
    // against the memory (on a first start: recorded as the baseline).
    d.scan();
    d.feed(Input::StartupDone);
    if first_start {
        tracing::info!(project = %project, "first start: state directory {} created", d.store.dir().display());
    }
    d.compact();
    tracing::info!(project = %project, "ready: {}", d.summary());
    d.ready();

    let watchdog = d.notifier.watchdog_interval();
    let mut watchdog_at = watchdog.map(|w| Instant::now() + w);
    let mut poll_at = Instant::now() + d.settings.events.poll_interval;
    loop {
        // A reload that moved the roots brings a new watcher's receiver.
        let mut replaced = None;
        let deadline = d
            .engine
            .poll_timeout()
            .and_then(|t| d.started.checked_add(t));
        let polling = d.watch.polling();
        tokio::select! {
            biased;
            _ = sigterm.recv() => break,
            _ = sigint.recv() => break,
            _ = sighup.recv() => replaced = d.reload(&*load),
            // The watchdog is fed from the loop itself: a stalled loop
            // misses it and systemd restarts the service.
            _ = tokio::time::sleep_until(watchdog_at.unwrap_or_else(Instant::now)), if watchdog_at.is_some() => {
                d.notifier.watchdog();
                watchdog_at = watchdog.map(|w| Instant::now() + w);
            }
            seen = events.rx.recv() => {
                match seen {
                    Some(seen) => {
                        d.on_seen(seen);
                        // Drain what else is queued before re-arming timers,
                        // but a bounded batch, so signals and timers are
                        // looked at between batches of a flood.
                        for _ in 0..DRAIN_BATCH {
                            let Ok(seen) = events.rx.try_recv() else { break };
                            d.on_seen(seen);
                        }
                    }
                    None => return Err(DaemonError::Watch("the inotify thread stopped".into())),
                }
            }
            _ = events.wake.notified() => {
                if events.overflowed.swap(false, Ordering::SeqCst) {
                    tracing::warn!(project = %project, "event channel overflowed; rescanning so nothing is missed");
                    d.rescan();
                }
            }
            Some(outcome) = outcomes.recv() => d.on_outcome(outcome),
            ready = async {
                match &d.pipe {
                    Some(pipe) => pipe.readable().await,
                    None => std::future::pending().await,
                }
            }, if d.pipe.is_some() => {
                match ready {
                    Ok(()) => d.read_pipe(),
                    Err(e) => {
                        tracing::error!(project = %project, "tracker event pipe: {e}; no longer reading it");
                        d.pipe = None;
                    }
                }
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                d.feed(Input::Tick);
            }
            _ = tokio::time::sleep_until(poll_at), if polling => {
                poll_at = Instant::now() + d.settings.events.poll_interval;
                for seen in d.watch.poll() {
                    d.on_seen(seen);
                }
            }
            _ = tokio::time::sleep_until(d.sync_at.unwrap_or_else(Instant::now)), if d.sync_at.is_some() => {
                d.sync();
            }
        }
        if let Some(new) = replaced {
            events = new;
        }
        if events.overflowed.swap(false, Ordering::SeqCst) {
            tracing::warn!(project = %project, "event channel overflowed; rescanning so nothing is missed");
            d.rescan();
        }
        d.update_status();
    }

    // Drain: finish deliveries already being written, then persist.
    d.notifier.stopping();
    tracing::info!(project = %project, "stopping: draining and persisting state");
    let drain_until = Instant::now() + Duration::from_secs(2);
    while d.background > 0 {
        match tokio::time::timeout_at(drain_until, outcomes.recv()).await {
            Ok(Some(outcome)) => d.on_outcome(outcome),
            _ => break,
        }
    }
    d.compact();
    if let Ok(file) = d.store.sync_handle() {
        let _ = file.sync_data();
    }
    tracing::info!(project = %project, "stopped: {}", d.summary());
    Ok(())
}
