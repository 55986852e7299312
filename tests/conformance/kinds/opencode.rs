//! opencode: the real `opencode serve`, offline against the fake model
//! (`crate::e2e_opencode`'s rig), a person's turns sent by another client
//! (`prompt_async`). reveille follows the session by the server's SSE
//! events, so the interval is the bound this suite holds them to.
//!
//! `Opencode<true>` puts a fault-injecting proxy (`crate::util::faultproxy`)
//! between reveille and the server, for the faults the real server cannot
//! be made to show: a read that fails, an answer that comes late, an
//! event lost on the way. Everything else reaches the real server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reveille::shell::agents::opencode::deliver::LOOK_BACK;

use crate::conformance::{toml, unix_of, Kind, NotApplicable, Seen, Slow};
use crate::e2e_opencode::rig::Rig;
use crate::util::agents::opencode::Mode;
use crate::util::daemon::Daemon;
use crate::util::faultproxy::{Fault, FaultProxy};
use crate::util::plans::{task_plan_with, Step};
use crate::util::project::Project;
use crate::util::wait_until;

/// The bound on the event stream's lag (`session.idle` 47–120 ms after the
/// last byte from `serve`).
const EVENTS: Duration = Duration::from_secs(1);

/// How late the answer to reveille's post comes (`slow_answers`): longer
/// than opencode takes to run a whole turn of the fake model, so the step
/// is ticked, and the next one ready, while the post is unanswered.
pub const SLOW: Duration = Duration::from_secs(4);

/// Why a fault needs the proxy.
const NO_PROXY: &str = "injected by the proxy: run as Opencode<true>";

pub struct Opencode<const PROXY: bool = false> {
    /// Declared first, so stopped first.
    daemon: Daemon,
    rig: Rig,
    proxy: Option<FaultProxy>,
}

impl<const PROXY: bool> Opencode<PROXY> {
    fn proxy(&self) -> Result<&FaultProxy, NotApplicable> {
        self.proxy.as_ref().ok_or(NO_PROXY)
    }
}

impl<const PROXY: bool> Kind for Opencode<PROXY> {
    const NAME: &'static str = "opencode";
    const T: Duration = Duration::from_secs(40);

    fn start(template: &str, tune: &dyn Fn(&mut Project)) -> Option<Self> {
        let mut rig = Rig::new(Mode::Serve)?;
        rig.project.set("prompt", "template", &toml(template));
        let proxy = PROXY.then(|| FaultProxy::start(rig.oc.port));
        if let Some(proxy) = &proxy {
            rig.project.set("opencode", "url", &toml(&proxy.url()));
        }
        tune(&mut rig.project);
        let daemon = rig.daemon();
        Some(Opencode { daemon, rig, proxy })
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

    /// Every answer to reveille's `prompt_async` comes [`SLOW`] late: the
    /// server has the prompt, and runs its turn, meanwhile.
    fn slow_answers(&self) -> Result<Slow, NotApplicable> {
        let proxy = self.proxy()?;
        proxy.fail("POST", "/prompt_async", Fault::Delay(SLOW), usize::MAX);
        Ok(Slow::Answer)
    }

    /// The answers to reveille's prompts are lost on the way (the event
    /// stream's assistant messages), so a prompt's taking is told only by
    /// the engine's look after opencode's record window; and the first
    /// read of that look, of the session's messages, meets a reset
    /// connection.
    fn fail_confirmation(&self) -> Result<(), NotApplicable> {
        let proxy = self.proxy()?;
        proxy.lose_events(&["message.updated", "\"role\":\"assistant\""]);
        let look = format!("/message?limit={}", LOOK_BACK);
        proxy.fail("GET", &look, Fault::Reset, 1);
        Ok(())
    }

    fn writes(&self, needle: &str) -> Option<Vec<(f64, Option<f64>)>> {
        let crossed = self.proxy.as_ref()?.crossed();
        let posts = crossed.into_iter().filter(|c| {
            c.method == "POST"
                && c.target.ends_with("/prompt_async")
                && String::from_utf8_lossy(&c.body).contains(needle)
        });
        Some(
            posts
                .map(|c| (unix_of(c.at), c.answered.map(unix_of)))
                .collect(),
        )
    }

    /// A session id the server does not have.
    fn absent(&self) -> String {
        "opencode:ses_00000000000000000000000dead".into()
    }
}
