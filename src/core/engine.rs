//! The engine: `(now, Input)` in, `Effect`s out.
//!
//! It owns every decision reveille makes — which file is which plan, which
//! steps are ready, what was announced, what is pending for which session and
//! when to retry — and none of the I/O. The shell feeds it inotify events,
//! file contents and delivery outcomes, and carries out the effects in order.
//!
//! Invariants (checked by the property tests):
//! - a step is announced only when it is unchecked and all its dependencies
//!   are checked (reactive mode), and only while its plan is live;
//! - `newly_ready = ready − announced`: each is announced once, in file order,
//!   and leaves the announced set when it is checked or disappears;
//! - a rename that keeps the plan identity never re-announces;
//! - every change to durable memory is emitted as a `Record` before any
//!   effect that depends on it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::effect::{Delivery, Effect, Level, Log};
use super::input::{Change, FileRead, Input};
use super::lifecycle::Lifecycle;
use super::lines::quoted;
use super::name::{classify, FileState, PlanFile};
use super::plan::{parse_plan, Plan, PlanFormat, StepStatus};
use super::prompt;
use super::record::{Item, Memory, Pending, Record};
use super::session::check_name;

/// Complete re-reads of a file that keeps being fresh before it is
/// believed as it is (a writer rewriting it forever, or a clock skewed
/// against the file system's).
const MAX_RECHECKS: u32 = 20;

/// Monotonic time since an arbitrary origin, supplied by the caller.
pub type Now = Duration;

/// Reactive (announce steps as they unblock) or queue (the old fallback:
/// everything at once, in topological order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Reactive,
    Queue,
}

/// Prompt templates, already checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates {
    pub step: String,
    pub done: String,
    pub task: String,
    pub claim: String,
    pub completed: String,
}

impl Default for Templates {
    fn default() -> Templates {
        Templates {
            step: prompt::DEFAULT_STEP.into(),
            done: prompt::DEFAULT_DONE.into(),
            task: prompt::DEFAULT_TASK.into(),
            claim: prompt::DEFAULT_CLAIM.into(),
            completed: prompt::DEFAULT_COMPLETED.into(),
        }
    }
}

/// What the engine needs to know of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Where plan files live (directly in it).
    pub plan_dir: PathBuf,
    /// One directory per session id.
    pub sessions_dir: PathBuf,
    /// Also treat `<sessions_dir>/<id>/plan` as a plan.
    pub session_plans: bool,
    /// Session for plans and tasks with no other route.
    pub default_session: Option<String>,
    pub mode: Mode,
    /// Prompt when every step of a wip plan is checked.
    pub nudge_done: bool,
    /// Larger plan files are refused.
    pub max_plan_bytes: usize,
    /// How long a file modified without a close is left to settle.
    pub settle: Duration,
    /// How long a plan whose file vanished waits for the other half of a
    /// rename before a directory listing decides.
    pub rename_grace: Duration,
    /// First retry delay for an undeliverable prompt; doubles up to `retry_max`.
    pub retry_initial: Duration,
    pub retry_max: Duration,
    /// Pending prompts kept per session; beyond it new wake-ups wait
    /// (unannounced, so nothing is lost) until the outbox drains.
    pub outbox_cap: usize,
    pub templates: Templates,
    /// The tracker mounts of this project; events for others are ignored.
    pub mounts: Vec<String>,
    /// Tracker assignee → session id.
    pub assignees: BTreeMap<String, String>,
    /// Tell a session when a task announced to it was completed elsewhere.
    pub notify_completed: bool,
    /// The beads `issues.jsonl` file name, for prompts (`None`: not watched).
    pub beads_file: Option<String>,
}

impl EngineConfig {
    /// A configuration for tests and `reveille ready`: everything default.
    pub fn new(plan_dir: impl Into<PathBuf>, sessions_dir: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            plan_dir: plan_dir.into(),
            sessions_dir: sessions_dir.into(),
            session_plans: true,
            default_session: None,
            mode: Mode::Reactive,
            nudge_done: true,
            max_plan_bytes: 4 << 20,
            settle: Duration::from_millis(50),
            rename_grace: Duration::from_millis(100),
            retry_initial: Duration::from_millis(50),
            retry_max: Duration::from_secs(2),
            outbox_cap: 1000,
            templates: Templates::default(),
            mounts: Vec::new(),
            assignees: BTreeMap::new(),
            notify_completed: false,
            beads_file: None,
        }
    }
}

/// Where a plan file lives, which decides its identity and routing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    /// A `<stamp>_<uid>--<slug>__<state>.md` in the plan directory.
    Markdown(FileState),
    /// A `*.plan.json` in the plan directory.
    Json,
    /// `<sessions_dir>/<id>/plan`.
    Session(String),
}

/// A path recognised as a plan file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PlanPath {
    /// The source key: `plan:<stamp>_<uid>`, `json:<stem>`, `session:<id>`.
    source: String,
    origin: Origin,
}

/// What the engine knows about one plan.
#[derive(Debug, Clone)]
struct PlanState {
    /// Its file right now.
    path: PathBuf,
    origin: Origin,
    lifecycle: Lifecycle,
    /// What `status` and routing need of the last valid parse; `None` until
    /// the file first parses. The parse itself is not kept: each change is
    /// read and parsed afresh, and 10,000 parsed plans would cost tens of
    /// megabytes for nothing.
    summary: Option<Summary>,
    /// The current parse error, so each distinct error is logged once.
    error: Option<String>,
    /// Whether "no session" was already said for this plan.
    warned_route: bool,
}

