//! `reveille run`: the event loop that drives the engine.
//!
//! One task, one thread. It selects over inotify events, background
//! delivery outcomes, the engine's next deadline, the poll timer (only while
//! some root is polled), the group-commit timer (only while records are
//! unsynced), the watchdog (only under systemd with `WatchdogSec`) and
//! signals — so an idle daemon on inotify roots sleeps in `epoll_wait` until
//! something happens. Effects are applied in order, depth-first: a record is
//! in the journal before the prompt that depends on it is written.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use signal_hook::consts::{SIGINT, SIGTERM};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::{self, engine_config, Settings};
use crate::core::driver::{drive, World};
use crate::core::effect::{Delivery, Level, Log, Spawn};
use crate::core::engine::{Engine, EngineConfig};
use crate::core::input::{self, Change, FileRead, Input, Undeliverable};
use crate::core::record::{ChildState, Record};
use crate::core::session::check_name;
use crate::core::source::Source;
use crate::shell::checklists::{self, Claim};
use crate::shell::deliver::{Deliverer, Outcome, Reached};
use crate::shell::logging;
use crate::shell::ollie::{self, Submitted};
use crate::shell::read::{read_capped, read_fresh, PlanFiles};
use crate::shell::reminders;
use crate::shell::sessions::{SessionTree, TreeChange};
use crate::shell::spawn::Spawner;
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
    let plan = l.plan.as_ref().map(Source::journal_name);
    macro_rules! ev {
        ($lvl:expr) => {
            tracing::event!(
                $lvl,
                project = %project,
                plan = plan.as_deref(),
                step = l.step.as_deref(),
                session = l.session.as_deref(),
                parent = l.parent.as_deref(),
                mount = l.mount.as_deref(),
                file = l.file.as_deref(),
                line = l.line.map(|n| n as u64),
                reminder = l.reminder,
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

/// `<beads_root>/<mount>/ready`. Mount names come from configuration or
/// from events, where they were validated as one path component.
fn mount_read(settings: &Settings, mount: &str) -> (FileRead, bool) {
    match check_name(mount) {
        Ok(()) => read_fresh(
            &settings.events.beads_root.join(mount).join("ready"),
            TRACKER_FILE_CAP,
            settings.project.settle,
        ),
        Err(why) => (FileRead::Failed(format!("mount name {why}")), false),
    }
}

/// `<beads_root>/<mount>/list`, where 9beads keeps a claimed bead's
/// assignee. Read whole at once: a synthetic file has no half-written
/// state, and a claim is told from it at most once.
fn mount_list_read(settings: &Settings, mount: &str) -> FileRead {
    match check_name(mount) {
        Ok(()) => read_capped(
            &settings.events.beads_root.join(mount).join("list"),
            TRACKER_FILE_CAP,
        ),
        Err(why) => FileRead::Failed(format!("mount name {why}")),
    }
}

fn beads_read(settings: &Settings) -> Option<(FileRead, i64)> {
    let path = settings.beads.issues_jsonl.as_ref()?;
    Some((read_capped(path, TRACKER_FILE_CAP), unix_now()))
}

/// Say how a prompt reached its session: for an ollie-9p session,
/// whether it woke an idle agent or queued behind a running turn.
fn log_reached(project: &str, session: &str, parent: Option<&str>, step: &str, reached: &Reached) {
    let Reached::Submitted(how) = reached else {
        return;
    };
    match how {
        Submitted::Woke => {
            tracing::info!(project = %project, session = %session, parent = parent, step = %step, "woke idle session {session} for {step}")
        }
        Submitted::WokeUnconfirmed => {
            tracing::info!(project = %project, session = %session, parent = parent, step = %step, "submitted {step} to idle session {session}; its turn was not seen starting within {:?}", ollie::CONFIRM_TIMEOUT)
        }
        Submitted::Queued(state) => {
            tracing::info!(project = %project, session = %session, parent = parent, step = %step, "queued {step} behind the running turn of {session} ({state})")
        }
        Submitted::StateUnknown => {
            tracing::info!(project = %project, session = %session, parent = parent, step = %step, "submitted {step} to session {session} (its state could not be read)")
        }
    }
}

/// The daemon's side of the driver: the journal, the files, the FIFOs.
/// It borrows the daemon's parts beside the engine, so the engine and the
/// world it drives are two disjoint borrows.
struct Carry<'a> {
    settings: &'a Settings,
    store: &'a mut Store,
    sync_at: &'a mut Option<Instant>,
    store_failing: &'a mut bool,
    watch: &'a Watch,
    deliverer: &'a Deliverer,
    spawner: &'a Spawner,
    background: &'a mut usize,
    plan_files: &'a mut PlanFiles,
}

impl World for Carry<'_> {
    fn record(&mut self, record: &Record) {
        self.persist(record);
    }

    fn log(&mut self, log: Log) {
        emit(&self.settings.project.name, &log);
    }

    fn read_plan(&mut self, path: &Path, config: &EngineConfig) -> (FileRead, bool) {
        self.plan_files
            .read(path, config.max_plan_bytes, config.settle)
    }

    fn list(&mut self) -> Vec<PathBuf> {
        self.watch.list()
    }

    fn read_mount(&mut self, mount: &str) -> (FileRead, bool) {
        mount_read(self.settings, mount)
    }

    fn read_mount_list(&mut self, mount: &str) -> FileRead {
        mount_list_read(self.settings, mount)
    }

    fn read_beads(&mut self) -> Option<(FileRead, i64)> {
        beads_read(self.settings)
    }

    fn spawn(&mut self, spawn: &Spawn) -> Option<Input> {
        self.spawner.spawn(spawn);
        None
    }

    fn reap(&mut self, child: &str) {
        self.spawner.reap(child, &self.settings.project.name);
    }

    fn deliver(&mut self, d: &Delivery) -> Option<Result<input::Reached, Undeliverable>> {
        // Every record so far is written before the prompt is.
        self.flush();
        let outcome = self.deliverer.deliver(d);
        match &outcome {
            None => *self.background += 1,
            Some(Ok(reached)) => log_reached(
                &self.settings.project.name,
                &d.session,
                d.parent.as_deref(),
                &d.step,
                reached,
            ),
            Some(Err(_)) => {}
        }
        outcome.map(|r| r.map(|r| r.core()))
    }
}

impl Carry<'_> {
    fn persist(&mut self, record: &Record) {
        if let Err(e) = self.store.stage(record) {
            tracing::error!(project = %self.settings.project.name, "cannot encode a state record: {e}");
        }
        if self.store.staged_full() {
            self.flush();
        }
    }

    /// Write the staged records (one `write(2)`): before every delivery and
    /// at the end of every input.
    fn flush(&mut self) {
        if !self.store.has_staged() {
            return;
        }
        match self.store.flush() {
            Ok(()) => {
                if *self.store_failing {
                    *self.store_failing = false;
                    tracing::info!(project = %self.settings.project.name, "state directory writable again");
                }
                if self.sync_at.is_none() {
                    *self.sync_at = Some(Instant::now() + self.settings.state.sync_interval);
                }
            }
            Err(e) => {
                // Keep working from memory: a wake-up that cannot be recorded
                // is still delivered (at-least-once allows a repeat after a
                // crash; silence would lose it).
                if !*self.store_failing {
                    *self.store_failing = true;
                    tracing::error!(project = %self.settings.project.name, "cannot record state: {e}; continuing from memory, a crash now may repeat prompts");
                }
            }
        }
    }
}

