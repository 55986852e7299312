//! `reveille why FILE [STEP]`: every unchecked step of one plan and what it
//! still waits for, and — when the daemon knows the plan (its state
//! directory, read as `status` reads it) — whether each step was
//! announced, is pending in an outbox, or was delivered, and for a ready
//! step that was not announced, why not (doc/TROUBLESHOOTING.md).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::core::lifecycle::Lifecycle;
use crate::core::plan::{Plan, StepStatus};
use crate::core::ready_report::{explain, one_line, Standing, StepRef, StepWhy};
use crate::core::record::Item;
use crate::core::source::Source;
use crate::shell::session_view::SessionFile;
use crate::shell::status::Known;

/// What the daemon did with one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Delivery {
    /// Not in the announced set: not ready yet, or — for a ready step —
    /// `reason`.
    NotAnnounced {
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Ready at the very first start: recorded, never prompted.
    Baseline,
    /// Announced; the prompt waits in the session's outbox, and why, as
    /// far as the daemon last saw the session.
    Pending {
        session: String,
        seq: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        waits: Option<String>,
    },
    /// Announced and written to the session.
    Delivered { session: Option<String> },
}

/// One step of the answer.
#[derive(Debug, Serialize)]
pub struct StepAnswer {
    #[serde(flatten)]
    pub step: StepWhy,
    /// `None` when the daemon does not know the plan.
    pub daemon: Option<Delivery>,
}

/// The answer for one plan file.
#[derive(Debug, Serialize)]
pub struct Why {
    pub file: String,
    pub goal: String,
    /// Whether the daemon's state knows this plan.
    pub known_to_daemon: bool,
    /// The pid of the project's running daemon (`None`: none runs).
    pub running: Option<u32>,
    /// The unchecked steps (or the one asked about), in file order.
    pub steps: Vec<StepAnswer>,
    /// The step asked about, when it is already checked.
    pub checked: Option<StepRef>,
}

/// The engine's source id of the plan at `path`, if the daemon lists it.
fn source_of<'a>(known: &'a Known, path: &Path) -> Option<&'a Source> {
    let want = std::fs::canonicalize(path).ok()?;
    known
        .plans
        .iter()
        .find(|p| std::fs::canonicalize(&p.path).is_ok_and(|c| c == want))
        .map(|p| &p.source)
}

/// The project's daemon as `why` sees it: its state, whether it runs, and
/// the outbox cap it runs with.
pub struct Daemon<'a> {
    pub known: &'a Known,
    pub running: Option<u32>,
    pub outbox_cap: usize,
    /// The sessions as the running daemon last saw them (`sessions.json`).
    pub sessions: BTreeMap<String, SessionFile>,
}

/// Why a ready step of the plan `source` is not announced, as far as the
/// state tells.
fn not_announced(d: &Daemon<'_>, source: &Source) -> String {
    let Some(plan) = d.known.plans.iter().find(|p| &p.source == source) else {
        return "the daemon does not track this plan".into();
    };
    if matches!(plan.lifecycle, Lifecycle::Done | Lifecycle::Abandoned) {
        return format!(
            "the plan is {:?}: an ended plan wakes nobody",
            plan.lifecycle
        );
    }
    let Some(session) = &plan.session else {
        return "the plan has no session: add `<!-- session: <id> -->` to it, or set project.default_session".into();
    };
    let queued = d.known.memory.outbox.get(session).map_or(0, |q| q.len());
    if queued >= d.outbox_cap {
        return format!("the outbox of session {session} is full ({queued} prompts, outbox_cap = {}): announced once it drains", d.outbox_cap);
    }
    match d.running {
        None => "no daemon runs: announced when it starts".into(),
        Some(_) => {
            "not yet: the daemon announces it once it has read this version of the file".into()
        }
    }
}

fn delivery(d: &Daemon<'_>, source: &Source, step: &StepWhy) -> Delivery {
    let known = d.known;
    let item = Item::step(&step.key);
    let Some(a) = known.memory.plans.entry(source, &item) else {
        let reason = (step.standing == Standing::Ready).then(|| not_announced(d, source));
        return Delivery::NotAnnounced { reason };
    };
    if a.baseline {
        return Delivery::Baseline;
    }
    let pending = known.memory.outbox.iter().find_map(|(session, queue)| {
        queue
            .iter()
            .find(|p| &p.source == source && p.item == item)
            .map(|p| (session.clone(), p.seq))
    });
    match pending {
        Some((session, seq)) => Delivery::Pending {
            waits: waits(d.sessions.get(&session), seq),
            session,
            seq,
        },
        None => Delivery::Delivered {
            session: a.session.clone(),
        },
    }
}