/// The little that is kept of a plan's last valid parse.
#[derive(Debug, Clone)]
struct Summary {
    goal: String,
    /// The session named in the file, unvalidated.
    session: Option<String>,
    steps: usize,
    checked: usize,
    /// Ready steps: (label, title).
    ready: Vec<(String, String)>,
}

impl Summary {
    fn of(plan: &Plan) -> Summary {
        Summary {
            goal: plan.goal.clone(),
            session: plan.session.clone(),
            steps: plan.steps.len(),
            checked: plan
                .steps
                .iter()
                .filter(|s| s.status == StepStatus::Checked)
                .count(),
            ready: plan
                .ready()
                .into_iter()
                .map(|i| (plan.steps[i].label.clone(), plan.steps[i].title.clone()))
                .collect(),
        }
    }
}

/// The delivery lane of one session: at most one prompt in flight, retries
/// with backoff, so one stuck session never delays another.
#[derive(Debug, Clone, Default)]
struct Lane {
    inflight: Option<u64>,
    retry_at: Option<Now>,
    backoff: Duration,
    /// The reason of the current failure streak, logged once.
    failing: Option<String>,
    /// Wake-ups refused because the outbox was full (shown in status).
    refused: u64,
}

/// One plan as `status` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PlanView {
    pub source: String,
    pub path: PathBuf,
    pub lifecycle: Lifecycle,
    pub goal: String,
    pub session: Option<String>,
    pub error: Option<String>,
    pub steps: usize,
    pub checked: usize,
    /// Ready steps: (label, title).
    pub ready: Vec<(String, String)>,
}

/// The engine.
pub struct Engine {
    config: EngineConfig,
    /// The durable part, changed only through `Record`s.
    memory: Memory,
    plans: BTreeMap<String, PlanState>,
    lanes: BTreeMap<String, Lane>,
    /// Paths modified without a close, and when to read them.
    settling: BTreeMap<PathBuf, Now>,
    /// Plans whose file vanished, and when to decide by listing.
    vanished: BTreeMap<String, Now>,
    /// Whether a listing was asked for and not answered yet.
    listing: bool,
    /// True from a first start (no memory) until `StartupDone`.
    baseline: bool,
    /// Sessions whose lane may be able to send.
    dirty_lanes: BTreeSet<String>,
    /// Sessions whose outbox hit the cap since the last drain: when they
    /// drain, every plan routed there is reconciled again.
    capped: BTreeSet<String>,
    /// Mounts with tracker events since their ready file was last read.
    dirty_mounts: BTreeSet<String>,
    /// Things said once (unknown event types, unroutable assignees, …).
    said: BTreeSet<String>,
    /// When a deferred beads issue comes due and the file must be judged
    /// again, though it did not change.
    beads_due: Option<Now>,
    /// Line errors of the current issues.jsonl, so a rewrite with the same
    /// broken line does not log it again.
    beads_errors: BTreeSet<String>,
    /// Fresh reads to confirm with a complete re-read: when, and how many
    /// times in a row the file was still fresh.
    rechecks: BTreeMap<PathBuf, (Now, u32)>,
    /// Plans with a current error (kept as a count: `STATUS=` asks for it
    /// on every loop turn).
    invalid: usize,
    /// Tracker task titles by source and id, for claim/completed prompts.
    task_titles: BTreeMap<(String, String), String>,
}

impl Engine {
    /// A new engine. `memory` is what a previous run persisted, or `None` on
    /// the very first start, in which case what is ready at start-up becomes
    /// the baseline instead of being announced.
    pub fn new(config: EngineConfig, memory: Option<Memory>) -> Engine {
        let baseline = memory.as_ref().is_none_or(|m| !m.baselined);
        let mut memory = memory.unwrap_or_default();
        memory.version = Memory::VERSION;
        let dirty_lanes = memory.outbox.keys().cloned().collect();
        Engine {
            config,
            memory,
            plans: BTreeMap::new(),
            lanes: BTreeMap::new(),
            settling: BTreeMap::new(),
            vanished: BTreeMap::new(),
            listing: false,
            baseline,
            dirty_lanes,
            capped: BTreeSet::new(),
            dirty_mounts: BTreeSet::new(),
            said: BTreeSet::new(),
            beads_due: None,
            beads_errors: BTreeSet::new(),
            task_titles: BTreeMap::new(),
            rechecks: BTreeMap::new(),
            invalid: 0,
        }
    }

    /// The durable memory, for snapshots and `status`.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// The configuration in force.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Replace the configuration (SIGHUP reload). Plans are re-read by the
    /// shell afterwards (a `Listed { read_all: true }`), since routes,
    /// templates or the mode may have changed.
    pub fn reconfigure(&mut self, config: EngineConfig) {
        self.config = config;
    }

    /// Whether the first-start baseline is still being taken.
    pub fn in_baseline(&self) -> bool {
        self.baseline
    }

    /// The next instant at which `Tick` has work to do.
    pub fn poll_timeout(&self) -> Option<Now> {
        let settle = self.settling.values().min().copied();
        let vanish = self.vanished.values().min().copied();
        let retry = self.lanes.values().filter_map(|l| l.retry_at).min();
        let recheck = self.rechecks.values().map(|(at, _)| *at).min();
        [settle, vanish, retry, recheck, self.beads_due]
            .into_iter()
            .flatten()
            .min()
    }

