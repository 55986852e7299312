//! Plans in the engine: which file is which plan, reading and parsing it,
//! its lifecycle, its route, and the diff of its ready steps against what
//! was announced (`reconcile_plan`, the heart of the wake rule).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::children;
use super::config::{EngineConfig, Mode, Now};
use super::context::Cx;
use super::ledger::Wake;
use super::recent::Recent;
use super::reminders::{self, Open};
use super::timers::{Recheck, Timer};
use super::PlanView;
use crate::core::close::Close;
use crate::core::effect::{Effect, Level, Log};
use crate::core::input::{Change, FileRead};
use crate::core::lifecycle::Lifecycle;
use crate::core::lines::quoted;
use crate::core::name::{dir_and_name, plan_key, FileState, PlanKey};
use crate::core::plan::{parse_plan, Plan, PlanError, PlanFormat, Step, StepStatus};
use crate::core::prompt;
use crate::core::record::{Item, Note, Record, Work};
use crate::core::session::{check_name, check_session};
use crate::core::source::Source;

/// Complete re-reads of a file that keeps being fresh before it is
/// believed as it is (a writer rewriting it forever, or a clock skewed
/// against the file system's).
pub(super) const MAX_RECHECKS: u32 = 20;

/// Where a plan file lives, which decides its identity and routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Origin {
    /// A `<stamp>_<uid>--<slug>__<state>.md` in the plan directory.
    Markdown(FileState),
    /// A `*.plan.json` in the plan directory.
    Json,
    /// `<sessions_dir>/<id>/plan`.
    Session(String),
}

/// A path recognised as a plan file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PlanPath {
    /// The plan's identity.
    pub(super) source: Source,
    pub(super) origin: Origin,
}

/// What the engine knows about one plan.
#[derive(Debug, Clone)]
pub(super) struct PlanState {
    /// Its file right now.
    pub(super) path: PathBuf,
    pub(super) origin: Origin,
    pub(super) lifecycle: Lifecycle,
    /// What `status` and routing need of the last valid parse; `None` until
    /// the file first parses. The parse itself is not kept (but for the few
    /// plans read last, `Recent`): each change is read and parsed afresh,
    /// and 10,000 parsed plans would cost tens of megabytes for nothing.
    pub(super) summary: Option<Summary>,
    /// The current parse error, so each distinct error is logged once.
    pub(super) error: Option<String>,
    /// Whether "no session" was already said for this plan.
    pub(super) warned_route: bool,
}

/// The little that is kept of a plan's last valid parse.
#[derive(Debug, Clone)]
pub(super) struct Summary {
    pub(super) goal: String,
    /// The session named in the file, unvalidated.
    pub(super) session: Option<String>,
    pub(super) steps: usize,
    pub(super) checked: usize,
    /// Ready steps, in order.
    pub(super) ready: Vec<OpenStep>,
    /// Announced steps still unchecked that are not ready now (a
    /// dependency unchecked again, a fan-out child's step): with `ready`,
    /// every step a reminder may name. Not every unchecked step: their
    /// titles were most of the memory of 10,000 idle plans. Lists, not
    /// maps: each holds a step or two (an almost empty `BTreeMap` still
    /// costs a whole node, ~800 bytes here, per plan).
    pub(super) open: Vec<OpenStep>,
}

/// An unchecked step a reminder may name.
#[derive(Debug, Clone)]
pub(super) struct OpenStep {
    pub(super) key: String,
    pub(super) label: String,
    pub(super) title: String,
}

impl OpenStep {
    fn of(step: &Step) -> OpenStep {
        OpenStep {
            key: step.key.clone(),
            label: step.label.clone(),
            title: step.title.clone(),
        }
    }
}

impl Summary {
    /// The summary of `plan`, which is the plan summarised with only
    /// statuses changed: goal and session are not copied again.
    fn follow_ticks(&mut self, plan: &Plan, announced: impl Fn(&str) -> bool) {
        let again = Summary::steps_of(plan, announced);
        (self.checked, self.ready, self.open) = again;
    }

    /// Checked count, ready steps and the other open steps kept.
    fn steps_of(
        plan: &Plan,
        announced: impl Fn(&str) -> bool,
    ) -> (usize, Vec<OpenStep>, Vec<OpenStep>) {
        let ready = plan.ready();
        let checked = plan
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Checked)
            .count();
        let open = plan
            .steps
            .iter()
            .enumerate()
            .filter(|(i, s)| {
                s.status != StepStatus::Checked && !ready.contains(i) && announced(&s.key)
            })
            .map(|(_, s)| OpenStep::of(s))
            .collect();
        let ready = ready
            .iter()
            .map(|&i| OpenStep::of(&plan.steps[i]))
            .collect();
        (checked, ready, open)
    }

    /// `announced`: whether the step with this key is in the announced set.
    pub(super) fn of(plan: &Plan, announced: impl Fn(&str) -> bool) -> Summary {
        let (checked, ready, open) = Summary::steps_of(plan, announced);
        Summary {
            goal: plan.goal.clone(),
            session: plan.session.clone(),
            steps: plan.steps.len(),
            checked,
            ready,
            open,
        }
    }

    /// The ready or announced open step with this key.
    pub(super) fn open_step(&self, key: &str) -> Option<&OpenStep> {
        self.ready.iter().chain(&self.open).find(|s| s.key == key)
    }
}