/// Why a prompt waits for `session`, as the daemon last saw it: gone or
/// unreachable (with why), busy, or not known.
fn waits(session: Option<&SessionFile>, seq: u64) -> Option<String> {
    let s = session?;
    if s.writing == Some(seq) {
        return Some(
            "in flight: written to the session, and whether it took it is not known yet (it is not sent again before that is)".into(),
        );
    }
    if let Some(why) = &s.absent {
        return Some(format!("the session is {why}"));
    }
    if let Some(refused) = s
        .told
        .as_ref()
        .and_then(|t| t.outcome.strip_prefix("refused: "))
    {
        return Some(format!("the last write was refused: {refused}"));
    }
    match s.state.as_deref() {
        Some("idle") => None,
        Some(busy) => Some(format!("the session is running a turn ({busy})")),
        None => None,
    }
}

/// Answers `why` for `plan`, read from `path`; `only` restricts it to one
/// step (which may be checked). `daemon` is the daemon's, if it has state.
pub fn answer(plan: &Plan, path: &Path, only: Option<usize>, daemon: Option<&Daemon<'_>>) -> Why {
    let source = daemon.and_then(|d| Some((d, source_of(d.known, path)?)));
    let mut steps = explain(plan);
    if let Some(num) = only {
        steps.retain(|s| plan.steps.iter().any(|p| p.num == num && p.label == s.id));
    }
    let steps = steps
        .into_iter()
        .map(|step| StepAnswer {
            daemon: source.map(|(d, src)| delivery(d, src, &step)),
            step,
        })
        .collect();
    Why {
        file: path.display().to_string(),
        goal: plan.goal.clone(),
        known_to_daemon: source.is_some(),
        running: daemon.and_then(|d| d.running),
        steps,
        checked: only.and_then(|num| {
            plan.steps
                .iter()
                .find(|s| s.num == num && s.status == StepStatus::Checked)
                .map(|s| StepRef {
                    id: s.label.clone(),
                    title: s.title.clone(),
                })
        }),
    }
}

fn delivery_text(d: &Delivery) -> String {
    match d {
        Delivery::NotAnnounced { reason: None } => "not announced".into(),
        Delivery::NotAnnounced { reason: Some(r) } => format!("not announced: {r}"),
        Delivery::Baseline => {
            "recorded as the baseline at the first start (never announced)".into()
        }
        Delivery::Pending {
            session,
            seq,
            waits,
        } => {
            let waits = waits.as_ref().map_or(String::new(), |w| format!(": {w}"));
            format!("announced; pending in the outbox of session {session} (prompt {seq}){waits}")
        }
        Delivery::Delivered { session: Some(s) } => {
            format!("announced; delivered to session {s}")
        }
        Delivery::Delivered { session: None } => "announced; delivered".into(),
    }
}

/// The human-readable form: one `id<TAB>title` line per step, then
/// indented lines saying where it stands.
pub fn render(w: &Why) -> String {
    let mut out = format!("plan    {}: {}\n", w.file, w.goal);
    if !w.known_to_daemon {
        out.push_str("daemon  does not know this plan (not in its plan directory, or no state)\n");
    } else if w.running.is_none() {
        out.push_str("daemon  not running: nothing is announced or delivered until it starts\n");
    }
    if let Some(c) = &w.checked {
        out.push_str(&format!("{}\t{}\n  checked\n", c.id, one_line(&c.title)));
    }
    if w.steps.is_empty() && w.checked.is_none() {
        out.push_str("every step is checked\n");
    }
    for s in &w.steps {
        out.push_str(&format!("{}\t{}\n", s.step.id, one_line(&s.step.title)));
        match s.step.standing {
            Standing::Ready => out.push_str("  ready\n"),
            Standing::Doing => out.push_str("  doing (started; never announced)\n"),
            Standing::Waiting => {
                for r in &s.step.waits_for {
                    out.push_str(&format!("  waits for {}\t{}\n", r.id, one_line(&r.title)));
                }
            }
        }
        if let Some(d) = &s.daemon {
            out.push_str(&format!("  {}\n", delivery_text(d)));
        }
    }
    out
}
