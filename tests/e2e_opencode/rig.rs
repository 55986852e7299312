//! One opencode user's world: the fake model, the real opencode started
//! the way a person starts it (a `--port` TUI with a session the person
//! made by typing, or `opencode serve` with a session made over HTTP), and
//! a reveille project whose default session is that one, whose plan
//! directory is inside the agent's working directory (the agent edits its
//! plans there with its own shell tool), and whose `[opencode] url` is the
//! isolated instance's. The real `reveille run` is started on it by
//! [`Rig::daemon`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use crate::util::agents::opencode::Said;
use crate::util::agents::opencode::{Home, Mode, Opencode};
use crate::util::daemon::Daemon;
use crate::util::fakemodel::{chat::Chat, FakeModel, Logged};
use crate::util::plans::{plan_text, write_in_place, Step};
use crate::util::project::Project;
use crate::util::{try_wait_until, wait_until};

/// A turn of the fake model with opencode's own overhead, on a loaded
/// machine; also how long opencode may take to come back.
pub const T: Duration = Duration::from_secs(40);

/// The world of one test.
pub struct Rig {
    pub model: FakeModel,
    pub oc: Opencode,
    /// opencode's id of the session (bare).
    pub session: String,
    pub project: Project,
}

impl Rig {
    /// `None`, with one `skipped:` line, where opencode cannot run.
    pub fn new(mode: Mode) -> Option<Rig> {
        Rig::with(mode, Home::new)
    }

    /// The same, with every shell command asking the person first.
    pub fn asking(mode: Mode) -> Option<Rig> {
        Rig::with(mode, Home::asking)
    }

    fn with(mode: Mode, home: fn(&str) -> Home) -> Option<Rig> {
        if let Some(why) = Opencode::unavailable(mode) {
            eprintln!("skipped: {why}");
            return None;
        }
        // A quick model: what is measured is the way to it.
        let model = FakeModel::start(vec![Box::new(Chat)], Duration::from_millis(50));
        let oc = Opencode::start(home(&model.url()), mode);
        let session = match mode {
            Mode::Tui => oc.first_prompt("hello, I am the person at this terminal"),
            Mode::Serve => oc.create_session(),
        };
        if mode == Mode::Tui {
            oc.wait_idle(&session, T);
        }
        let mut project = Project::with_default_session(&format!("opencode:{session}"));
        project.set("opencode", "url", &format!("{:?}", oc.url()));
        let plans = oc.home.work().join("pl");
        std::fs::create_dir_all(&plans).unwrap();
        project.set(
            "project",
            "plan_dir",
            &format!("{:?}", plans.display().to_string()),
        );
        project.plan_dir = plans;
        Some(Rig {
            model,
            oc,
            session,
            project,
        })
    }

    /// The session as reveille names it.
    pub fn q(&self) -> String {
        format!("opencode:{}", self.session)
    }

    /// `reveille run` on the project, ready, and following the session.
    pub fn daemon(&self) -> Daemon {
        let d = Daemon::start(&self.project);
        self.wait_state("idle");
        d
    }

    /// Wait until the journal says a turn started on `step` in the
    /// session: "woke idle session …" (within the 2 s the engine waits
    /// for it), or "turn started on …" (later: a cold opencode).
    pub fn wait_woken(&self, d: &Daemon, step: &str) {
        let q = self.q();
        let woke = format!("woke idle session {q} for {step}");
        let started = format!("turn started on {step} in session {q}");
        wait_until(&format!("the journal to say {step} woke {q}"), T, || {
            (d.log_count(&woke) + d.log_count(&started) > 0).then_some(())
        });
    }

    /// Wait until `status --json` shows the session in `state`.
    pub fn wait_state(&self, state: &str) {
        wait_until(&format!("status to show {} {state}", self.q()), T, || {
            (self.session_status()["state"] == state).then_some(())
        });
    }

    /// The session's entry in `reveille status --json`.
    pub fn session_status(&self) -> serde_json::Value {
        let status = self.project.status_json();
        status["sessions"]
            .as_array()
            .and_then(|l| l.iter().find(|s| s["id"] == self.q().as_str()).cloned())
            .unwrap_or_default()
    }

    /// Write a plan of `steps` into the plan directory, as the planning
    /// tool does; its path and the instant just before its `close(2)`.
    pub fn plan(&self, uid: &str, goal: &str, steps: &[Step]) -> (PathBuf, Instant) {
        let path = self
            .project
            .plan_dir
            .join(format!("20260101T000000_{uid}--plan__todo.md"));
        let at = write_in_place(&path, plan_text(goal, steps, "").as_bytes());
        (path, at)
    }

    /// The first model request of every turn on the step titled `title`
    /// (the default prompt's words), in order.
    pub fn turns_on_step(&self, title: &str) -> Vec<Logged> {
        self.model.turns_on(&ready_line(title))
    }

    /// When the agent's turn on the step titled `title` ended: the last
    /// byte of the model's last answer in it.
    pub fn turn_end(&self, title: &str) -> Instant {
        self.model
            .requests()
            .iter()
            .filter(|r| !r.auxiliary && r.last_user.contains(&ready_line(title)))
            .filter_map(|r| r.done)
            .max()
            .expect("the turn answered")
    }

    /// Each of `titles` reached the model exactly once.
    pub fn each_once(&self, titles: &[&str]) {
        for title in titles {
            let n = self.turns_on_step(title).len();
            assert_eq!(
                n,
                1,
                "{title:?} reached the model {n} times: {:#?}",
                self.model.requests()
            );
        }
    }

    /// Wait until every one of `titles` is ticked in `plan` and the agent
    /// is idle again.
    pub fn wait_ticked(&self, plan: &Path, titles: &[&str]) {
        let ticked = try_wait_until(T, || {
            let text = std::fs::read_to_string(plan).ok()?;
            titles
                .iter()
                .all(|t| super::plan_watch::ticked(&text, t))
                .then_some(())
        });
        if ticked.is_none() {
            panic!(
                "timed out after {T:?} waiting for the agent to tick {titles:?}; the plan:\n{}\n{}",
                std::fs::read_to_string(plan).unwrap_or_default(),
                self.explain()
            );
        }
        self.oc.wait_idle(&self.session, T);
    }

    /// What the model was asked and what the server says of the session:
    /// the words of a failure.
    pub fn explain(&self) -> String {
        let requests: Vec<String> = self
            .model
            .requests()
            .iter()
            .map(|r| {
                format!(
                    "{} tool={} aux={} {:?}",
                    r.n, r.after_tool, r.auxiliary, r.last_user
                )
            })
            .collect();
        let last: Vec<_> = self
            .oc
            .transcript(&self.session)
            .into_iter()
            .rev()
            .take(2)
            .collect();
        format!(
            "the model was asked:\n{}\nopencode says the session is {}; its last messages: {last:?}",
            requests.join("\n"),
            self.oc.status(&self.session),
        )
    }
}

/// What the default step prompt says of the step titled `title`.
pub fn ready_line(title: &str) -> String {
    format!("is ready: {title}\n")
}

/// p50 (the lower median) and max of some durations, in ms.
pub fn spread(d: &[Duration]) -> String {
    let mut d = d.to_vec();
    d.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "p50 {:.0} ms, max {:.0} ms (n={})",
        ms(d[(d.len() - 1) / 2]),
        ms(*d.last().unwrap()),
        d.len()
    )
}