/// The plans part: which file is which plan, what is known of each, and
/// the re-reads that confirm fresh reads.
#[derive(Debug, Default)]
pub(super) struct Plans {
    /// Every tracked plan, by identity.
    pub(super) plans: BTreeMap<Source, PlanState>,
    /// Fresh plan reads waiting for a complete re-read, counted.
    rechecks: BTreeMap<PathBuf, Recheck>,
    /// Whether a listing was asked for and not answered yet.
    listing: bool,
    /// Plans with a current error (kept as a count: `STATUS=` asks for it
    /// on every loop turn).
    invalid: usize,
    /// The last parse of the few plans read last, for rewrites that only
    /// tick steps.
    recent: Recent,
}

/// Why a plan file was read, as the shell reports it.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReadKind {
    /// Read after a close or a rename into place (or a re-read), not after
    /// a settle with no close seen.
    pub(super) complete: bool,
    /// Modified within the settle time: perhaps mid-rewrite.
    pub(super) fresh: bool,
}

/// A parse of a plan file's usable bytes.
struct Parse {
    plan: Result<Plan, PlanError>,
    /// It is the last parse with only steps ticked or unticked (`Recent`).
    ticks_only: bool,
    /// For a parse with no steps: the first line that looks like a
    /// checkbox gone wrong (`- [] A`, `-[ ] B`), to point at.
    near_miss: Option<(usize, String)>,
}

/// How far one read of a plan file can be trusted, decided once.
///
/// A fresh file (modified within the settle time) may already be the start
/// of the next in-place rewrite, caught between its truncate and its last
/// write: an unterminated last line may be half a title, and a step missing
/// from it may only not be written yet. So: whole lines only, nothing
/// forgotten for being absent, and a complete re-read once the file has
/// settled. A writer that never stops is believed after `MAX_RECHECKS`
/// re-reads.
#[derive(Debug, Clone, Copy)]
pub(super) struct Trust {
    /// Fresh, and still to be confirmed by a re-read.
    fresh: bool,
    /// Fresh re-reads in a row so far.
    rechecked: u32,
    /// Only the whole lines count (a settle read, or a fresh markdown read
    /// whose last line is unterminated).
    whole_lines: bool,
    /// A re-read is due whatever the parse says (a fresh read that ends
    /// mid-line).
    confirm_later: bool,
}

impl Trust {
    fn of(bytes: &[u8], how: ReadKind, rechecked: u32, format: PlanFormat, max: usize) -> Trust {
        let fresh = how.fresh && how.complete && rechecked < MAX_RECHECKS;
        let unterminated = bytes.last().is_some_and(|&b| b != b'\n');
        // An oversized read is refused whole (trimmed to its last line it
        // would slip under the cap). JSON has no lines to trust: a fresh
        // half of it simply fails to parse, and that error waits for the
        // re-read.
        let oversized = bytes.len() > max;
        let md_unterminated = unterminated && format == PlanFormat::Markdown;
        Trust {
            fresh,
            rechecked,
            whole_lines: !oversized && (!how.complete || (fresh && md_unterminated)),
            confirm_later: fresh && unterminated,
        }
    }

    /// The part of `bytes` to parse.
    fn usable<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        if !self.whole_lines {
            return bytes;
        }
        // A writer may still be mid-file: only whole lines count, so a
        // half-written title can never become a step.
        match bytes.iter().rposition(|&b| b == b'\n') {
            Some(end) => &bytes[..=end],
            None => &[],
        }
    }
}

impl Plans {
    /// The current file of every tracked plan.
    pub(super) fn paths(&self) -> impl Iterator<Item = &Path> {
        self.plans.values().map(|p| p.path.as_path())
    }

    /// The current file of plan `source`, if it is tracked.
    pub(super) fn path_of(&self, source: &Source) -> Option<&Path> {
        self.plans.get(source).map(|p| p.path.as_path())
    }

    /// How many plans are tracked.
    pub(super) fn count(&self) -> usize {
        self.plans.len()
    }

    /// Plans with a current error.
    pub(super) fn invalid(&self) -> usize {
        self.invalid
    }

    /// Whether a listing was asked for and not answered yet.
    pub(super) fn listing(&self) -> bool {
        self.listing
    }

    /// Ask for a listing (a plan's file vanished: did it move?).
    pub(super) fn list(&mut self, fx: &mut Vec<Effect>) {
        self.listing = true;
        fx.push(Effect::List { read_all: false });
    }

    /// Step `key` of `source` as a reminder names it, while it is open in
    /// a live plan; `None` once it is checked or the plan has ended.
    pub(super) fn open_step(&self, source: &Source, key: &str) -> Option<Open> {
        let plan = self.plans.get(source)?;
        if !plan.lifecycle.is_live() {
            return None;
        }
        let step = plan.summary.as_ref()?.open_step(key)?;
        let (label, title) = (step.label.clone(), step.title.clone());
        let call = closing(source, &title, &plan.path).to_string();
        Some(Open {
            label,
            title,
            path: plan.path.display().to_string(),
            file: display_name(&plan.path),
            call,
            mount: None,
        })
    }

