//! ollie-9p through its FUSE double (`crate::doubles::ollie`), for what the
//! real server cannot be made to do: a failed read (EIO, as its store reads
//! give when they time out). Its turns last 0.2 s, shorter than the 1 s
//! `idx` poll; at each turn's tool call the agent ticks what its prompt's
//! `TICK` lines name, as the real server's fake model does.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::conformance::{toml, unix_of, Kind, NotApplicable, Seen, Slow};
use crate::doubles::fuse::fuse_unavailable;
use crate::doubles::ollie::{Ollie, Options};
use crate::util::daemon::Daemon;
use crate::util::fakemodel::script::Script;
use crate::util::plans::{task_plan_with, Step};
use crate::util::project::Project;
use crate::util::wait_until;

const AGENT: &str = "agent";
const POLL: Duration = Duration::from_secs(1);

pub struct OllieDouble {
    /// Fields drop in order: reveille first, the mount last.
    daemon: Daemon,
    project: Project,
    _cwd: tempfile::TempDir,
    ollie: Ollie,
}

/// Tick `title` in `path` as the agent's tool would (no panic on a
/// server thread: a missing line is the agent's failed edit).
fn tick(path: &str, title: &str) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let open = format!("- [ ] {title}");
    let Some(line) = text.lines().find(|l| l.trim() == open) else {
        return;
    };
    let done = line.replacen("- [ ] ", "- [x] ", 1);
    let _ = std::fs::write(path, text.replacen(line, &done, 1));
}

impl Kind for OllieDouble {
    const NAME: &'static str = "ollie-9p (FUSE double)";
    const T: Duration = Duration::from_secs(15);

    fn start(template: &str, tune: &dyn Fn(&mut Project)) -> Option<OllieDouble> {
        if let Some(why) = fuse_unavailable() {
            eprintln!("skipped: the ollie-9p double needs FUSE: {why}");
            return None;
        }
        let ollie = Ollie::with(Options {
            turn: Duration::from_millis(200),
            ..Options::default()
        });
        ollie.on_turn(|scope| {
            for t in Script::of(&scope.prompt).ticks {
                if let Some(title) = &t.title {
                    tick(&t.path, title);
                }
            }
        });
        let cwd = tempfile::tempdir().unwrap();
        ollie.create(AGENT, cwd.path());
        let mut project = Project::with_default_session(AGENT);
        let sessions = ollie.sessions_dir().display().to_string();
        project.set("sessions", "dir", &toml(&sessions));
        let poll = POLL.as_millis().to_string();
        project.set("sessions", "state_poll_ms", &poll);
        project.set("prompt", "template", &toml(template));
        tune(&mut project);
        let daemon = Daemon::start(&project);
        crate::conformance::wait_followed(&project, AGENT, Self::T);
        Some(OllieDouble {
            daemon,
            project,
            _cwd: cwd,
            ollie,
        })
    }

    fn project(&self) -> &Project {
        &self.project
    }

    fn daemon(&self) -> &Daemon {
        &self.daemon
    }

    fn session(&self) -> String {
        AGENT.into()
    }

    fn plan(&self, goal: &str, steps: &[Step], extra: &str) -> PathBuf {
        task_plan_with(&self.project.plan_dir, goal, steps, extra)
    }

    fn turns(&self, needle: &str) -> Vec<Seen> {
        let turns = self.ollie.all_turns();
        turns
            .into_iter()
            .filter(|t| t.prompt.contains(needle))
            .map(|t| Seen {
                started: unix_of(t.started),
                ended: t.ended.map(|(at, _)| unix_of(at)),
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

    /// Every turn from now on lasts three seconds (the double reads a
    /// turn's length when it begins; changing it back would race that).
    fn person_turn(&self, text: &str) -> Result<(), NotApplicable> {
        self.ollie.set_turn(Duration::from_secs(3));
        crate::util::realollie::put(&self.ollie.session_dir(AGENT).join("prompt"), text);
        wait_until("the person's turn to show busy", Self::T, || {
            (!self.ollie.idle(AGENT)).then_some(())
        });
        Ok(())
    }

    fn person_prompts(&self, texts: &[String]) -> Result<(), NotApplicable> {
        for text in texts {
            crate::util::realollie::put(&self.ollie.session_dir(AGENT).join("prompt"), text);
        }
        Ok(())
    }

    fn stop_program(&mut self) -> Result<(), NotApplicable> {
        Err(super::ollie::RESTART)
    }

    fn start_program(&mut self) {
        unreachable!("{}", super::ollie::RESTART)
    }

    /// ollie-core's pre-turn hooks (up to 60 s each upstream) take three
    /// seconds: the Submit is taken, the session shows idle meanwhile.
    fn slow_answers(&self) -> Result<Slow, NotApplicable> {
        self.ollie.set_pre_turn(Duration::from_secs(3));
        Ok(Slow::Turn)
    }

    fn fail_confirmation(&self) -> Result<(), NotApplicable> {
        self.ollie.fail_reads("prompt.prev", 1);
        Ok(())
    }

    fn absent(&self) -> String {
        "absent-agent".into()
    }
}
