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
use std::path::PathBuf;
use std::time::Duration;

use super::effect::{Effect, Level, Log};
use super::input::{Change, Input};
use super::lifecycle::Lifecycle;
use super::prompt;
use super::record::{Memory, Record};
use lanes::Lane;
use plans::{Origin, PlanState};

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
    /// Read every mount's ready list this often even with no event
    /// (`events.resync_ms`): catches the changes 9beads writes no event
    /// for in a quiet project. `None` (the default) never wakes for it.
    pub resync: Option<Duration>,
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
            resync: None,
            beads_file: None,
        }
    }
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
    /// Mount ready files read fresh, to read again once settled: when, and
    /// how many times in a row (a FUSE file may always look fresh).
    mount_rechecks: BTreeMap<String, (Now, u32)>,
    /// Fresh reads to confirm with a complete re-read: when, and how many
    /// times in a row the file was still fresh.
    rechecks: BTreeMap<PathBuf, (Now, u32)>,
    /// Plans with a current error (kept as a count: `STATUS=` asks for it
    /// on every loop turn).
    invalid: usize,
    /// Tracker task titles by source and id, for claim/completed prompts.
    task_titles: BTreeMap<(String, String), String>,
    /// Per mount, beads claimed by a current-shape `claimed` event (which
    /// names no assignee) whose claimer is still to be read from the
    /// mount's `list` file (see `tasks.rs`).
    unresolved_claims: BTreeMap<String, BTreeSet<String>>,
    /// When every mount's ready list is next read with no event asking
    /// (`events.resync`; `None` while off or not armed yet).
    resync_at: Option<Now>,
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
            mount_rechecks: BTreeMap::new(),
            invalid: 0,
            unresolved_claims: BTreeMap::new(),
            resync_at: None,
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
        let mount = self.mount_rechecks.values().map(|(at, _)| *at).min();
        // `Duration::MAX` marks a re-read already asked for: not a deadline.
        [
            settle,
            vanish,
            retry,
            recheck,
            mount,
            self.beads_due,
            self.resync_at,
        ]
        .into_iter()
        .flatten()
        .filter(|at| *at != Duration::MAX)
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
            Input::MountRead { mount, read, fresh } => {
                self.on_mount_read(now, &mount, read, fresh, &mut fx)
            }
            Input::MountListRead { mount, read } => self.on_mount_list_read(&mount, read, &mut fx),
            Input::BeadsRead { read, now_unix } => self.on_beads_read(now, read, now_unix, &mut fx),
        }
        self.run_timers(now, &mut fx);
        fx
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
        for (mount, (at, _)) in self.mount_rechecks.iter_mut() {
            if *at <= now {
                // Asked; the read's answer resets or reschedules it.
                *at = Duration::MAX;
                fx.push(Effect::ReadMount {
                    mount: mount.clone(),
                });
            }
        }
        self.run_resync(now, fx);
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

    /// Apply a record to memory and emit it, in that order of truth: the
    /// shell writes it before carrying out anything emitted after it.
    fn record(&mut self, record: Record, fx: &mut Vec<Effect>) {
        self.memory.apply(&record);
        fx.push(Effect::Record(record));
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

mod lanes;
mod plans;
mod tasks;
#[cfg(test)]
mod tests;
