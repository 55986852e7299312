//! opencode: the real `opencode serve`, offline against the fake model
//! (`crate::e2e_opencode`'s rig), a person's turns sent by another client
//! (`prompt_async`). reveille follows the session by the server's SSE
//! events, so the interval is the bound this suite holds them to.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::conformance::{toml, Kind, NotApplicable, Seen, Slow};
use crate::e2e_opencode::rig::Rig;
use crate::util::agents::opencode::Mode;
use crate::util::daemon::Daemon;
use crate::util::plans::{task_plan_with, Step};
use crate::util::project::Project;
use crate::util::wait_until;

/// The bound on the event stream's lag (`session.idle` 47–120 ms after the
/// last byte from `serve`).
const EVENTS: Duration = Duration::from_secs(1);

/// Why a slow answer is not in the suite for this kind.
const SLOW: &str =
    "needs a double of opencode's server that answers a delivery slowly; not built yet";

pub struct Opencode {
    /// Declared first, so stopped first.
    daemon: Daemon,
    rig: Rig,
}

impl Kind for Opencode {
    const NAME: &'static str = "opencode";
    const T: Duration = Duration::from_secs(40);

    fn start(template: &str, tune: &dyn Fn(&mut Project)) -> Option<Opencode> {
        let mut rig = Rig::new(Mode::Serve)?;
        rig.project.set("prompt", "template", &toml(template));
        tune(&mut rig.project);
        let daemon = rig.daemon();
        Some(Opencode { daemon, rig })
    }

    fn project(&self) -> &Project {
        &self.rig.project
    }

    fn daemon(&self) -> &Daemon {
        &self.daemon
    }

    fn session(&self) -> String {
        self.rig.q()
    }

    fn plan(&self, goal: &str, steps: &[Step], extra: &str) -> PathBuf {
        task_plan_with(&self.rig.project.plan_dir, goal, steps, extra)
    }

    fn turns(&self, needle: &str) -> Vec<Seen> {
        super::model_turns(&self.rig.model, needle)
    }

    /// The rig's wait: on a timeout it says what the model was asked.
    fn closed(&self, plan: &Path, title: &str) {
        self.rig.wait_ticked(plan, &[title]);
    }

    fn interval(&self) -> Result<Duration, NotApplicable> {
        Ok(EVENTS)
    }

    fn person_turn(&self, text: &str) -> Result<(), NotApplicable> {
        self.rig.oc.prompt_async(&self.rig.session, text);
        wait_until("the person's turn at the model", Self::T, || {
            self.rig.model.turns_on(text).into_iter().next()
        });
        Ok(())
    }

    fn person_prompts(&self, texts: &[String]) -> Result<(), NotApplicable> {
        for text in texts {
            self.rig.oc.prompt_async(&self.rig.session, text);
        }
        Ok(())
    }

    fn stop_program(&mut self) -> Result<(), NotApplicable> {
        self.rig.oc.kill9();
        Ok(())
    }

    fn start_program(&mut self) {
        self.rig.oc.start_again();
    }

    fn slow_answers(&self) -> Result<Slow, NotApplicable> {
        Err(SLOW)
    }

    fn fail_confirmation(&self) -> Result<(), NotApplicable> {
        Err(
            "no double of opencode's server yet: the real one's message read \
             cannot be made to fail from outside",
        )
    }

    /// A session id the server does not have.
    fn absent(&self) -> String {
        "opencode:ses_00000000000000000000000dead".into()
    }
}