    /// Every tracked plan, for `status`.
    pub(super) fn views(&self, config: &EngineConfig) -> Vec<PlanView> {
        let view = |(source, s): (&Source, &PlanState)| {
            let summary = s.summary.as_ref();
            PlanView {
                source: source.clone(),
                path: s.path.clone(),
                lifecycle: s.lifecycle,
                goal: summary.map(|p| p.goal.clone()).unwrap_or_default(),
                session: summary.and_then(|p| p.session.clone()).or(match &s.origin {
                    Origin::Session(id) => Some(id.clone()),
                    _ => config.default_session.clone(),
                }),
                error: s.error.clone(),
                steps: summary.map_or(0, |p| p.steps),
                checked: summary.map_or(0, |p| p.checked),
                ready: summary.map_or_else(Vec::new, |p| {
                    let ready = p.ready.iter();
                    ready.map(|s| (s.label.clone(), s.title.clone())).collect()
                }),
            }
        };
        self.plans.iter().map(view).collect()
    }

    /// A re-read came due: ask for it; its answer resets or re-arms it.
    pub(super) fn recheck_due(&mut self, path: PathBuf) -> Effect {
        let r = self.rechecks.entry(path.clone()).or_default();
        r.count += 1;
        r.asked = true;
        Effect::Read {
            path,
            complete: true,
        }
    }

    pub(super) fn on_changed(&mut self, now: Now, path: PathBuf, change: Change, cx: &mut Cx) {
        let Some(pp) = Self::plan_path(cx.config, &path) else {
            return;
        };
        match change {
            Change::Closed | Change::Appeared => {
                cx.timers.cancel(&Timer::Settle(path.clone()));
                cx.fx.push(Effect::Read {
                    path,
                    complete: true,
                });
            }
            Change::Modified => {
                cx.timers
                    .set_once(Timer::Settle(path), now + cx.config.settle);
            }
            Change::Gone => {
                cx.timers.cancel(&Timer::Settle(path.clone()));
                if self.plans.get(&pp.source).is_some_and(|p| p.path == path) {
                    cx.timers
                        .set(Timer::Vanished(pp.source), now + cx.config.rename_grace);
                }
            }
        }
    }

    /// Which plan a path is, if any.
    pub(super) fn plan_path(config: &EngineConfig, path: &Path) -> Option<PlanPath> {
        let (parent, name) = dir_and_name(path)?;
        if same_dir(parent, &config.plan_dir) {
            return match plan_key(name)? {
                PlanKey::Markdown { id, state } => Some(PlanPath {
                    source: Source::Plan(id.to_string()),
                    origin: Origin::Markdown(state),
                }),
                PlanKey::Json { stem } => Some(PlanPath {
                    source: Source::PlanJson(stem.to_string()),
                    origin: Origin::Json,
                }),
            };
        }
        if config.session_plans
            && name == "plan"
            && parent.parent() == Some(config.sessions_dir.as_path())
        {
            let session = parent.file_name()?.to_str()?;
            if check_name(session).is_ok() {
                return Some(PlanPath {
                    source: Source::SessionPlan(session.to_string()),
                    origin: Origin::Session(session.to_string()),
                });
            }
        }
        None
    }

    /// A plan file's bytes arrived: trust them as far as the read allows,
    /// follow the file's lifecycle, and reconcile the plan.
    pub(super) fn on_read(
        &mut self,
        now: Now,
        path: PathBuf,
        read: FileRead,
        how: ReadKind,
        cx: &mut Cx,
    ) {
        // A complete read answers any pending re-read of this file.
        let rechecked = if how.complete {
            cx.timers.cancel(&Timer::Recheck(path.clone()));
            self.rechecks.remove(&path).map_or(0, |r| r.count)
        } else {
            0
        };
        let Some(pp) = Self::plan_path(cx.config, &path) else {
            return;
        };
        let Some(mut bytes) = self.bytes_of(now, &pp, &path, read, cx) else {
            return;
        };
        cx.timers.cancel(&Timer::Vanished(pp.source.clone()));
        let format = match pp.origin {
            Origin::Json => PlanFormat::Json,
            _ => PlanFormat::Markdown,
        };
        let trust = Trust::of(&bytes, how, rechecked, format, cx.config.max_plan_bytes);
        if trust.confirm_later {
            self.recheck(now, &path, rechecked, cx);
        }
        // The usable part is a prefix: parse (and keep) just that.
        bytes.truncate(trust.usable(&bytes).len());
        let max = cx.config.max_plan_bytes;
        let flipped = match format {
            PlanFormat::Markdown if bytes.len() <= max => self.recent.take(&pp.source, &bytes),
            _ => None,
        };
        let ticks_only = flipped.is_some();
        let plan = flipped.map_or_else(|| parse_plan(format, &bytes, max), Ok);
        // Only a plan with no steps is searched for a step written wrong.
        let near_miss = match &plan {
            Ok(p) if p.steps.is_empty() && format == PlanFormat::Markdown => near_miss_step(&bytes),
            _ => None,
        };
        let parsed = Parse {
            ticks_only,
            near_miss,
            plan,
        };
        let old_live = self.track(&pp, &path, cx);
        let Some(plan) = self.accept(now, &pp, &path, parsed, &trust, cx) else {
            return;
        };
        let live = self.plans[&pp.source].lifecycle.is_live();
        if old_live && !live {
            cx.ledger
                .withdraw_source(&pp.source, "its plan ended", cx.fx);
            children::plan_ended(cx, &pp.source, "its plan ended");
        }
        let forget_missing = how.complete && !trust.fresh;
        if self.reconcile_plan(&pp.source, &plan, forget_missing, cx) && trust.fresh {
            self.recheck(now, &path, rechecked, cx);
        }
        if format == PlanFormat::Markdown {
            self.recent.keep(&pp.source, bytes, plan);
        }
    }