    /// Handle one input; the returned effects are to be carried out in order.
    pub fn handle(&mut self, now: Now, input: Input) -> Vec<Effect> {
        let mut fx = Vec::new();
        match input {
            Input::Changed { path, change } => self.on_changed(now, path, change, &mut fx),
            Input::Renamed { from, to } => {
                let moved = match (self.plan_path(&from), self.plan_path(&to)) {
                    (Some(a), Some(b)) => a.source == b.source,
                    _ => false,
                };
                if !moved {
                    self.on_changed(now, from, Change::Gone, &mut fx);
                }
                self.on_changed(now, to, Change::Appeared, &mut fx);
            }
            Input::PlanRead {
                path,
                read,
                complete,
                fresh,
            } => self.on_read(now, path, read, complete, fresh, &mut fx),
            Input::Listed { paths, read_all } => self.on_listed(paths, read_all, &mut fx),
            Input::StartupDone => {
                if self.baseline {
                    self.baseline = false;
                    let n: usize = self.memory.announced.values().map(BTreeMap::len).sum();
                    self.record(Record::Baselined, &mut fx);
                    fx.push(Effect::Log(Log::new(
                        Level::Info,
                        format!("first start: {n} already-ready steps and tasks recorded as the baseline, not announced"),
                    )));
                }
            }
            Input::Delivered { session, seq } => self.on_delivered(session, seq, &mut fx),
            Input::Undeliverable { session, seq, why } => {
                let lane = self.lanes.entry(session.clone()).or_default();
                if lane.inflight == Some(seq) {
                    lane.inflight = None;
                }
                lane.backoff = if lane.backoff.is_zero() {
                    self.config.retry_initial
                } else {
                    (lane.backoff * 2).min(self.config.retry_max)
                };
                lane.retry_at = Some(now + lane.backoff);
                if lane.failing.as_deref() != Some(why.reason.as_str()) {
                    let pending = self.memory.outbox.get(&session).map_or(0, |q| q.len());
                    fx.push(Effect::Log(
                        Log::new(
                            Level::Warn,
                            format!(
                                "cannot deliver to session: {}; {pending} prompt(s) kept in its outbox, retrying",
                                why.reason
                            ),
                        )
                        .session(&session),
                    ));
                    lane.failing = Some(why.reason);
                }
            }
            Input::SessionActivity { session } => self.poke(now, session),
            Input::Tick => {}
            Input::TrackerLines { lines, cursor } => self.on_tracker_lines(lines, cursor, &mut fx),
            Input::TrackerRestarted { why } => fx.push(Effect::Log(Log::new(
                Level::Warn,
                format!("tracker event log {why}: reading it again from the start"),
            ))),
            Input::MountRead { mount, read } => self.on_mount_read(&mount, read, &mut fx),
            Input::BeadsRead { read, now_unix } => self.on_beads_read(now, read, now_unix, &mut fx),
        }
        self.run_timers(now, &mut fx);
        fx
    }

    fn on_changed(&mut self, now: Now, path: PathBuf, change: Change, fx: &mut Vec<Effect>) {
        let Some(pp) = self.plan_path(&path) else {
            return;
        };
        match change {
            Change::Closed | Change::Appeared => {
                self.settling.remove(&path);
                fx.push(Effect::Read {
                    path,
                    complete: true,
                });
            }
            Change::Modified => {
                self.settling
                    .entry(path)
                    .or_insert(now + self.config.settle);
            }
            Change::Gone => {
                self.settling.remove(&path);
                if self.plans.get(&pp.source).is_some_and(|p| p.path == path) {
                    self.vanished
                        .insert(pp.source, now + self.config.rename_grace);
                }
            }
        }
    }

    fn poke(&mut self, now: Now, session: String) {
        if let Some(lane) = self.lanes.get_mut(&session) {
            if lane.inflight.is_none() && lane.retry_at.is_some() {
                lane.retry_at = Some(now);
                self.dirty_lanes.insert(session);
            }
        }
    }

    /// Which plan a path is, if any.
    fn plan_path(&self, path: &Path) -> Option<PlanPath> {
        let name = path.file_name()?.to_str()?;
        let parent = path.parent()?;
        if parent == self.config.plan_dir {
            return match classify(name)? {
                PlanFile::Markdown(n) => Some(PlanPath {
                    source: format!("plan:{}", n.id()),
                    origin: Origin::Markdown(n.state),
                }),
                PlanFile::Json { stem } => Some(PlanPath {
                    source: format!("json:{stem}"),
                    origin: Origin::Json,
                }),
            };
        }
        if self.config.session_plans
            && name == "plan"
            && parent.parent() == Some(self.config.sessions_dir.as_path())
        {
            let session = parent.file_name()?.to_str()?;
            if check_name(session).is_ok() {
                return Some(PlanPath {
                    source: format!("session:{session}"),
                    origin: Origin::Session(session.to_string()),
                });
            }
        }
        None
    }

