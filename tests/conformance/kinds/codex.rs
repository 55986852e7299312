//! Codex: the real `codex` TUI and its app-server daemon, offline against
//! the fake model (`crate::e2e_codex`'s rig). reveille follows the thread
//! by the app-server's notifications: no poll, so the interval is the
//! bound this suite holds them to.
//!
//! reveille reaches the daemon through a tap (`util::agents::codex::tap`)
//! that passes every frame on untouched until a scenario asks it for a
//! fault: the answer to reveille's delivery call (`thread/queue/add`, the
//! one answer that confirms a delivery) lost with the connection, once,
//! or every such answer late. The real server takes the call all the
//! same; only the answer is touched, which no real server can be made to
//! do at will.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::conformance::{toml, Kind, NotApplicable, Seen, Slow};
use crate::e2e_codex::rig::Rig;
use crate::util::agents::codex::tap::{Fault, WsTap};
use crate::util::daemon::Daemon;
use crate::util::plans::{task_plan_with, Step};
use crate::util::project::Project;
use crate::util::wait_until;

/// The bound on an event stream's lag (notifications come 15–24 ms after
/// the model's last byte).
const EVENTS: Duration = Duration::from_secs(1);

/// How late the tap passes on the answer to a delivery in `slow_answers`:
/// the turn on the prompt has started (and often ended) by then.
const LATE: Duration = Duration::from_secs(3);

/// The call that delivers a prompt, whose answer confirms it.
const DELIVERY: &str = "thread/queue/add";

pub struct Codex {
    rig: Rig,
}

impl Codex {
    fn tap(&self) -> &WsTap {
        self.rig
            .tap
            .as_ref()
            .expect("the conformance rig is tapped")
    }
}

impl Kind for Codex {
    const NAME: &'static str = "Codex";
    const T: Duration = Duration::from_secs(60);

    fn start(template: &str, tune: &dyn Fn(&mut Project)) -> Option<Codex> {
        let rig = Rig::tapped(|p| {
            p.set("prompt", "template", &toml(template));
            tune(p);
        })?;
        crate::conformance::wait_followed(&rig.project, &rig.session, Self::T);
        Some(Codex { rig })
    }

    fn project(&self) -> &Project {
        &self.rig.project
    }

    fn daemon(&self) -> &Daemon {
        self.rig.daemon()
    }

    fn session(&self) -> String {
        self.rig.session.clone()
    }

    fn plan(&self, goal: &str, steps: &[Step], extra: &str) -> PathBuf {
        task_plan_with(&self.rig.project.plan_dir, goal, steps, extra)
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
        self.rig.codex.type_prompt(text);
        wait_until("the person's turn at the model", Self::T, || {
            self.rig.model.turns_on(text).into_iter().next()
        });
        Ok(())
    }

    fn person_prompts(&self, texts: &[String]) -> Result<(), NotApplicable> {
        let mut client = self.rig.codex.client().expect("the app-server answers");
        for (i, text) in texts.iter().enumerate() {
            let id = format!("person-{}-{i}", std::process::id());
            client
                .queue(&self.rig.codex.thread, text, &id)
                .expect("thread/queue/add");
        }
        Ok(())
    }

    fn stop_program(&mut self) -> Result<(), NotApplicable> {
        self.rig.codex.stop();
        Ok(())
    }

    fn start_program(&mut self) {
        self.rig.codex.start_again();
    }

    fn slow_answers(&self) -> Result<Slow, NotApplicable> {
        self.tap().arm(DELIVERY, Fault::Delay(LATE), true);
        Ok(Slow::Answer)
    }

    fn overlapped(&self) -> usize {
        self.tap().overlapped()
    }

    fn fail_confirmation(&self) -> Result<(), NotApplicable> {
        self.tap().arm(DELIVERY, Fault::Drop, false);
        Ok(())
    }

    /// A thread id no app-server knows.
    fn absent(&self) -> String {
        "codex:019a0000-0000-7000-8000-00000000dead".into()
    }
}