    /// The bytes of a read, or `None` when there are none to judge (the
    /// file vanished: a listing decides whether it moved; or it could not
    /// be read: said once).
    fn bytes_of(
        &mut self,
        now: Now,
        pp: &PlanPath,
        path: &Path,
        read: FileRead,
        cx: &mut Cx,
    ) -> Option<Vec<u8>> {
        match read {
            FileRead::Bytes(b) => Some(b),
            FileRead::Missing => {
                // Gone between the event and the read. If this was the plan's
                // current file, a listing decides whether it moved.
                if self.plans.get(&pp.source).is_some_and(|p| p.path == path) {
                    cx.timers.set(
                        Timer::Vanished(pp.source.clone()),
                        now + cx.config.rename_grace,
                    );
                }
                None
            }
            FileRead::Failed(err) => {
                // Tracked even if never read, so `status` lists it with
                // its error and `STATUS=` counts it invalid.
                self.track(pp, path, cx);
                let msg = format!("cannot read it: {err}");
                let plan = self.plans.get_mut(&pp.source)?;
                if plan.error.as_deref() != Some(&msg) {
                    cx.fx.push(Effect::Log(
                        Log::new(
                            Level::Error,
                            format!(
                                "cannot read plan {}: {err}; no wake-ups from it until it can be read",
                                path.display()
                            ),
                        )
                        .plan(&pp.source)
                        .plan_file(path),
                    ));
                    if plan.error.replace(msg).is_none() {
                        self.invalid += 1;
                    }
                }
                None
            }
        }
    }

    /// Track the plan (first seen: its lifecycle from the file name) and
    /// follow a rename's lifecycle transition. Returns whether the plan was
    /// live before.
    fn track(&mut self, pp: &PlanPath, path: &Path, cx: &mut Cx) -> bool {
        let first_seen = !self.plans.contains_key(&pp.source);
        let state = self
            .plans
            .entry(pp.source.clone())
            .or_insert_with(|| PlanState {
                path: path.to_path_buf(),
                origin: pp.origin.clone(),
                lifecycle: match &pp.origin {
                    Origin::Markdown(s) => Lifecycle::first_seen(*s),
                    _ => Lifecycle::Wip,
                },
                summary: None,
                error: None,
                warned_route: false,
            });
        if first_seen && cx.config.logs(Level::Debug) {
            cx.fx.push(Effect::Log(
                Log::new(
                    Level::Debug,
                    format!("tracking plan {} ({:?})", path.display(), state.lifecycle),
                )
                .plan(&pp.source)
                .plan_file(path),
            ));
        }
        state.path = path.to_path_buf();
        let old_live = state.lifecycle.is_live();
        if let Origin::Markdown(file_state) = pp.origin {
            if let Some(t) = state.lifecycle.transition_to(file_state) {
                if let Some(next) = state.lifecycle.apply(t) {
                    cx.fx.push(Effect::Log(
                        Log::new(
                            Level::Info,
                            format!(
                                "plan {}: {}, {:?} → {:?}",
                                path.display(),
                                t.name(),
                                state.lifecycle,
                                next
                            ),
                        )
                        .plan(&pp.source)
                        .plan_file(path),
                    ));
                    state.lifecycle = next;
                }
            }
            state.origin = Origin::Markdown(file_state);
        }
        old_live
    }

