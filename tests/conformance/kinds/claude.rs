//! Claude Code: the real `claude` in tmux, offline against the fake model
//! (`crate::e2e_claude`'s rig, warmed up by one typed prompt). reveille
//! follows it by its registry entry and transcript (watched, not polled),
//! so the interval is the bound this suite holds those to.
//!
//! A failed confirmation read: the session's transcript directory
//! (`<config>/projects`) is mounted over itself through a passthrough FUSE
//! filesystem (`crate::doubles::passthrough`) and every read of a
//! transcript by reveille's process fails with EIO — Claude Code's own
//! reads and writes pass — until reveille says it could not tell whether
//! the session took the prompt: through the `record` window and the look
//! at its end.
//!
//! A slow answer: Claude Code runs its `UserPromptSubmit` hooks before a
//! turn starts — on an inbox message too — and shows itself busy
//! meanwhile; its transcript records the message enqueued at once and the
//! turn's user entry only when the turn has answered. Every session here
//! starts with one such hook that sleeps three seconds once a flag file
//! exists (Claude Code takes up a hook added to `settings.json` while it
//! runs only after a while), and does nothing before.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::conformance::{toml, Kind, NotApplicable, Seen, Slow};
use crate::doubles::fuse::fuse_unavailable;
use crate::doubles::passthrough::Passthrough;
use crate::e2e_claude::rig::Rig;
use crate::util::daemon::Daemon;
use crate::util::plans::{task_plan_with, Step};
use crate::util::project::Project;
use crate::util::wait_until;

/// The bound on the registry's lag (it says idle ~100 ms after the last
/// byte).
const EVENTS: Duration = Duration::from_secs(1);

/// How long the pre-turn hook sleeps once slow answers are asked for.
const PRE_TURN: &str = "3";

pub struct Claude {
    /// Holds the flag that makes the pre-turn hook slow.
    flags: tempfile::TempDir,
    /// The transcripts' mount, once a fault is injected; dropped (and
    /// unmounted) before Claude Code and reveille stop.
    transcripts: OnceCell<Passthrough>,
    rig: Rig,
}

impl Kind for Claude {
    const NAME: &'static str = "Claude Code";
    const T: Duration = Duration::from_secs(30);

    fn start(template: &str, tune: &dyn Fn(&mut Project)) -> Option<Claude> {
        let flags = tempfile::tempdir().unwrap();
        let slow = flags.path().join("slow").display().to_string();
        let slept = flags.path().join("slept").display().to_string();
        let hook = format!("if [ -e '{slow}' ]; then echo >> '{slept}'; sleep {PRE_TURN}; fi");
        let hooks = serde_json::json!({
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook}]}],
        });
        let rig = Rig::with_hooks(hooks, |p| {
            p.set("prompt", "template", &toml(template));
            tune(p);
        })?;
        Some(Claude {
            flags,
            transcripts: OnceCell::new(),
            rig,
        })
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

    /// While reveille's transcript reads fail, first wait until it has
    /// said it could not tell, then let its reads pass again.
    fn closed(&self, plan: &Path, title: &str) {
        if let Some(t) = self.transcripts.get().filter(|t| t.failing()) {
            let doubt = format!("could not tell whether session {} took", self.session());
            self.rig.daemon().wait_log(&doubt, Self::T);
            t.heal();
        }
        super::wait_ticked(plan, title, Self::T);
        // Slow answers asked for: the step's turn waited for the hook.
        if self.flags.path().join("slow").exists() {
            let slept = self.flags.path().join("slept");
            assert!(slept.exists(), "the pre-turn hook never slept");
        }
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

    /// Its pre-turn hook takes three seconds from now on: the prompt is
    /// taken at once, its turn starts seconds later.
    fn slow_answers(&self) -> Result<Slow, NotApplicable> {
        std::fs::write(self.flags.path().join("slow"), "").unwrap();
        Ok(Slow::Turn)
    }

    fn fail_confirmation(&self) -> Result<(), NotApplicable> {
        if let Some(why) = fuse_unavailable() {
            panic!("the transcripts' fault needs FUSE: {why}");
        }
        let dir = self.rig.claude.config_dir.join("projects");
        let mount = Passthrough::over(&dir).unwrap_or_else(|e| panic!("{e}"));
        mount.fail_reads(self.rig.daemon_pid(), ".jsonl");
        if self.transcripts.set(mount).is_err() {
            panic!("the transcripts are mounted already");
        }
        Ok(())
    }

    /// A session id no registry entry names.
    fn absent(&self) -> String {
        "claude:00000000-0000-4000-8000-00000000dead".into()
    }
}