    #[allow(clippy::too_many_arguments)]
    fn on_read(
        &mut self,
        now: Now,
        path: PathBuf,
        read: FileRead,
        complete: bool,
        fresh: bool,
        fx: &mut Vec<Effect>,
    ) {
        // A complete read answers any pending re-read of this file.
        let rechecked = if complete {
            self.rechecks.remove(&path).map_or(0, |(_, n)| n)
        } else {
            0
        };
        let Some(pp) = self.plan_path(&path) else {
            return;
        };
        let file = display_name(&path);
        let bytes = match read {
            FileRead::Bytes(b) => b,
            FileRead::Missing => {
                // Gone between the event and the read. If this was the plan's
                // current file, a listing decides whether it moved.
                if self.plans.get(&pp.source).is_some_and(|p| p.path == path) {
                    self.vanished
                        .insert(pp.source, now + self.config.rename_grace);
                }
                return;
            }
            FileRead::Failed(err) => {
                let msg = format!("cannot read plan file: {err}");
                let plan = self.plans.get_mut(&pp.source);
                let already = plan
                    .as_ref()
                    .is_some_and(|p| p.error.as_deref() == Some(&msg));
                if !already {
                    fx.push(Effect::Log(
                        Log::new(Level::Error, msg.clone())
                            .plan(&pp.source)
                            .file(&path.display().to_string()),
                    ));
                    if let Some(p) = plan {
                        if p.error.replace(msg).is_none() {
                            self.invalid += 1;
                        }
                    }
                }
                return;
            }
        };
        self.vanished.remove(&pp.source);
        let format = match pp.origin {
            Origin::Json => PlanFormat::Json,
            _ => PlanFormat::Markdown,
        };
        // A fresh file (modified within the settle time) may already be the
        // start of the next in-place rewrite, caught between its truncate
        // and its last write: an unterminated last line may be half a title,
        // and a step missing from it may only not be written yet. So: whole
        // lines only, nothing forgotten for being absent, and a complete
        // re-read once the file has settled. A writer that never stops is
        // believed after MAX_RECHECKS re-reads.
        let fresh = fresh && complete && rechecked < MAX_RECHECKS;
        let unterminated = bytes.last().is_some_and(|&b| b != b'\n');
        if fresh && unterminated {
            self.recheck(now, &path, rechecked);
        }
        // An oversized read is refused whole (trimmed to its last line it
        // would slip under the cap).
        let oversized = bytes.len() > self.config.max_plan_bytes;
        // JSON has no lines to trust: a fresh half of it simply fails to
        // parse, and that error waits for the re-read (below).
        let unterminated = unterminated && format == PlanFormat::Markdown;
        let bytes = if oversized || (complete && !(fresh && unterminated)) {
            &bytes[..]
        } else {
            // A writer may still be mid-file: only whole lines count, so a
            // half-written title can never become a step.
            match bytes.iter().rposition(|&b| b == b'\n') {
                Some(end) => &bytes[..=end],
                None => &[][..],
            }
        };
        let parsed = parse_plan(format, bytes, self.config.max_plan_bytes);
        let first_seen = !self.plans.contains_key(&pp.source);
        let state = self
            .plans
            .entry(pp.source.clone())
            .or_insert_with(|| PlanState {
                path: path.clone(),
                origin: pp.origin.clone(),
                lifecycle: match &pp.origin {
                    Origin::Markdown(s) => Lifecycle::first_seen(*s),
                    _ => Lifecycle::Wip,
                },
                summary: None,
                error: None,
                warned_route: false,
            });
        if first_seen {
            fx.push(Effect::Log(
                Log::new(
                    Level::Debug,
                    format!("tracking plan ({:?})", state.lifecycle),
                )
                .plan(&pp.source)
                .file(&file),
            ));
        }
        state.path = path.clone();
        let old_live = state.lifecycle.is_live();
        if let Origin::Markdown(file_state) = pp.origin {
            if let Some(t) = state.lifecycle.transition_to(file_state) {
                if let Some(next) = state.lifecycle.apply(t) {
                    fx.push(Effect::Log(
                        Log::new(
                            Level::Info,
                            format!("plan {}: {:?} → {:?}", t.name(), state.lifecycle, next),
                        )
                        .plan(&pp.source)
                        .file(&file),
                    ));
                    state.lifecycle = next;
                }
            }
            state.origin = Origin::Markdown(file_state);
        }
        let plan = match parsed {
            // No steps where the last parse had some is a rewrite caught
            // mid-way: zero bytes between its truncate and its write, or
            // only the head of the file (`task_complete` rewrites in place,
            // and a read brought by the previous close can land there). It
            // proves nothing, and the writer's close brings the real
            // content. Taken as a plan with no steps, it would forget every
            // announced step (the next read announcing the ready ones
            // again) and find every step checked (an early all-done
            // nudge). Keep the last parse.
            Ok(plan)
                if plan.steps.is_empty() && state.summary.as_ref().is_some_and(|p| p.steps > 0) =>
            {
                return
            }
            Ok(plan) => {
                if state.error.take().is_some() {
                    self.invalid -= 1;
                    fx.push(Effect::Log(
                        Log::new(Level::Info, "plan is valid again")
                            .plan(&pp.source)
                            .file(&file),
                    ));
                }
                state.summary = Some(Summary::of(&plan));
                plan
            }
            Err(_) if fresh => {
                // Maybe the next version half written: judged when it
                // has settled, so a transient error is never reported.
                self.recheck(now, &path, rechecked);
                return;
            }
            Err(e) => {
                let msg = e.to_string();
                if state.error.as_deref() != Some(msg.as_str()) {
                    fx.push(Effect::Log(
                        Log::new(
                            Level::Error,
                            format!(
                                "invalid plan {}: {msg}; no wake-ups from it until it is fixed",
                                path.display()
                            ),
                        )
                        .plan(&pp.source)
                        .file(&path.display().to_string())
                        .line(e.line),
                    ));
                    if state.error.replace(msg).is_none() {
                        self.invalid += 1;
                    }
                }
                return;
            }
        };
        let live = state.lifecycle.is_live();
        if old_live && !live {
            self.withdraw_source(&pp.source, "its plan ended", fx);
        }
        let forget_missing = complete && !fresh;
        if self.reconcile_plan(&pp.source, &plan, forget_missing, fx) && fresh {
            self.recheck(now, &path, rechecked);
        }
    }

