//! Plans in the engine: which file is which plan, reading and parsing it,
//! its lifecycle, its route, and the diff of its ready steps against what
//! was announced (`reconcile_plan`, the heart of the wake rule).
//!
//! Here: the plan table, which path is which plan, and a read followed
//! from its bytes to its lifecycle and its reconcile. Beside it: how far a
//! read is trusted (`trust.rs`), whether a parse counts (`accept.rs`), what
//! is kept of it (`summary.rs`), listings (`listing.rs`), where a plan's
//! prompts go (`route.rs`), the wake rule (`reconcile.rs`) and the
//! prompts' texts (`text.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::children;
use super::config::{EngineConfig, Now};
use super::context::Cx;
use super::recent::Recent;
use super::reminders::Open;
use super::timers::{Recheck, Timer};
use super::PlanView;
use crate::core::effect::{Effect, Level, Log};
use crate::core::input::{Change, FileRead};
use crate::core::lifecycle::Lifecycle;
use crate::core::name::{dir_and_name, plan_key, FileState, PlanKey};
use crate::core::plan::{over_cap, parse_plan, Plan, PlanError, PlanFormat};
use crate::core::session::check_name;
use crate::core::source::Source;
use accept::near_miss_step;
use summary::Summary;
use text::closing;
use text::display_name;
use trust::Trust;

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
    path: PathBuf,
    origin: Origin,
    lifecycle: Lifecycle,
    /// What `status` and routing need of the last valid parse; `None` until
    /// the file first parses. The parse itself is not kept (but for the few
    /// plans read last, `Recent`): each change is read and parsed afresh,
    /// and 10,000 parsed plans would cost tens of megabytes for nothing.
    summary: Option<Summary>,
    /// The current parse error, so each distinct error is logged once.
    error: Option<String>,
    /// Whether "no session" was already said for this plan.
    warned_route: bool,
}

/// The plans part: which file is which plan, what is known of each, and
/// the re-reads that confirm fresh reads.
#[derive(Debug, Default)]
pub(super) struct Plans {
    /// Every tracked plan, by identity.
    plans: BTreeMap<Source, PlanState>,
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
        let line = step.written.as_deref().unwrap_or(&title);
        let call = closing(source, line, &plan.path).to_string();
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
        // An oversized file is refused as a parse would refuse it, with
        // its real size (the read stopped one byte past the cap).
        let (mut bytes, oversized) = match read {
            FileRead::Oversized { size, .. } => (Vec::new(), Some(size)),
            read => match self.bytes_of(now, &pp, &path, read, cx) {
                Some(bytes) => (bytes, None),
                None => return,
            },
        };
        cx.timers.cancel(&Timer::Vanished(pp.source.clone()));
        let format = match pp.origin {
            Origin::Json => PlanFormat::Json,
            _ => PlanFormat::Markdown,
        };
        if oversized.is_some() && !how.complete {
            // A file still being written past the cap: its error (with
            // its size) is said once, from the complete read after it
            // settled, not once per size it grew through.
            self.recheck(now, &path, rechecked, cx);
            return;
        }
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
        let plan = match oversized {
            Some(size) => Err(over_cap(size, max)),
            None => flipped.map_or_else(|| parse_plan(format, &bytes, max), Ok),
        };
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
            failed => {
                let err = failed.failure().unwrap_or_default();
                // Tracked even if never read, so `status` lists it with
                // its error and `STATUS=` counts it invalid.
                self.track(pp, path, cx);
                let msg = format!("cannot read it: {err}");
                let log = Log::new(
                    Level::Error,
                    format!(
                        "cannot read plan {}: {err}; no wake-ups from it until it can be read",
                        path.display()
                    ),
                );
                self.set_error(pp, path, msg, log, cx);
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
}

/// `a == b` for two directories, by their bytes first: the shell joins
/// names onto the configured directory, so the bytes match for every
/// file in it, and `Path`'s component by component comparison (which also
/// equates `a//b` and `a/b/`) is only the fallback.
fn same_dir(a: &Path, b: &Path) -> bool {
    a.as_os_str() == b.as_os_str() || a == b
}

mod accept;
mod listing;
mod reconcile;
mod route;
mod summary;
mod text;
mod trust;