/// The running daemon.
struct Daemon {
    settings: Settings,
    engine: Engine,
    store: Store,
    watch: Watch,
    deliverer: Deliverer,
    /// Creates and kills child sessions (fan-out).
    spawner: Spawner,
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
    /// The ollie-9p session tree, when the sessions root is one: session
    /// states from its `idx`, and the session checklists to read.
    tree: Option<SessionTree>,
    /// Whether the last read of the tree's `idx` failed (said once).
    tree_failing: bool,
    /// This instance's claim on the session checklists of its sessions
    /// directory (held for the daemon's life), when it wants them.
    checklists: Option<Claim>,
    /// The plan files read last, held open for their next rewrite.
    plan_files: PlanFiles,
    /// What `reminders.json` last held, so it is written only on change.
    reminders_written: Vec<u8>,
    /// What one read of inotify reported, kept between reads.
    seen: Vec<Seen>,
}

impl Daemon {
    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// Feed one input and carry out everything that follows from it.
    fn feed(&mut self, input: Input) {
        crate::shell::ignored::report(
            &self.settings.project.plan_dir,
            &self.settings.project.name,
            &input,
        );
        let now = self.now();
        let mut world = Carry {
            settings: &self.settings,
            store: &mut self.store,
            sync_at: &mut self.sync_at,
            store_failing: &mut self.store_failing,
            watch: &self.watch,
            deliverer: &self.deliverer,
            spawner: &self.spawner,
            background: &mut self.background,
            plan_files: &mut self.plan_files,
        };
        drive(&mut self.engine, &mut world, now, input);
        world.flush();
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
                    if tail.first_missing() && self.settings.events.path_set {
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
            Ok(reached) => {
                let parent = self.engine.memory().children.get(&outcome.session);
                log_reached(
                    &self.settings.project.name,
                    &outcome.session,
                    parent.map(|c| c.parent.as_str()),
                    &outcome.step,
                    &reached,
                );
                if matches!(reached, Reached::Submitted(Submitted::Queued(_))) {
                    // Before `Delivered`, which would offer the next prompt.
                    self.feed(Input::QueuedBehindTurn {
                        session: outcome.session.clone(),
                    });
                }
                Input::Delivered {
                    session: outcome.session,
                    seq: outcome.seq,
                    reached: reached.core(),
                }
            }
            Err(why) => Input::Undeliverable {
                session: outcome.session,
                seq: outcome.seq,
                why,
            },
        };
        self.feed(input);
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
                tracing::warn!(project = %self.settings.project.name, "inotify lost events (its queue overflowed); rescanning so nothing is missed");
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
                // A reader's open matters only to a lane backing off after a
                // failed write (whether or not a prompt waits in it right
                // now: one may be announced a moment later); most opens are
                // the daemon's own deliveries echoing back.
                if let Some(session) = self.watch.enqueue_session(&p) {
                    if self.engine.backing_off(&session) {
                        self.feed(Input::SessionActivity { session });
                    }
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
                if let Some((read, now_unix)) = beads_read(&self.settings) {
                    self.feed(Input::BeadsRead { read, now_unix });
                }
            }
            return;
        }
        self.feed(Input::Changed { path, change });
    }

    /// One read of the ollie-9p session tree's `idx` (recognised the first
    /// time it is there), and what follows from it.
    fn poll_sessions(&mut self) {
        let project = self.settings.project.name.clone();
        if self.tree.is_none() {
            self.tree = SessionTree::detect(&self.settings.sessions.dir);
            let Some(_) = &self.tree else { return };
            tracing::info!(project = %project, "following ollie-9p session states through {} every {:?}", self.settings.sessions.dir.join("idx").display(), self.settings.sessions.state_poll);
            self.watch.index_sessions(true);
        }
        let Some(tree) = self.tree.as_mut() else {
            return;
        };
        match tree.poll(
            self.settings.sessions.session_plans,
            std::time::SystemTime::now(),
        ) {
            Ok(changes) => {
                if self.tree_failing {
                    self.tree_failing = false;
                    tracing::info!(project = %project, "session states readable again");
                }
                if !changes.is_empty() {
                    self.write_sessions_file();
                }
                for change in changes {
                    self.on_tree_change(change);
                }
                self.write_reminders_file();
                self.children_unlisted();
            }
            Err(e) => {
                if !self.tree_failing {
                    self.tree_failing = true;
                    tracing::warn!(project = %project, "cannot read {}: {e}; session states unknown until it can be read", self.settings.sessions.dir.join("idx").display());
                }
            }
        }
    }

    /// A child confirmed (seen in `idx` by its create) and missing from a
    /// later read of `idx` is gone, even if no poll ever listed it — one
    /// killed within a poll of its creation would otherwise never be seen
    /// to go, and its step never handed back.
    fn children_unlisted(&mut self) {
        let Some(tree) = &self.tree else { return };
        let gone: Vec<String> = self
            .engine
            .memory()
            .children
            .iter()
            .filter(|(id, c)| {
                matches!(c.state, ChildState::Working | ChildState::Done)
                    && !tree.sessions().contains_key(*id)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for session in gone {
            self.feed(Input::SessionState {
                session,
                state: None,
            });
        }
    }

    fn on_tree_change(&mut self, change: TreeChange) {
        let project = self.settings.project.name.clone();
        // A child reveille made names its parent (`PARENT=`).
        let parent_of = |d: &Daemon, session: &str| {
            d.engine
                .memory()
                .children
                .get(session)
                .map(|c| c.parent.clone())
        };
        match change {
            TreeChange::Appeared(session) => {
                let state = self
                    .tree
                    .as_ref()
                    .and_then(|t| t.sessions().get(&session))
                    .map(|o| o.state.clone());
                let parent = parent_of(self, &session);
                tracing::debug!(project = %project, session = %session, parent = parent.as_deref(), "session {session} appeared");
                self.feed(Input::SessionState { session, state });
            }
            TreeChange::Gone(session) => {
                let pending = self
                    .engine
                    .memory()
                    .outbox
                    .get(&session)
                    .map_or(0, |q| q.len());
                let parent = parent_of(self, &session);
                tracing::info!(project = %project, session = %session, parent = parent.as_deref(), "session {session} is gone (killed, or renamed); {pending} undelivered prompt(s) kept in its outbox");
                self.feed(Input::SessionState {
                    session,
                    state: None,
                });
            }
            TreeChange::State { session, from, to } => {
                let parent = parent_of(self, &session);
                tracing::debug!(project = %project, session = %session, parent = parent.as_deref(), "session {session}: {from} → {to}");
                self.feed(Input::SessionState {
                    session,
                    state: Some(to),
                });
            }
            TreeChange::PlanChanged(path) => self.feed(Input::Changed {
                path,
                change: Change::Closed,
            }),
        }
    }

    /// `sessions.json` in the state directory: every session's state and
    /// since when, for `reveille status` (a snapshot for people, not state:
    /// written whole, atomically, never read back by the daemon).
    fn write_sessions_file(&self) {
        let Some(tree) = &self.tree else { return };
        let path = self.store.dir().join("sessions.json");
        let tmp = self.store.dir().join("sessions.json.tmp");
        let Ok(text) = serde_json::to_vec_pretty(tree.sessions()) else {
            return;
        };
        if std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .is_err()
        {
            let _ = std::fs::remove_file(&tmp);
        }
    }

    /// `reminders.json`: the open announced items, their sessions' states
    /// and reminders, for `reveille status` (a view, never read back).
    fn write_reminders_file(&mut self) {
        let views = self.engine.reminders();
        let observed = self.tree.as_ref().map(|t| t.sessions());
        let items = reminders::items(views, self.now(), SystemTime::now(), observed);
        reminders::write(self.store.dir(), &items, &mut self.reminders_written);
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
            RootMode::Missing(_) if self.settings.events.is_unchosen_log(path) => {
                tracing::info!(project = %project, "no tracker yet: {} (the default [events] path) does not exist; it is read if it appears", path.display())
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
        let events = &self.settings.events;
        if events
            .path
            .as_ref()
            .is_some_and(|p| !events.is_unchosen_log(p) || p.exists())
        {
            for mount in self.settings.events.mounts.clone() {
                let (read, fresh) = mount_read(&self.settings, &mount);
                self.feed(Input::MountRead { mount, read, fresh });
            }
        }
        if let Some((read, now_unix)) = beads_read(&self.settings) {
            self.feed(Input::BeadsRead { read, now_unix });
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
                // A tracker never configured is no news (said once at start).
                RootMode::Missing(_) if self.settings.events.is_unchosen_log(&path) => {}
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
    /// Session checklists of reloaded settings: kept if this instance owns
    /// those of the same directory, else claimed again (the owner may have
    /// stopped since).
    fn claim_checklists(&mut self, mut new: Settings) -> Settings {
        let owned = matches!(self.checklists, Some(Claim::Owned(_)));
        if new.sessions.session_plans && !(owned && new.sessions.dir == self.settings.sessions.dir)
        {
            self.checklists = checklists::apply(&mut new);
        }
        new
    }

    fn reload(&mut self, load: &dyn Fn() -> Result<Settings, String>) -> Option<WatchEvents> {
        self.notifier.reloading();
        let mut replaced = None;
        let project = self.settings.project.name.clone();
        match load().map(|s| self.claim_checklists(s)) {
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
                    let fresh = Watch::new(&new.sessions.enqueue, new.sessions.session_plans)
                        .and_then(|w| w.events().map(|e| (w, e)));
                    match fresh {
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
                self.deliverer.framing = new.sessions.framing;
                self.deliverer.submit = new.sessions.delivery == config::Delivery::Auto;
                self.spawner.sessions_dir = new.sessions.dir.clone();
                self.spawner.backend = new.fanout.backend.clone();
                self.spawner.model = new.fanout.model.clone();
                if new.sessions.dir != self.settings.sessions.dir {
                    self.tree = None;
                }
                if new.events.path != self.settings.events.path {
                    self.tail = new.events.path.as_ref().map(|p| Tail::new(p, None));
                }
                self.engine
                    .reconfigure(engine_config(&new, logging::engine_level()));
                self.settings = new;
                tracing::info!(project = %project, "configuration reloaded");
                self.rescan();
            }
        }
        self.ready();
        replaced
    }
}

/// The signals the daemon answers. A first SIGTERM or SIGINT stops the
/// loop and starts the drain; a second one, while the drain still waits for
/// background writes, exits at once (status 128 + signal), as users of
/// daemons expect when they press Ctrl-C twice.
struct Signals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

impl Signals {
    fn install() -> Result<Signals, DaemonError> {
        let stopping = Arc::new(AtomicBool::new(false));
        for (sig, status) in [(SIGTERM, 128 + SIGTERM), (SIGINT, 128 + SIGINT)] {
            // The order matters: the exit checks the flag before this
            // signal sets it, so only a second signal exits.
            signal_hook::flag::register_conditional_shutdown(sig, status, stopping.clone())
                .and_then(|_| signal_hook::flag::register(sig, stopping.clone()))
                .map_err(|e| DaemonError::Runtime(e.to_string()))?;
        }
        let stream = |kind| signal(kind).map_err(|e| DaemonError::Runtime(e.to_string()));
        Ok(Signals {
            term: stream(SignalKind::terminate())?,
            int: stream(SignalKind::interrupt())?,
            hup: stream(SignalKind::hangup())?,
        })
    }
}

/// The loop's own deadlines besides the engine's: the watchdog, the poll
/// of polled roots, the session-state poll and the group commit.
struct Clock {
    watchdog: Option<Duration>,
    watchdog_at: Option<Instant>,
    poll_at: Instant,
    states_at: Instant,
}

impl Clock {
    fn new(watchdog: Option<Duration>, poll: Duration) -> Clock {
        let now = Instant::now();
        Clock {
            watchdog,
            watchdog_at: watchdog.map(|w| now + w),
            // The poller was primed when the roots were added.
            poll_at: now + poll,
            states_at: now,
        }
    }

    /// The earliest deadline that applies now.
    fn next(&self, d: &Daemon) -> Option<Instant> {
        let engine = d
            .engine
            .poll_timeout()
            .and_then(|t| d.started.checked_add(t));
        let polling = d.watch.polling().then_some(self.poll_at);
        // Session states, only while the sessions root is a polled mount
        // (an ollie-9p tree); local ones have none to read.
        let states = d
            .watch
            .sessions_polled(&d.settings.sessions.dir)
            .then_some(self.states_at);
        [self.watchdog_at, engine, polling, d.sync_at, states]
            .into_iter()
            .flatten()
            .min()
    }

    /// Everything due at `now`, each moving its own deadline on.
    fn fire(&mut self, d: &mut Daemon, now: Instant) {
        if self.watchdog_at.is_some_and(|t| t <= now) {
            // Fed from the loop itself: a stalled loop misses it and
            // systemd restarts the service.
            d.notifier.watchdog();
            self.watchdog_at = self.watchdog.map(|w| now + w);
        }
        let engine = d
            .engine
            .poll_timeout()
            .and_then(|t| d.started.checked_add(t));
        if engine.is_some_and(|t| t <= now) {
            d.feed(Input::Tick);
        }
        if d.watch.polling() && self.poll_at <= now {
            self.poll_at = now + d.settings.events.poll_interval;
            for seen in d.watch.poll() {
                d.on_seen(seen);
            }
        }
        if d.sync_at.is_some_and(|t| t <= now) {
            d.sync();
        }
        if d.watch.sessions_polled(&d.settings.sessions.dir) && self.states_at <= now {
            self.states_at = now + d.settings.sessions.state_poll;
            d.poll_sessions();
        }
    }
}

/// What the event loop waits on besides the daemon itself.
struct Wakers {
    events: WatchEvents,
    outcomes: mpsc::UnboundedReceiver<Outcome>,
    /// Outcomes of child session creates (`Input::ChildSpawned`).
    spawned: mpsc::UnboundedReceiver<Input>,
    signals: Signals,
}

/// Run the daemon until SIGTERM or SIGINT. `load` re-reads the
/// configuration on SIGHUP.
pub async fn run(
    settings: Settings,
    load: Box<dyn Fn() -> Result<Settings, String>>,
) -> Result<(), DaemonError> {
    let (mut d, mut wakers) = Daemon::build(settings)?;
    d.start_up();
    d.serve(&mut wakers, &*load).await?;
    d.drain(&mut wakers.outcomes).await;
    Ok(())
}

impl Daemon {
    /// Open the state, the watcher and the deliverer, and install the
    /// signal handlers: everything the loop needs, nothing read yet.
    fn build(mut settings: Settings) -> Result<(Daemon, Wakers), DaemonError> {
        let checklists = checklists::apply(&mut settings);
        let project = settings.project.name.clone();
        let (store, memory, report) =
            Store::open(&settings.state.dir).map_err(DaemonError::Store)?;
        if report.torn_tail {
            tracing::warn!(project = %project, "the journal ended in a torn record (a crash mid-write); it was skipped");
        }
        if !report.bad_lines.is_empty() {
            tracing::error!(project = %project, "journal lines {:?} could not be read and were skipped", report.bad_lines);
        }
        let engine = Engine::new(engine_config(&settings, logging::engine_level()), memory);
        let mut watch = Watch::new(&settings.sessions.enqueue, settings.sessions.session_plans)
            .map_err(|e| DaemonError::Watch(e.to_string()))?;
        let events = watch
            .events()
            .map_err(|e| DaemonError::Watch(e.to_string()))?;
        add_roots(&mut watch, &settings);
        // Prime the poller so its first round reports changes, not everything.
        watch.poll();
        let (outcomes_tx, outcomes) = mpsc::unbounded_channel::<Outcome>();
        let deliverer = Deliverer {
            sessions_dir: settings.sessions.dir.clone(),
            enqueue: settings.sessions.enqueue.clone(),
            framing: settings.sessions.framing,
            submit: settings.sessions.delivery == config::Delivery::Auto,
            outcomes: outcomes_tx,
            root: Default::default(),
        };
        let (spawned_tx, spawned) = mpsc::unbounded_channel::<Input>();
        let spawner = Spawner {
            sessions_dir: settings.sessions.dir.clone(),
            backend: settings.fanout.backend.clone(),
            model: settings.fanout.model.clone(),
            outcomes: spawned_tx,
        };
        let signals = Signals::install()?;
        let tail = settings
            .events
            .path
            .as_ref()
            .map(|p| Tail::new(p, engine.memory().cursor));
        let d = Daemon {
            settings,
            engine,
            store,
            watch,
            deliverer,
            spawner,
            notifier: Notifier::from_env(),
            started: Instant::now(),
            sync_at: None,
            store_failing: false,
            status: String::new(),
            status_key: [usize::MAX; 6],
            background: 0,
            tail,
            pipe: None,
            tree: None,
            tree_failing: false,
            checklists,
            plan_files: PlanFiles::default(),
            reminders_written: Vec::new(),
            seen: Vec::new(),
        };
        let wakers = Wakers {
            events,
            outcomes,
            spawned,
            signals,
        };
        Ok((d, wakers))
    }

    /// The start-up reconcile: every plan, mount and issue is read and
    /// diffed against the memory (on a first start: recorded as the
    /// baseline); then `READY=1`.
    fn start_up(&mut self) {
        let project = self.settings.project.name.clone();
        let first_start = self.engine.in_baseline();
        for (path, mode) in self.watch.take_changes() {
            self.log_mode(&path, &mode);
        }
        self.scan();
        self.feed(Input::StartupDone);
        if first_start {
            tracing::info!(project = %project, "first start: state directory {} created", self.store.dir().display());
        }
        self.compact();
        tracing::info!(project = %project, "ready: {}", self.summary());
        self.ready();
    }

    /// The event loop, until SIGTERM or SIGINT.
    async fn serve(
        &mut self,
        w: &mut Wakers,
        load: &dyn Fn() -> Result<Settings, String>,
    ) -> Result<(), DaemonError> {
        let mut clock = Clock::new(
            self.notifier.watchdog_interval(),
            self.settings.events.poll_interval,
        );
        // One timer for every deadline, moved only when the earliest one
        // moves: a fresh timer per deadline per turn of the loop cost a
        // registration and a removal in tokio's timer wheel each.
        let mut timer = Box::pin(tokio::time::sleep(Duration::ZERO));
        let mut timer_at = None;
        loop {
            // A reload that moved the roots brings a new watcher's receiver.
            let mut replaced = None;
            let next = clock.next(self);
            if next != timer_at {
                if let Some(at) = next {
                    timer.as_mut().reset(at);
                }
                timer_at = next;
            }
            tokio::select! {
                biased;
                _ = w.signals.term.recv() => return Ok(()),
                _ = w.signals.int.recv() => return Ok(()),
                _ = w.signals.hup.recv() => replaced = self.reload(load),
                // Before the watcher: a flood keeps it ready turn after
                // turn, and the watchdog must still be fed from the loop.
                () = timer.as_mut(), if timer_at.is_some() => {
                    timer_at = None;
                    clock.fire(self, Instant::now());
                }
                ready = w.events.fd.readable() => {
                    let mut ready = ready.map_err(|e| DaemonError::Watch(e.to_string()))?;
                    if !self.read_watch()? {
                        ready.clear_ready();
                    }
                }
                Some(outcome) = w.outcomes.recv() => self.on_outcome(outcome),
                Some(input) = w.spawned.recv() => self.feed(input),
                ready = async {
                    match &self.pipe {
                        Some(pipe) => pipe.readable().await,
                        None => std::future::pending().await,
                    }
                }, if self.pipe.is_some() => self.on_pipe_ready(ready),
            }
            if let Some(new) = replaced {
                w.events = new;
            }
            self.update_status();
        }
    }

    /// Read and handle what inotify queued, a bounded batch, so signals
    /// and timers are looked at between batches of a flood. Returns false
    /// once the queue is drained.
    fn read_watch(&mut self) -> Result<bool, DaemonError> {
        let mut seen = std::mem::take(&mut self.seen);
        let mut more = true;
        while more && seen.len() < DRAIN_BATCH {
            more = self
                .watch
                .read(&mut seen)
                .map_err(|e| DaemonError::Watch(format!("reading inotify: {e}")))?;
        }
        for s in seen.drain(..) {
            self.on_seen(s);
        }
        self.seen = seen;
        Ok(more)
    }

    fn on_pipe_ready(&mut self, ready: std::io::Result<()>) {
        match ready {
            Ok(()) => self.read_pipe(),
            Err(e) => {
                tracing::error!(project = %self.settings.project.name, "tracker event pipe: {e}; no longer reading it");
                self.pipe = None;
            }
        }
    }

    /// Finish deliveries already being written (briefly), then persist.
    async fn drain(&mut self, outcomes: &mut mpsc::UnboundedReceiver<Outcome>) {
        let project = self.settings.project.name.clone();
        self.notifier.stopping();
        tracing::info!(project = %project, "stopping: draining and persisting state");
        let drain_until = Instant::now() + Duration::from_secs(2);
        while self.background > 0 {
            match tokio::time::timeout_at(drain_until, outcomes.recv()).await {
                Ok(Some(outcome)) => self.on_outcome(outcome),
                _ => break,
            }
        }
        self.compact();
        if let Ok(file) = self.store.sync_handle() {
            let _ = file.sync_data();
        }
        tracing::info!(project = %project, "stopped: {}", self.summary());
    }
}