    /// Read `path` again, completely, once the settle time has passed.
    fn recheck(&mut self, now: Now, path: &Path, rechecked: u32) {
        self.rechecks
            .insert(path.to_path_buf(), (now + self.config.settle, rechecked));
    }

    fn on_listed(&mut self, paths: Vec<PathBuf>, read_all: bool, fx: &mut Vec<Effect>) {
        self.listing = false;
        let mut present: BTreeMap<String, PathBuf> = BTreeMap::new();
        for path in paths {
            if let Some(pp) = self.plan_path(&path) {
                // Two files of one identity (a copy before a delete): the
                // one already tracked wins, so the plan does not flap.
                let keep_existing = self.plans.get(&pp.source).is_some_and(|p| p.path == path);
                if keep_existing || !present.contains_key(&pp.source) {
                    present.insert(pp.source, path);
                }
            }
        }
        let gone: Vec<String> = self
            .plans
            .keys()
            .filter(|s| !present.contains_key(*s))
            .cloned()
            .collect();
        for source in gone {
            self.remove_plan(&source, fx);
        }
        // Persisted announcements of plans that no longer exist at all
        // (deleted while the daemon was down).
        if read_all {
            let stale: Vec<String> = self
                .memory
                .announced
                .keys()
                .filter(|s| is_plan_source(s) && !present.contains_key(*s))
                .cloned()
                .collect();
            for source in stale {
                self.withdraw_source(&source, "its plan was deleted", fx);
                self.record(Record::DropSource { source }, fx);
            }
        }
        for (source, path) in present {
            self.vanished.remove(&source);
            let known = self.plans.get(&source).is_some_and(|p| p.path == path);
            if read_all || !known {
                fx.push(Effect::Read {
                    path,
                    complete: true,
                });
            }
        }
    }

    fn remove_plan(&mut self, source: &str, fx: &mut Vec<Effect>) {
        self.vanished.remove(source);
        let Some(state) = self.plans.remove(source) else {
            return;
        };
        if state.error.is_some() {
            self.invalid -= 1;
        }
        if state.lifecycle.is_live() {
            fx.push(Effect::Log(
                Log::new(
                    Level::Info,
                    format!(
                        "plan abandon: {:?} → Abandoned (file deleted)",
                        state.lifecycle
                    ),
                )
                .plan(source)
                .file(&display_name(&state.path)),
            ));
        }
        self.withdraw_source(source, "its plan was deleted", fx);
        if self.memory.announced.contains_key(source) {
            self.record(
                Record::DropSource {
                    source: source.to_string(),
                },
                fx,
            );
        }
    }