    /// Judge a parse: the plan to reconcile, or `None` when it proves
    /// nothing (a rewrite caught mid-way, an error that may be transient)
    /// or is an error (said once per distinct error).
    fn accept(
        &mut self,
        now: Now,
        pp: &PlanPath,
        path: &Path,
        parsed: Parse,
        trust: &Trust,
        cx: &mut Cx,
    ) -> Option<Plan> {
        let state = self.plans.get_mut(&pp.source)?;
        match parsed.plan {
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
                None
            }
            // A plan file with no step in it wakes nobody: said once, and
            // listed with the reason (a fresh read may be a writer's first
            // half: judged once it has settled, as an error is).
            Ok(plan) if plan.steps.is_empty() && !matches!(pp.origin, Origin::Session(_)) => {
                if trust.fresh {
                    self.recheck(now, path, trust.rechecked, cx);
                    return None;
                }
                let msg = no_steps(pp, parsed.near_miss.as_ref());
                if state.error.as_deref() != Some(msg.as_str()) {
                    let mut log = Log::new(
                        Level::Warn,
                        format!(
                            "plan {} has no steps: {msg}; it is tracked and wakes nobody until it has one",
                            path.display()
                        ),
                    )
                    .plan(&pp.source)
                    .plan_file(path);
                    if let Some((line, _)) = &parsed.near_miss {
                        log = log.line(*line);
                    }
                    cx.fx.push(Effect::Log(log));
                    if state.error.replace(msg).is_none() {
                        self.invalid += 1;
                    }
                }
                state.summary = Some(Summary::of(&plan, |_| false));
                None
            }
            Ok(plan) => {
                if state.error.take().is_some() {
                    self.invalid -= 1;
                    cx.fx.push(Effect::Log(
                        Log::new(
                            Level::Info,
                            format!("plan {} is valid again", path.display()),
                        )
                        .plan(&pp.source)
                        .plan_file(path),
                    ));
                }
                // The few announced steps of this plan, looked up once.
                let announced: Vec<&str> = cx.ledger.plans().step_keys(&pp.source).collect();
                let announced = |key: &str| announced.contains(&key);
                match &mut state.summary {
                    // The same steps as the last parse, some ticked or
                    // unticked: goal and session are kept as they were.
                    Some(summary) if parsed.ticks_only => summary.follow_ticks(&plan, announced),
                    summary => *summary = Some(Summary::of(&plan, announced)),
                }
                Some(plan)
            }
            Err(_) if trust.fresh => {
                // Maybe the next version half written: judged when it
                // has settled, so a transient error is never reported.
                self.recheck(now, path, trust.rechecked, cx);
                None
            }
            Err(e) => {
                let msg = e.to_string();
                if state.error.as_deref() != Some(msg.as_str()) {
                    cx.fx.push(Effect::Log(
                        Log::new(
                            Level::Error,
                            format!(
                                "invalid plan {}: {msg}; no wake-ups from it until it is fixed",
                                path.display()
                            ),
                        )
                        .plan(&pp.source)
                        .plan_file(path)
                        .line(e.line),
                    ));
                    if state.error.replace(msg).is_none() {
                        self.invalid += 1;
                    }
                }
                None
            }
        }
    }

    /// Read `path` again, completely, once the settle time has passed.
    pub(super) fn recheck(&mut self, now: Now, path: &Path, rechecked: u32, cx: &mut Cx) {
        self.rechecks.insert(
            path.to_path_buf(),
            Recheck {
                count: rechecked,
                asked: false,
            },
        );
        cx.timers
            .set(Timer::Recheck(path.to_path_buf()), now + cx.config.settle);
    }

    pub(super) fn on_listed(&mut self, paths: Vec<PathBuf>, read_all: bool, cx: &mut Cx) {
        self.listing = false;
        let mut present: BTreeMap<Source, PathBuf> = BTreeMap::new();
        for path in paths {
            if let Some(pp) = Self::plan_path(cx.config, &path) {
                // Two files of one identity (a copy before a delete): the
                // one already tracked wins, so the plan does not flap.
                let keep_existing = self.plans.get(&pp.source).is_some_and(|p| p.path == path);
                if keep_existing || !present.contains_key(&pp.source) {
                    present.insert(pp.source, path);
                }
            }
        }
        let gone: Vec<Source> = self
            .plans
            .keys()
            .filter(|s| !present.contains_key(*s))
            .cloned()
            .collect();
        for source in gone {
            self.remove_plan(&source, cx);
        }
        // Persisted announcements of plans that no longer exist at all
        // (deleted while the daemon was down).
        if read_all {
            let plans = cx.ledger.plans().sources();
            let stale: Vec<Source> = plans
                .filter(|s| !present.contains_key(*s))
                .cloned()
                .collect();
            for source in stale {
                cx.ledger
                    .withdraw_source(&source, "its plan was deleted", cx.fx);
                children::plan_ended(cx, &source, "its plan was deleted");
                cx.ledger.record(Record::DropSource { source }, cx.fx);
            }
        }
        for (source, path) in present {
            cx.timers.cancel(&Timer::Vanished(source.clone()));
            let known = self.plans.get(&source).is_some_and(|p| p.path == path);
            if read_all || !known {
                cx.fx.push(Effect::Read {
                    path,
                    complete: true,
                });
            }
        }
    }

    pub(super) fn remove_plan(&mut self, source: &Source, cx: &mut Cx) {
        cx.timers.cancel(&Timer::Vanished(source.clone()));
        self.recent.forget(source);
        let Some(state) = self.plans.remove(source) else {
            return;
        };
        if state.error.is_some() {
            self.invalid -= 1;
        }
        if state.lifecycle.is_live() {
            cx.fx.push(Effect::Log(
                Log::new(
                    Level::Info,
                    format!(
                        "plan {}: abandon, {:?} → Abandoned (file deleted)",
                        state.path.display(),
                        state.lifecycle
                    ),
                )
                .plan(source)
                .plan_file(&state.path),
            ));
        }
        cx.ledger
            .withdraw_source(source, "its plan was deleted", cx.fx);
        children::plan_ended(cx, source, "its plan was deleted");
        if cx.ledger.plans().has(source) {
            cx.ledger.record(
                Record::DropSource {
                    source: source.clone(),
                },
                cx.fx,
            );
        }
    }

    /// The session a plan's wake-ups go to, if any.
    pub(super) fn route(&mut self, source: &Source, cx: &mut Cx) -> Option<String> {
        let state = self.plans.get_mut(source)?;
        let from_file = state.summary.as_ref().and_then(|p| p.session.clone());
        let session = from_file
            .or_else(|| match &state.origin {
                Origin::Session(s) => Some(s.clone()),
                _ => None,
            })
            .or_else(|| cx.config.default_session.clone());
        match session {
            Some(s) => match check_session(&s) {
                Ok(()) => Some(s),
                Err(why) => {
                    if !state.warned_route {
                        state.warned_route = true;
                        cx.fx.push(Effect::Log(
                            Log::new(
                                Level::Error,
                                format!("plan {}: session id {} {why}; it wakes nobody until it is fixed", state.path.display(), quoted(&s)),
                            )
                            .plan(source)
                            .plan_file(&state.path),
                        ));
                    }
                    None
                }
            },
            None => {
                if !state.warned_route {
                    state.warned_route = true;
                    cx.fx.push(Effect::Log(
                        Log::new(
                            Level::Warn,
                            format!("plan {} has no session (no session comment, no session directory, no default_session); it is tracked but wakes nobody", state.path.display()),
                        )
                        .plan(source)
                        .plan_file(&state.path),
                    ));
                }
                None
            }
        }
    }

    /// The wake rule for one plan: diff its ready set against what was
    /// announced for it — leave, withdraw the stale, announce the new, nudge
    /// when all is done. Returns whether announced steps missing from `plan`
    /// were kept because the read was not `complete`.
    pub(super) fn reconcile_plan(
        &mut self,
        source: &Source,
        plan: &Plan,
        complete: bool,
        cx: &mut Cx,
    ) -> bool {
        let Some(state) = self.plans.get(source) else {
            return false;
        };
        let live = state.lifecycle.is_live();
        let nudge_kind =
            state.lifecycle == Lifecycle::Wip && matches!(state.origin, Origin::Markdown(_));
        let path = state.path.clone();
        // A plan without steps has nothing to be done: no nudge.
        let all_checked = !plan.steps.is_empty() && plan.all_checked();
        let kept_missing = self.leave(source, plan, complete, all_checked, cx);
        if !live {
            return kept_missing;
        }
        let candidates = Self::candidates(cx.config, plan);
        if cx.config.mode == Mode::Reactive {
            self.withdraw_stale(source, plan, &candidates, cx);
        }
        let new: Vec<usize> = candidates
            .into_iter()
            .filter(|&i| {
                !cx.ledger
                    .plans()
                    .is_step_announced(source, &plan.steps[i].key)
            })
            .collect();
        let nudge = all_checked
            && cx.config.nudge_done
            && nudge_kind
            && !cx.ledger.plans().told_all_done(source);
        if new.is_empty() && !nudge {
            return kept_missing;
        }
        if cx.baseline {
            self.take_baseline(source, plan, &new, nudge, cx);
            return kept_missing;
        }
        let Some(session) = self.route(source, cx) else {
            return kept_missing;
        };
        if self.announce_steps(source, plan, &new, &session, &path, cx) && nudge {
            self.announce_done(source, plan, &session, &path, cx);
        }
        kept_missing
    }

    /// Rule 1, leave: checked steps, and (on a complete read) steps that no
    /// longer exist, leave the announced set; so does the all-done nudge of
    /// a plan no longer all done. A settle read may be a truncated file, so
    /// absence proves nothing then. Returns whether absent steps were kept.
    fn leave(
        &mut self,
        source: &Source,
        plan: &Plan,
        complete: bool,
        all_checked: bool,
        cx: &mut Cx,
    ) -> bool {
        // Whether the step of a key is open (`None`: no such step). A few
        // announced items (the common case: the step in progress) are
        // looked up step by step; more, in one sorted table of the steps
        // (keys are unique).
        let is_open = |s: &Step| s.status != StepStatus::Checked;
        let few = cx.ledger.plans().len_of(source) <= 4;
        let mut steps: Vec<(&str, bool)> = Vec::new();
        if !few {
            steps = plan
                .steps
                .iter()
                .map(|s| (s.key.as_str(), is_open(s)))
                .collect();
            steps.sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        let find = |k: &str| match few {
            true => plan.steps.iter().find(|s| s.key == k).map(is_open),
            false => steps
                .binary_search_by(|s| s.0.cmp(k))
                .ok()
                .map(|i| steps[i].1),
        };
        let open = |k: &str| find(k) == Some(true);
        let existing = |k: &str| find(k).is_some();
        let kept_missing = !complete && cx.ledger.plans().step_keys(source).any(|k| !existing(k));
        let leaving = cx.ledger.plans().items_where(source, |item| match item {
            Item::Work(Work::Step(k)) => !open(k) && (complete || existing(k)),
            Item::Note(Note::AllDone) => !all_checked,
            // A child's completion told: forgotten once the step is open
            // again, so its next completion is told too.
            Item::Note(Note::ChildDone(k)) => open(k),
            _ => false,
        });
        for item in leaving {
            let entry = cx.ledger.plans().entry(source, &item);
            let holder = entry.and_then(|a| a.session.clone());
            cx.ledger
                .unannounce(source, item.clone(), "its step was checked", cx.fx);
            // A step checked is progress: its session's reminder counts
            // in this plan start again.
            if let Some(session) = &holder {
                reminders::progress(cx.ledger, source, session, cx.fx);
            }
            if let Some(key) = item.step_key() {
                let checked = existing(key);
                children::step_left(cx, source, plan, key, checked, holder.as_deref());
            }
        }
        kept_missing
    }

    /// The steps that should be announced: the ready ones (reactive), or
    /// every open step in topological order (queue).
    fn candidates(config: &EngineConfig, plan: &Plan) -> Vec<usize> {
        match config.mode {
            Mode::Reactive => plan.ready(),
            Mode::Queue => plan
                .topo_order()
                .into_iter()
                .filter(|&i| plan.steps[i].status == StepStatus::Open)
                .collect(),
        }
    }

    /// Rule 2, stale: a prompt still waiting in an outbox for a step that
    /// is no longer ready (a dependency was unchecked) would now be early:
    /// withdraw it and un-announce, so it is announced again when it is
    /// ready again.
    fn withdraw_stale(&mut self, source: &Source, plan: &Plan, ready: &[usize], cx: &mut Cx) {
        // Nothing of this plan waiting (the common case): nothing stale.
        let outbox = cx.ledger.outbox();
        if !outbox.holds_source(source) {
            return;
        }
        let ready: BTreeSet<&str> = ready.iter().map(|&i| plan.steps[i].key.as_str()).collect();
        let stale: BTreeSet<Item> = outbox
            .of_source(source)
            .filter(|(_, p)| p.item.step_key().is_some_and(|k| !ready.contains(k)))
            .map(|(_, p)| p.item.clone())
            .collect();
        for item in stale {
            cx.ledger
                .unannounce(source, item, "its step is no longer ready", cx.fx);
        }
    }

    /// On a first start, what is ready is recorded, not announced.
    fn take_baseline(
        &mut self,
        source: &Source,
        plan: &Plan,
        new: &[usize],
        nudge: bool,
        cx: &mut Cx,
    ) {
        let items = new.iter().map(|&i| Item::step(&plan.steps[i].key));
        let all_done = nudge.then_some(Note::AllDone.into());
        let items: Vec<Item> = items.chain(all_done).collect();
        for item in items {
            cx.ledger.mark(source, item, None, cx.fx);
        }
    }

    /// Rule 3, announce: the new steps, in order, to `session`. Returns
    /// false when the session's outbox is full (the rest wait, unannounced).
    fn announce_steps(
        &mut self,
        source: &Source,
        plan: &Plan,
        new: &[usize],
        session: &str,
        path: &Path,
        cx: &mut Cx,
    ) -> bool {
        let file = display_name(path);
        // Queue mode puts the goal on the first prompt of the plan's dump.
        let first_dump = cx.config.mode == Mode::Queue && !cx.ledger.plans().has(source);
        // Fan-out: once the parent holds one ready step of this plan, each
        // further one may go to a child.
        let mut parent_busy = children::parent_busy(cx, source, session);
        for (n, &i) in new.iter().enumerate() {
            let step = &plan.steps[i];
            let item = Item::step(&step.key);
            let child = match cx.config.mode {
                Mode::Reactive if parent_busy => {
                    let at = children::StepRef {
                        item: &item,
                        key: &step.key,
                        label: &step.label,
                        file: &file,
                    };
                    children::assign(cx, source, at, session)
                }
                _ => None,
            };
            parent_busy |= child.is_none();
            let to = child.as_deref().unwrap_or(session);
            let (label, text) = match cx.config.mode {
                Mode::Reactive if child.is_some() => (
                    step.label.clone(),
                    children::child_prompt(plan, i, path, session),
                ),
                Mode::Reactive => {
                    let t = &cx.config.templates.step;
                    let text = render_step(t, plan, i, &file, path, source, session);
                    (step.label.clone(), text)
                }
                Mode::Queue => (
                    format!("q{}", step.num),
                    render_queue(plan, i, &file, first_dump && n == 0),
                ),
            };
            let wake = Wake {
                item,
                session: to,
                label,
                plan: file.clone(),
                text,
            };
            if !cx
                .ledger
                .announce(cx.config.outbox_cap, source, wake, cx.fx)
            {
                return false;
            }
        }
        true
    }

    /// Rule 4, all done: one prompt asking for the rename to `__done`.
    fn announce_done(
        &mut self,
        source: &Source,
        plan: &Plan,
        session: &str,
        path: &Path,
        cx: &mut Cx,
    ) {
        let file = display_name(path);
        let done_file = done_name(&file);
        let text = prompt::render(
            &cx.config.templates.done,
            &[
                ("goal", &plan.goal),
                ("file", &file),
                ("path", &path.display().to_string()),
                ("plan", &source.to_string()),
                ("session", session),
                ("done_file", &done_file),
            ],
        );
        let wake = Wake {
            item: Note::AllDone.into(),
            session,
            label: "all-done".into(),
            plan: file,
            text,
        };
        cx.ledger
            .announce(cx.config.outbox_cap, source, wake, cx.fx);
    }
}

