//! Claude Code: the real `claude` in tmux, offline against the fake model
//! (`crate::e2e_claude`'s rig, warmed up by one typed prompt). reveille
//! follows it by its registry entry and transcript (watched, not polled),
//! so the interval is the bound this suite holds those to.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::conformance::{toml, Kind, NotApplicable, Seen, Slow};
use crate::e2e_claude::rig::Rig;
use crate::util::daemon::Daemon;
use crate::util::plans::{task_plan_with, Step};
use crate::util::project::Project;
use crate::util::wait_until;

/// The bound on the registry's lag (it says idle ~100 ms after the last
/// byte).
const EVENTS: Duration = Duration::from_secs(1);

/// Why a slow answer is not in the suite for this kind.
const SLOW: &str =
    "needs a double of Claude Code's inbox that answers a delivery slowly; not built yet";

pub struct Claude {
    rig: Rig,
}

impl Kind for Claude {
    const NAME: &'static str = "Claude Code";
    const T: Duration = Duration::from_secs(30);

    fn start(template: &str, tune: &dyn Fn(&mut Project)) -> Option<Claude> {
        let rig = Rig::start(|p| {
            p.set("prompt", "template", &toml(template));
            tune(p);
        })?;
        Some(Claude { rig })
    }

    fn project(&self) -> &Project {
        &self.rig.project
    }

    fn daemon(&self) -> &Daemon {
        self.rig.daemon()
    }

    fn session(&self) -> String {
        self.rig.session()
    }

    fn plan(&self, goal: &str, steps: &[Step], extra: &str) -> PathBuf {
        task_plan_with(&self.rig.plan_dir, goal, steps, extra)
    }

    fn turns(&self, needle: &str) -> Vec<Seen> {
        super::model_turns(&self.rig.model, needle)
    }

    fn closed(&self, plan: &Path, title: &str) {
        super::wait_ticked(plan, title, Self::T);
    }

    fn interval(&self) -> Result<Duration, NotApplicable> {
        Ok(EVENTS)
    }

    fn person_turn(&self, text: &str) -> Result<(), NotApplicable> {
        self.rig.claude.type_prompt(text);
        wait_until("the person's turn at the model", Self::T, || {
            self.rig.model.turns_on(text).into_iter().next()
        });
        Ok(())
    }

    fn person_prompts(&self, texts: &[String]) -> Result<(), NotApplicable> {
        for text in texts {
            self.rig.claude.send_later(&self.rig.reg, text);
        }
        Ok(())
    }

    fn stop_program(&mut self) -> Result<(), NotApplicable> {
        self.rig.claude.kill();
        Ok(())
    }

    fn start_program(&mut self) {
        let id = self.rig.reg.session_id.clone();
        self.rig.reg = self.rig.claude.resume(&id);
    }

    fn slow_answers(&self) -> Result<Slow, NotApplicable> {
        Err(SLOW)
    }

    fn fail_confirmation(&self) -> Result<(), NotApplicable> {
        Err(
            "no double of Claude Code yet: the real one's transcript read \
             cannot be made to fail from outside",
        )
    }

    /// A session id no registry entry names.
    fn absent(&self) -> String {
        "claude:00000000-0000-4000-8000-00000000dead".into()
    }
}
