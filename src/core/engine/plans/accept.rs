//! Whether a parse of a plan file counts: a rewrite caught between its
//! truncate and its write proves nothing, a plan with no steps wakes
//! nobody (said once, with the line that perhaps meant to be one), and an
//! error is said once per distinct error — unless the read was fresh, when
//! it waits for the re-read.

use std::path::Path;

use super::summary::Summary;
use super::trust::Trust;
use super::{Origin, Parse, PlanPath, Plans};
use crate::core::effect::{Effect, Level, Log};
use crate::core::engine::config::Now;
use crate::core::engine::context::Cx;
use crate::core::lines::quoted;
use crate::core::plan::Plan;

impl Plans {
    /// Judge a parse: the plan to reconcile, or `None` when it proves
    /// nothing (a rewrite caught mid-way, an error that may be transient)
    /// or is an error (said once per distinct error).
    pub(super) fn accept(
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
            // A fresh read may be a writer's first half: judged once it has
            // settled, so a transient error (or emptiness) is never said.
            Ok(plan) if plan.steps.is_empty() && !matches!(pp.origin, Origin::Session(_)) => {
                if trust.fresh {
                    self.recheck(now, path, trust.rechecked, cx);
                } else {
                    self.steps_less(pp, path, &plan, parsed.near_miss.as_ref(), cx);
                }
                None
            }
            Ok(plan) => {
                self.valid(pp, path, &plan, parsed.ticks_only, cx);
                Some(plan)
            }
            Err(_) if trust.fresh => {
                self.recheck(now, path, trust.rechecked, cx);
                None
            }
            Err(e) => {
                let msg = e.to_string();
                let log = Log::new(
                    Level::Error,
                    format!(
                        "invalid plan {}: {msg}; no wake-ups from it until it is fixed",
                        path.display()
                    ),
                )
                .line(e.line);
                self.set_error(pp, path, msg, log, cx);
                None
            }
        }
    }

    /// A plan file with no step in it wakes nobody: said once, and listed
    /// with the reason.
    fn steps_less(
        &mut self,
        pp: &PlanPath,
        path: &Path,
        plan: &Plan,
        near_miss: Option<&(usize, String)>,
        cx: &mut Cx,
    ) {
        let msg = no_steps(pp, near_miss);
        let mut log = Log::new(
            Level::Warn,
            format!(
                "plan {} has no steps: {msg}; it is tracked and wakes nobody until it has one",
                path.display()
            ),
        );
        if let Some((line, _)) = near_miss {
            log = log.line(*line);
        }
        self.set_error(pp, path, msg, log, cx);
        if let Some(state) = self.plans.get_mut(&pp.source) {
            state.summary = Some(Summary::of(plan, |_| false));
        }
    }

    /// A plan with steps: its error (if any) is over, and its summary
    /// follows the parse.
    fn valid(&mut self, pp: &PlanPath, path: &Path, plan: &Plan, ticks_only: bool, cx: &mut Cx) {
        let Some(state) = self.plans.get_mut(&pp.source) else {
            return;
        };
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
            // The same steps as the last parse, some ticked or unticked:
            // goal and session are kept as they were.
            Some(summary) if ticks_only => summary.follow_ticks(plan, announced),
            summary => *summary = Some(Summary::of(plan, announced)),
        }
    }

    /// The plan's error is `msg`: said with `log` (given its plan and
    /// file here) only when it differs from the error already said, and
    /// counted invalid once.
    pub(super) fn set_error(
        &mut self,
        pp: &PlanPath,
        path: &Path,
        msg: String,
        log: Log,
        cx: &mut Cx,
    ) {
        let Some(state) = self.plans.get_mut(&pp.source) else {
            return;
        };
        if state.error.as_deref() == Some(msg.as_str()) {
            return;
        }
        cx.fx
            .push(Effect::Log(log.plan(&pp.source).plan_file(path)));
        if state.error.replace(msg).is_none() {
            self.invalid += 1;
        }
    }
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
pub(super) fn near_miss_step(bytes: &[u8]) -> Option<(usize, String)> {
    let text = String::from_utf8_lossy(bytes);
    text.lines().enumerate().find_map(|(i, line)| {
        let t = line.trim_start();
        let head: String = t.chars().take(4).collect();
        let marker = t.starts_with(['-', '*', '+', '[']);
        (marker && head.contains('[')).then(|| (i + 1, t.chars().take(60).collect()))
    })
}
