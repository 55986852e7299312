//! A named pipe: reveille writes each prompt as a line (in the default
//! framing) to `fifo.in` in the session's directory, and the reader is
//! the test. A pipe has no state, no turns and no read after a write.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::conformance::{toml, unix_of, Kind, NotApplicable, Seen, Slow};
use crate::util::daemon::Daemon;
use crate::util::fifo::{Reader, Receipt};
use crate::util::plans::{task_complete, task_plan_with, Step};
use crate::util::project::Project;
use crate::util::wait_until;

const AGENT: &str = "agent";

pub struct Pipe {
    daemon: Daemon,
    /// `None` while the reader is stopped.
    reader: Option<Reader>,
    /// What earlier readers read.
    past: Vec<Receipt>,
    project: Project,
}

impl Pipe {
    fn received(&self) -> Vec<Receipt> {
        let mut all = self.past.clone();
        all.extend(self.reader.iter().flat_map(Reader::received));
        all
    }
}

impl Kind for Pipe {
    const NAME: &'static str = "named pipe";
    const T: Duration = Duration::from_secs(10);

    fn start(template: &str, tune: &dyn Fn(&mut Project)) -> Option<Pipe> {
        let mut project = Project::with_default_session(AGENT);
        project.set("prompt", "template", &toml(template));
        tune(&mut project);
        let reader = project.reader(AGENT);
        let daemon = Daemon::start(&project);
        Some(Pipe {
            daemon,
            reader: Some(reader),
            past: Vec::new(),
            project,
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

    /// Each prompt read is a "turn" that ends as it is read.
    fn turns(&self, needle: &str) -> Vec<Seen> {
        let read = self.received();
        read.into_iter()
            .filter(|r| r.text.contains(needle))
            .map(|r| Seen {
                started: unix_of(r.at),
                ended: Some(unix_of(r.at)),
                prompt: r.text,
            })
            .collect()
    }

    /// The reader is the agent: once the step's prompt is read, the test
    /// ticks it.
    fn closed(&self, plan: &Path, title: &str) {
        let line = format!(" {title}");
        wait_until(
            &format!("the prompt of {title:?} in the pipe"),
            Self::T,
            || {
                let read = self.received();
                read.iter()
                    .any(|r| r.text.starts_with("[reveille] s") && r.text.contains(&line))
                    .then_some(())
            },
        );
        task_complete(plan, title);
    }

    fn interval(&self) -> Result<Duration, NotApplicable> {
        Err("a named pipe has no state to observe: reveille writes a prompt and is done")
    }

    fn person_turn(&self, _text: &str) -> Result<(), NotApplicable> {
        Err("a named pipe has no turns: nothing runs that a step could wait behind")
    }

    fn person_prompts(&self, _texts: &[String]) -> Result<(), NotApplicable> {
        Err("a named pipe has no state to flap")
    }

    /// The reader closes the pipe (a write then fails with ENXIO).
    fn stop_program(&mut self) -> Result<(), NotApplicable> {
        if let Some(reader) = self.reader.take() {
            self.past.extend(reader.close());
        }
        Ok(())
    }

    fn start_program(&mut self) {
        self.reader = Some(self.project.reader(AGENT));
    }

    fn slow_answers(&self) -> Result<Slow, NotApplicable> {
        Err("the kernel answers a write to a pipe at once, or refuses it")
    }

    fn fail_confirmation(&self) -> Result<(), NotApplicable> {
        Err("a write to a pipe is its own confirmation: no read follows it that could fail")
    }

    /// A pipe nobody reads: a write to it fails (ENXIO).
    fn absent(&self) -> String {
        self.project.session("absent-agent");
        "absent-agent".into()
    }
}
