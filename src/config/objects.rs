//! Stage three of the configuration: the validated [`Settings`] turned
//! into the objects the rest of the program runs on, in one place, so
//! nothing else re-derives them (ripgrep's `hiargs`): the engine's
//! configuration here; the shell's workers take their few settings as
//! they are.

use crate::core::effect::Level;
use crate::core::engine::{EngineConfig, Fanout, Templates};
use crate::core::prompt;

use super::Settings;

/// The engine's view of the settings. `log_level` is the least severe
/// level the installed log filter keeps: the engine builds no entry below it.
pub fn engine_config(s: &Settings, log_level: Level) -> EngineConfig {
    let mut c = EngineConfig::new(&s.project.plan_dir, &s.sessions.dir);
    c.session_plans = s.sessions.session_plans;
    c.default_session = s.project.default_session.clone();
    c.mode = s.project.mode;
    c.nudge_done = s.project.nudge_done;
    c.max_plan_bytes = usize::try_from(s.project.max_plan_bytes).unwrap_or(usize::MAX);
    c.settle = s.project.settle;
    c.retry_initial = s.sessions.retry_initial;
    c.retry_max = s.sessions.retry_max;
    c.outbox_cap = s.sessions.outbox_cap;
    c.mounts = s.events.mounts.clone();
    c.beads_root = s.events.beads_root.display().to_string();
    c.assignees = s.events.assignees.clone();
    c.notify_completed = s.events.notify_completed;
    c.fanout = Fanout {
        max_children: s.fanout.max_children,
        max_total: s.fanout.max_total,
        keep_children: s.fanout.keep_children,
    };
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
        remind: pick(&s.prompt.remind_template, prompt::DEFAULT_REMIND),
    };
    c.remind_after = s.sessions.remind_after;
    c.remind_max = s.sessions.remind_max;
    c.stuck_after = s.notify.stuck_after;
    c.log_level = log_level;
    c
}