/// `a == b` for two directories, by their bytes first: the shell joins
/// names onto the configured directory, so the bytes match for every
/// file in it, and `Path`'s component by component comparison (which also
/// equates `a//b` and `a/b/`) is only the fallback.
fn same_dir(a: &Path, b: &Path) -> bool {
    a.as_os_str() == b.as_os_str() || a == b
}

/// Why a plan with no steps has none, for its error: what a step looks
/// like, and the line that perhaps meant to be one.
fn no_steps(pp: &PlanPath, near_miss: Option<&(usize, String)>) -> String {
    match (&pp.origin, near_miss) {
        (Origin::Json, _) => "no tasks in its phases".to_string(),
        (_, Some((line, text))) => format!(
            "line {line} {} is not a step (a step is `- [ ] title`: a space inside the brackets and after the dash)",
            quoted(text)
        ),
        (_, None) => "no `- [ ] title` line".to_string(),
    }
}

/// The first line of a markdown file that looks like a checkbox written
/// wrong — a list marker or a bracket first, a bracket soon after — with
/// its 1-based number, trimmed to 60 characters.
fn near_miss_step(bytes: &[u8]) -> Option<(usize, String)> {
    let text = String::from_utf8_lossy(bytes);
    text.lines().enumerate().find_map(|(i, line)| {
        let t = line.trim_start();
        let head: String = t.chars().take(4).collect();
        let marker = t.starts_with(['-', '*', '+', '[']);
        (marker && head.contains('[')).then(|| (i + 1, t.chars().take(60).collect()))
    })
}