    fn run_timers(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let due: Vec<PathBuf> = self
            .settling
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(p, _)| p.clone())
            .collect();
        for path in due {
            self.settling.remove(&path);
            fx.push(Effect::Read {
                path,
                complete: false,
            });
        }
        for (path, (at, n)) in self.rechecks.iter_mut() {
            if *at <= now && *at != Duration::MAX {
                // Due: read again; `MAX` marks it as asked until the read
                // comes back (and resets or reschedules it).
                *at = Duration::MAX;
                *n += 1;
                fx.push(Effect::Read {
                    path: path.clone(),
                    complete: true,
                });
            }
        }
        if self.beads_due.is_some_and(|at| at <= now) {
            self.beads_due = None;
            fx.push(Effect::ReadBeads);
        }
        if self.vanished.values().any(|at| *at <= now) && !self.listing {
            self.vanished.retain(|_, at| *at > now);
            self.listing = true;
            fx.push(Effect::List { read_all: false });
        }
        for (session, lane) in &mut self.lanes {
            if lane.inflight.is_none() && lane.retry_at.is_some_and(|at| at <= now) {
                self.dirty_lanes.insert(session.clone());
            }
        }
    }

    /// The session a plan's wake-ups go to, if any.
    fn route(&mut self, source: &str, fx: &mut Vec<Effect>) -> Option<String> {
        let state = self.plans.get_mut(source)?;
        let from_file = state.summary.as_ref().and_then(|p| p.session.clone());
        let session = from_file
            .or_else(|| match &state.origin {
                Origin::Session(s) => Some(s.clone()),
                _ => None,
            })
            .or_else(|| self.config.default_session.clone());
        match session {
            Some(s) => {
                match check_name(&s) {
                    Ok(()) => Some(s),
                    Err(why) => {
                        if !state.warned_route {
                            state.warned_route = true;
                            fx.push(Effect::Log(
                            Log::new(
                                Level::Error,
                                format!("session id {} {why}; this plan wakes nobody until it is fixed", quoted(&s)),
                            )
                            .plan(source)
                            .file(&state.path.display().to_string()),
                        ));
                        }
                        None
                    }
                }
            }
            None => {
                if !state.warned_route {
                    state.warned_route = true;
                    fx.push(Effect::Log(
                        Log::new(
                            Level::Warn,
                            "plan has no session (no session comment, no session directory, no default_session); it is tracked but wakes nobody",
                        )
                        .plan(source)
                        .file(&state.path.display().to_string()),
                    ));
                }
                None
            }
        }
    }

    /// Diff a plan's ready set against what was announced for it.
    /// Returns whether announced steps missing from `plan` were kept
    /// because the read was not `complete`.
    fn reconcile_plan(
        &mut self,
        source: &str,
        plan: &Plan,
        complete: bool,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let Some(state) = self.plans.get(source) else {
            return false;
        };
        let live = state.lifecycle.is_live();
        let lifecycle = state.lifecycle;
        let origin = state.origin.clone();
        let path = state.path.clone();
        let file = display_name(&path);

        // Leave: checked steps, and (on a complete read) steps that no longer
        // exist. A settle read may be a truncated file, so absence proves
        // nothing then.
        let open: BTreeMap<&str, usize> = plan
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.status != StepStatus::Checked)
            .map(|(i, s)| (s.key.as_str(), i))
            .collect();
        let existing: BTreeSet<&str> = plan.steps.iter().map(|s| s.key.as_str()).collect();
        let kept_missing = !complete
            && self.memory.announced.get(source).is_some_and(|items| {
                items
                    .keys()
                    .any(|i| matches!(i, Item::Step(k) if !existing.contains(k.as_str())))
            });
        // A plan without steps has nothing to be done: no nudge.
        let all_checked = !plan.steps.is_empty() && plan.all_checked();
        let leaving: Vec<Item> = self
            .memory
            .announced
            .get(source)
            .map(|items| {
                items
                    .keys()
                    .filter(|item| match item {
                        Item::Step(k) => {
                            !open.contains_key(k.as_str())
                                && (complete || existing.contains(k.as_str()))
                        }
                        Item::AllDone => !all_checked,
                        _ => false,
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for item in leaving {
            self.withdraw_item(source, &item, "its step was checked", fx);
            self.record(
                Record::Forget {
                    source: source.to_string(),
                    item,
                },
                fx,
            );
        }
        if !live {
            return kept_missing;
        }

        let candidates: Vec<usize> = match self.config.mode {
            Mode::Reactive => plan.ready(),
            Mode::Queue => plan
                .topo_order()
                .into_iter()
                .filter(|&i| plan.steps[i].status == StepStatus::Open)
                .collect(),
        };
        if self.config.mode == Mode::Reactive {
            // A prompt still waiting in an outbox for a step that is no
            // longer ready (a dependency was unchecked) would now be early:
            // withdraw it and un-announce, so it is announced again when it
            // is ready again.
            let ready: BTreeSet<&str> = candidates
                .iter()
                .map(|&i| plan.steps[i].key.as_str())
                .collect();
            let stale: BTreeSet<Item> = self
                .memory
                .outbox
                .values()
                .flatten()
                .filter(|p| p.source == source)
                .filter(|p| matches!(&p.item, Item::Step(k) if !ready.contains(k.as_str())))
                .map(|p| p.item.clone())
                .collect();
            for item in stale {
                self.withdraw_item(source, &item, "its step is no longer ready", fx);
                self.record(
                    Record::Forget {
                        source: source.to_string(),
                        item,
                    },
                    fx,
                );
            }
        }
        let new: Vec<usize> = candidates
            .into_iter()
            .filter(|&i| {
                !self
                    .memory
                    .is_announced(source, &Item::Step(plan.steps[i].key.clone()))
            })
            .collect();
        let nudge = all_checked
            && self.config.nudge_done
            && lifecycle == Lifecycle::Wip
            && matches!(origin, Origin::Markdown(_))
            && !self.memory.is_announced(source, &Item::AllDone);
        if new.is_empty() && !nudge {
            return kept_missing;
        }
        if self.baseline {
            for i in new {
                self.record(
                    Record::Announce {
                        source: source.to_string(),
                        item: Item::Step(plan.steps[i].key.clone()),
                        session: None,
                        baseline: true,
                        pending: None,
                    },
                    fx,
                );
            }
            if nudge {
                self.record(
                    Record::Announce {
                        source: source.to_string(),
                        item: Item::AllDone,
                        session: None,
                        baseline: true,
                        pending: None,
                    },
                    fx,
                );
            }
            return kept_missing;
        }
        let Some(session) = self.route(source, fx) else {
            return kept_missing;
        };
        // Queue mode puts the goal on the first prompt of the plan's dump.
        let first_dump =
            self.config.mode == Mode::Queue && !self.memory.announced.contains_key(source);
        for (n, i) in new.into_iter().enumerate() {
            let step = &plan.steps[i];
            let text = match self.config.mode {
                Mode::Reactive => render_step(
                    &self.config.templates.step,
                    plan,
                    i,
                    &file,
                    &path,
                    source,
                    &session,
                ),
                Mode::Queue => render_queue(plan, i, &file, first_dump && n == 0),
            };
            let label = match self.config.mode {
                Mode::Reactive => step.label.clone(),
                Mode::Queue => format!("q{}", step.num),
            };
            if !self.announce(
                source,
                Item::Step(step.key.clone()),
                &session,
                label,
                file.clone(),
                text,
                fx,
            ) {
                return kept_missing;
            }
        }
        if nudge {
            let done_file = done_name(&file);
            let text = prompt::render(
                &self.config.templates.done,
                &[
                    ("goal", &plan.goal),
                    ("file", &file),
                    ("path", &path.display().to_string()),
                    ("plan", source),
                    ("session", &session),
                    ("done_file", &done_file),
                ],
            );
            self.announce(
                source,
                Item::AllDone,
                &session,
                "all-done".into(),
                file.clone(),
                text,
                fx,
            );
        }
        kept_missing
    }

    /// Record an announcement and queue its prompt. Returns false when the
    /// session's outbox is full: the item stays unannounced, so it is
    /// announced once there is room, and nothing is lost.
    #[allow(clippy::too_many_arguments)]
    fn announce(
        &mut self,
        source: &str,
        item: Item,
        session: &str,
        step: String,
        plan: String,
        text: String,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let queued = self.memory.outbox.get(session).map_or(0, |q| q.len());
        // Said once per streak: a streak ends when the outbox is empty.
        let full_said = format!("outbox-full:{session}");
        if queued == 0 {
            self.said.remove(&full_said);
        }
        if queued >= self.config.outbox_cap {
            let lane = self.lanes.entry(session.to_string()).or_default();
            lane.refused += 1;
            if self.capped.insert(session.to_string()) && self.said.insert(full_said) {
                fx.push(Effect::Log(
                    Log::new(
                        Level::Error,
                        format!(
                            "outbox full ({queued} prompts, outbox_cap = {}): new wake-ups for this session wait, unannounced, until it drains",
                            self.config.outbox_cap
                        ),
                    )
                    .session(session),
                ));
            }
            return false;
        }
        let seq = self.memory.next_seq;
        let pending = Pending {
            seq,
            source: source.to_string(),
            item: item.clone(),
            step: step.clone(),
            plan: plan.clone(),
            text,
        };
        self.record(
            Record::Announce {
                source: source.to_string(),
                item,
                session: Some(session.to_string()),
                baseline: false,
                pending: Some(pending),
            },
            fx,
        );
        fx.push(Effect::Log(
            Log::new(
                Level::Info,
                format!("announced {step} to session {session}"),
            )
            .plan(source)
            .step(&step)
            .session(session)
            .file(&plan),
        ));
        self.dirty_lanes.insert(session.to_string());
        true
    }

    /// Apply a record to memory and emit it, in that order of truth: the
    /// shell writes it before carrying out anything emitted after it.
    fn record(&mut self, record: Record, fx: &mut Vec<Effect>) {
        self.memory.apply(&record);
        fx.push(Effect::Record(record));
    }

    /// Withdraw the pending prompts of `item` that are not being written;
    /// returns how many were withdrawn.
    fn withdraw_item(
        &mut self,
        source: &str,
        item: &Item,
        why: &str,
        fx: &mut Vec<Effect>,
    ) -> usize {
        let mut found = Vec::new();
        for (session, queue) in &self.memory.outbox {
            let inflight = self.lanes.get(session).and_then(|l| l.inflight);
            for p in queue {
                // A prompt being written right now cannot be taken back.
                if p.source == source && &p.item == item && Some(p.seq) != inflight {
                    found.push((session.clone(), p.seq, p.step.clone()));
                }
            }
        }
        let n = found.len();
        for (session, seq, step) in found {
            self.record(
                Record::Withdrawn {
                    session: session.clone(),
                    seq,
                },
                fx,
            );
            fx.push(Effect::Log(
                Log::new(
                    Level::Info,
                    format!("withdrew pending prompt for {step}: {why}"),
                )
                .plan(source)
                .step(&step)
                .session(&session),
            ));
        }
        n
    }

    fn withdraw_source(&mut self, source: &str, why: &str, fx: &mut Vec<Effect>) {
        let items: BTreeSet<Item> = self
            .memory
            .outbox
            .values()
            .flatten()
            .filter(|p| p.source == source)
            .map(|p| p.item.clone())
            .collect();
        for item in items {
            self.withdraw_item(source, &item, why, fx);
            // A withdrawn prompt was never heard: un-announce it, so a plan
            // that is reopened announces it again rather than losing it.
            if self.memory.is_announced(source, &item) {
                self.record(
                    Record::Forget {
                        source: source.to_string(),
                        item,
                    },
                    fx,
                );
            }
        }
    }

    fn on_delivered(&mut self, session: String, seq: u64, fx: &mut Vec<Effect>) {
        let step = self
            .memory
            .outbox
            .get(&session)
            .and_then(|q| q.iter().find(|p| p.seq == seq))
            .map(|p| (p.source.clone(), p.step.clone()));
        self.record(
            Record::Delivered {
                session: session.clone(),
                seq,
            },
            fx,
        );
        let lane = self.lanes.entry(session.clone()).or_default();
        if lane.inflight == Some(seq) {
            lane.inflight = None;
        }
        lane.retry_at = None;
        lane.backoff = Duration::ZERO;
        if lane.failing.take().is_some() {
            fx.push(Effect::Log(
                Log::new(Level::Info, "session is reachable again").session(&session),
            ));
        }
        if let Some((source, step)) = step {
            fx.push(Effect::Log(
                Log::new(Level::Debug, format!("delivered {step}"))
                    .plan(&source)
                    .step(&step)
                    .session(&session),
            ));
        }
        self.after_drain(&session, fx);
        self.dirty_lanes.insert(session);
    }

    /// The next prompt to write, if a lane can send — asked by the shell
    /// when it is ready to write (as quinn's `poll_transmit`), so a prompt
    /// withdrawn by an input handled in the meantime is never written. Each
    /// answer marks that session's lane busy until `Delivered` or
    /// `Undeliverable` comes back: one prompt per session at a time, never
    /// interleaved, and one stuck session never holds up another.
    pub fn poll_delivery(&mut self, now: Now) -> Option<Delivery> {
        while let Some(session) = self.dirty_lanes.pop_first() {
            let lane = self.lanes.entry(session.clone()).or_default();
            // In flight, or backing off: the retry timer brings it back.
            if lane.inflight.is_some() || lane.retry_at.is_some_and(|at| at > now) {
                continue;
            }
            let Some(front) = self.memory.outbox.get(&session).and_then(|q| q.front()) else {
                lane.retry_at = None;
                continue;
            };
            lane.inflight = Some(front.seq);
            lane.retry_at = None;
            return Some(Delivery {
                session,
                seq: front.seq,
                text: front.text.clone(),
                plan: front.plan.clone(),
                step: front.step.clone(),
            });
        }
        None
    }

    /// Wake-ups refused at the cap were left unannounced: once the outbox
    /// has room again, diff every source again so they go out.
    fn after_drain(&mut self, session: &str, fx: &mut Vec<Effect>) {
        // Hysteresis: diff again once the outbox is down to half the cap,
        // not after each delivery. Each diff goes over every plan; at the
        // cap it ran once per prompt delivered (10,000 prompts behind a cap
        // of 1,000 drained at ~40 a second) and logged "outbox full" each
        // time it refilled.
        let queued = self.memory.outbox.get(session).map_or(0, |q| q.len());
        if queued > self.config.outbox_cap / 2 || !self.capped.remove(session) {
            return;
        }
        for state in self.plans.values() {
            fx.push(Effect::Read {
                path: state.path.clone(),
                complete: true,
            });
        }
        for mount in self.config.mounts.clone() {
            fx.push(Effect::ReadMount { mount });
        }
        if self.config.beads_file.is_some() {
            fx.push(Effect::ReadBeads);
        }
    }

    /// Every tracked plan, for `status`.
    pub fn plans(&self) -> Vec<PlanView> {
        self.plans
            .iter()
            .map(|(source, s)| {
                let summary = s.summary.as_ref();
                PlanView {
                    source: source.clone(),
                    path: s.path.clone(),
                    lifecycle: s.lifecycle,
                    goal: summary.map(|p| p.goal.clone()).unwrap_or_default(),
                    session: summary.and_then(|p| p.session.clone()).or(match &s.origin {
                        Origin::Session(id) => Some(id.clone()),
                        _ => self.config.default_session.clone(),
                    }),
                    error: s.error.clone(),
                    steps: summary.map_or(0, |p| p.steps),
                    checked: summary.map_or(0, |p| p.checked),
                    ready: summary.map_or_else(Vec::new, |p| p.ready.clone()),
                }
            })
            .collect()
    }

    /// Wake-ups refused at the outbox cap, per session.
    pub fn refused(&self) -> BTreeMap<String, u64> {
        self.lanes
            .iter()
            .filter(|(_, l)| l.refused > 0)
            .map(|(s, l)| (s.clone(), l.refused))
            .collect()
    }

    /// How many sessions are currently failing.
    pub fn failing_count(&self) -> usize {
        self.lanes.values().filter(|l| l.failing.is_some()).count()
    }

    /// Sessions currently failing, with the reason.
    pub fn failing(&self) -> BTreeMap<String, String> {
        self.lanes
            .iter()
            .filter_map(|(s, l)| l.failing.clone().map(|r| (s.clone(), r)))
            .collect()
    }

    /// Plans with a current error.
    pub fn invalid_plans(&self) -> usize {
        self.invalid
    }

    /// Number of tracked plans.
    pub fn plan_count(&self) -> usize {
        self.plans.len()
    }
}

fn is_plan_source(source: &str) -> bool {
    source.starts_with("plan:") || source.starts_with("json:") || source.starts_with("session:")
}

fn display_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// `x__wip.md` → `x__done.md`.
fn done_name(file: &str) -> String {
    for state in ["__todo.md", "__wip.md"] {
        if let Some(head) = file.strip_suffix(state) {
            return format!("{head}__done.md");
        }
    }
    file.to_string()
}

fn dep_labels(plan: &Plan, i: usize, prefix: Option<&str>) -> Vec<String> {
    plan.steps[i]
        .deps
        .iter()
        .map(|&d| match prefix {
            Some(p) => format!("{p}{}", plan.steps[d].num),
            None => plan.steps[d].label.clone(),
        })
        .collect()
}

fn render_step(
    template: &str,
    plan: &Plan,
    i: usize,
    file: &str,
    path: &Path,
    source: &str,
    session: &str,
) -> String {
    let step = &plan.steps[i];
    let deps = dep_labels(plan, i, None);
    let deps = if deps.is_empty() {
        "none".to_string()
    } else {
        deps.join(", ")
    };
    prompt::render(
        template,
        &[
            ("goal", &plan.goal),
            ("id", &step.label),
            ("title", &step.title),
            ("description", &step.description),
            ("deps", &deps),
            ("file", file),
            ("path", &path.display().to_string()),
            ("plan", source),
            ("session", session),
        ],
    )
}

/// The queue fallback's format: `qN: title (after: qA, qB)`, description
/// lines under it, the goal before the first step of a plan.
fn render_queue(plan: &Plan, i: usize, file: &str, with_goal: bool) -> String {
    let step = &plan.steps[i];
    let mut out = String::new();
    if with_goal {
        out.push_str(&format!("Goal: {}\nPlan file: {file}\n\n", plan.goal));
    }
    out.push_str(&format!("q{}: {}", step.num, step.title));
    let deps = dep_labels(plan, i, Some("q"));
    if !deps.is_empty() {
        out.push_str(&format!(" (after: {})", deps.join(", ")));
    }
    out.push('\n');
    for line in step.description.lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

mod tasks;
#[cfg(test)]
mod tests;
