//! ollie-9p: the real olliesrv under real 9pfuse (`crate::realollie`'s
//! rig), its agent a real ollie session talking to the server's fake model.
//! reveille follows its state by reading `idx` once a second (the default
//! `sessions.state_poll_ms`), and around a delivery by `statewait`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::conformance::{toml, Kind, NotApplicable, Seen, Slow};
use crate::realollie::{Rig, AGENT};
use crate::util::daemon::Daemon;
use crate::util::plans::Step;
use crate::util::project::Project;
use crate::util::realollie::Options;
use crate::util::wait_until;

/// The `idx` poll: the default, one second.
const POLL: Duration = Duration::from_secs(1);

/// Why a restart does not apply to ollie-9p.
pub const RESTART: &str = "an olliesrv restart loses every session (none are restored): a \
     prompt then waits for a session that is gone, which waiting_reason covers";

pub struct Ollie {
    /// Declared first, so stopped first.
    daemon: Daemon,
    rig: Rig,
}

impl Kind for Ollie {
    const NAME: &'static str = "ollie-9p (real olliesrv)";
    const T: Duration = Duration::from_secs(20);

    fn start(template: &str, tune: &dyn Fn(&mut Project)) -> Option<Ollie> {
        let mut rig = Rig::new(Options::default(), template)?;
        let poll = POLL.as_millis().to_string();
        rig.project.set("sessions", "state_poll_ms", &poll);
        rig.project.set("prompt", "template", &toml(template));
        tune(&mut rig.project);
        let daemon = Daemon::start(&rig.project);
        crate::conformance::wait_followed(&rig.project, AGENT, Self::T);
        Some(Ollie { daemon, rig })
    }

    fn project(&self) -> &Project {
        &self.rig.project
    }

    fn daemon(&self) -> &Daemon {
        &self.daemon
    }

    fn session(&self) -> String {
        AGENT.into()
    }

    fn plan(&self, goal: &str, steps: &[Step], extra: &str) -> PathBuf {
        self.rig.plan_with(goal, steps, extra).0
    }

    fn turns(&self, needle: &str) -> Vec<Seen> {
        let turns = self.rig.ollie.turns_with(needle);
        turns
            .into_iter()
            .map(|t| Seen {
                started: t.started,
                ended: t.ended,
                prompt: t.prompt,
            })
            .collect()
    }

    fn closed(&self, plan: &Path, title: &str) {
        super::wait_ticked(plan, title, Self::T);
    }

    fn interval(&self) -> Result<Duration, NotApplicable> {
        Ok(POLL)
    }

    fn person_turn(&self, text: &str) -> Result<(), NotApplicable> {
        self.rig.ollie.submit(AGENT, text);
        wait_until("the person's turn to show in idx", Self::T, || {
            let state = self.rig.ollie.state(AGENT)?;
            (state != "idle").then_some(())
        });
        Ok(())
    }

    fn person_prompts(&self, texts: &[String]) -> Result<(), NotApplicable> {
        for text in texts {
            self.rig.ollie.submit(AGENT, text);
        }
        Ok(())
    }

    fn stop_program(&mut self) -> Result<(), NotApplicable> {
        Err(RESTART)
    }

    fn start_program(&mut self) {
        unreachable!("{RESTART}")
    }

    fn slow_answers(&self) -> Result<Slow, NotApplicable> {
        Err(
            "a real session's pre-turn hooks are its own configuration, not the \
             suite's; the ollie-9p double delays a turn's start instead",
        )
    }

    fn fail_confirmation(&self) -> Result<(), NotApplicable> {
        Err(
            "the real server's reads cannot be made to fail from outside; \
             the ollie-9p double injects the fault (EIO on prompt.prev)",
        )
    }

    fn absent(&self) -> String {
        "absent-agent".into()
    }
}