pub(super) fn display_name(path: &Path) -> String {
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
    source: &Source,
    session: &str,
) -> String {
    let step = &plan.steps[i];
    let deps = dep_labels(plan, i, None);
    let deps = if deps.is_empty() {
        "none".to_string()
    } else {
        deps.join(", ")
    };
    let close = closing(source, &step.title, path).to_string();
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
            ("plan", &source.to_string()),
            ("session", session),
            ("close", &close),
        ],
    )
}

/// How the step titled `title` of the plan `source` at `path` is closed.
pub(super) fn closing<'a>(source: &Source, title: &'a str, path: &'a Path) -> Close<'a> {
    match source {
        Source::SessionPlan(_) => Close::Checklist { title },
        Source::PlanJson(_) => Close::PlanJson { text: title, path },
        _ => Close::PlanFile { title, path },
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn trust(bytes: &[u8], complete: bool, fresh: bool, rechecked: u32) -> Trust {
        let how = ReadKind { complete, fresh };
        Trust::of(bytes, how, rechecked, PlanFormat::Markdown, 1 << 20)
    }

    #[test]
    fn a_complete_read_that_is_not_fresh_is_believed_whole() {
        let t = trust(b"# G\n- [ ] a\n- [ ] half", true, false, 0);
        assert!(!t.fresh && !t.confirm_later);
        assert_eq!(t.usable(b"# G\n- [ ] half"), b"# G\n- [ ] half");
    }

    #[test]
    fn a_settle_read_counts_whole_lines_only() {
        let t = trust(b"# G\n- [ ] half", false, false, 0);
        assert_eq!(t.usable(b"# G\n- [ ] half"), b"# G\n");
        assert_eq!(t.usable(b"no newline"), b"");
    }

    #[test]
    fn a_fresh_read_ending_mid_line_is_trimmed_and_read_again() {
        let t = trust(b"# G\n- [ ] half", true, true, 0);
        assert!(t.fresh && t.confirm_later);
        assert_eq!(t.usable(b"# G\n- [ ] half"), b"# G\n");
        // Ending with a newline, it is acted on at once, and confirmed only
        // if it lacks an announced step (the caller's decision).
        let t = trust(b"# G\n- [ ] a\n", true, true, 0);
        assert!(t.fresh && !t.confirm_later);
    }

    #[test]
    fn a_file_that_stays_fresh_is_believed_after_the_last_recheck() {
        let t = trust(b"# G\n- [ ] half", true, true, MAX_RECHECKS);
        assert!(!t.fresh && !t.confirm_later);
    }

    #[test]
    fn an_oversized_read_is_refused_whole_not_trimmed_under_the_cap() {
        let how = ReadKind {
            complete: false,
            fresh: false,
        };
        let t = Trust::of(b"# G\n- [ ] a\nxx", how, 0, PlanFormat::Markdown, 4);
        assert_eq!(t.usable(b"# G\n- [ ] a\nxx"), b"# G\n- [ ] a\nxx");
    }
}
