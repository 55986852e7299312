//! One Codex user's world: the fake model, the `codex` TUI started as a
//! person starts it (`util::agents::codex`), and the real `reveille run`
//! with `project.default_session = "codex:<the TUI's thread>"` and
//! `[codex] home` pointing at the isolated `CODEX_HOME` — plus a watch on
//! the plan directory, so a test knows when each step became ready.
//!
//! Dropped in field order: reveille first, then the watch, the TUI and its
//! daemon, the project's directory, the model.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::file_log::FileLog;
use crate::util::agents::codex::tap::WsTap;
use crate::util::agents::codex::{Codex, CodexHome};
use crate::util::daemon::Daemon;
use crate::util::fakemodel::responses::Responses;
use crate::util::fakemodel::{FakeModel, Logged};
use crate::util::plans::{task_plan, Step};
use crate::util::project::Project;
use crate::util::wait_until;

/// Generous: a turn of the real TUI on a loaded machine.
pub const TURN: Duration = Duration::from_secs(60);

/// How long a daemon may take to say `ready:` while the CLIs load the
/// machine.
const READY: Duration = Duration::from_secs(20);

pub struct Rig {
    daemon: Option<Daemon>,
    /// Between reveille and the TUI's daemon, when the test asked for it.
    pub tap: Option<WsTap>,
    pub files: FileLog,
    pub codex: Codex,
    pub project: Project,
    pub model: FakeModel,
    /// `codex:<thread id>`, the project's default session.
    pub session: String,
}

/// A TOML string.
pub fn toml(s: &str) -> String {
    format!("{s:?}")
}

impl Rig {
    /// Start it all, with `configure` adding to the project's settings;
    /// `None` after the `skipped:` line when Codex or tmux is missing.
    pub fn start(configure: impl FnOnce(&mut Project)) -> Option<Rig> {
        Rig::start_with(CodexHome::new, false, false, configure)
    }

    /// The same, reveille reaching the TUI's daemon through a [`WsTap`]
    /// (`codex.endpoint`), which can inject a fault on the wire.
    pub fn tapped(configure: impl FnOnce(&mut Project)) -> Option<Rig> {
        Rig::start_with(CodexHome::new, false, true, configure)
    }

    /// The same, with Codex asking the person before each `sed`, the fake
    /// model ticking steps with one `sed` each, and reveille reaching the
    /// TUI's daemon through a [`WsTap`] (`codex.endpoint`), so the test
    /// sees what reveille sent and was sent.
    pub fn asking_tapped(configure: impl FnOnce(&mut Project)) -> Option<Rig> {
        Rig::start_with(CodexHome::asking, true, true, configure)
    }

    /// The same tapped, with the agent asking the person a question in
    /// its default mode, and running commands without asking.
    pub fn questioning_tapped(configure: impl FnOnce(&mut Project)) -> Option<Rig> {
        Rig::start_with(CodexHome::questioning, false, true, configure)
    }

    fn start_with(
        home: fn(&FakeModel) -> Result<CodexHome, String>,
        sed: bool,
        tapped: bool,
        configure: impl FnOnce(&mut Project),
    ) -> Option<Rig> {
        let model = FakeModel::start(vec![Box::new(Responses)], Duration::from_millis(20));
        if sed {
            model.tick_with_sed();
        }
        let home = match home(&model) {
            Ok(home) => home,
            Err(why) => {
                eprintln!("skipped: {why}");
                return None;
            }
        };
        let codex = Codex::start(home);
        let session = format!("codex:{}", codex.thread);
        let mut project = Project::with_default_session(&session);
        project.set(
            "codex",
            "home",
            &toml(&codex.home.home.display().to_string()),
        );
        project.set("sessions", "session_plans", "false");
        let tap = tapped.then(|| {
            let tap = WsTap::start(&codex.cwd.with_file_name("tap.sock"), &codex.home.socket());
            let endpoint = format!("unix://{}", tap.path.display());
            project.set("codex", "endpoint", &toml(&endpoint));
            tap
        });
        configure(&mut project);
        let files = FileLog::watch(&project.plan_dir);
        let mut rig = Rig {
            daemon: None,
            tap,
            files,
            codex,
            project,
            model,
            session,
        };
        rig.start_daemon();
        Some(rig)
    }

    /// The running reveille.
    pub fn daemon(&self) -> &Daemon {
        self.daemon.as_ref().expect("reveille runs")
    }

    /// Start reveille (again) and wait for its `ready:` line.
    pub fn start_daemon(&mut self) -> &Daemon {
        assert!(self.daemon.is_none(), "reveille already runs");
        let d = Daemon::spawn(&self.project);
        d.wait_log("ready:", READY);
        self.daemon.insert(d)
    }

    /// SIGKILL reveille.
    pub fn kill9(&mut self) {
        self.daemon.take().expect("reveille runs").kill9();
    }

    /// Write a plan into the plan directory as the planning tool does.
    pub fn plan(&self, goal: &str, steps: &[Step]) -> PathBuf {
        task_plan(&self.project.plan_dir, goal, steps)
    }

    /// When the plan file was first closed holding `- [x] <title>`.
    pub fn ticked_at(&self, plan: &Path, title: &str) -> Option<Instant> {
        let line = format!("- [x] {title}");
        self.files
            .first(plan, |t| t.lines().any(|l| l.trim() == line))
    }

    /// Wait until the plan file holds `- [x] <title>`.
    pub fn wait_ticked(&self, plan: &Path, title: &str) -> Instant {
        wait_until(&format!("{title:?} ticked"), TURN, || {
            self.ticked_at(plan, title)
        })
    }

    /// The model requests that begin a turn on a prompt containing
    /// `needle`: how often the agent was asked it.
    pub fn turns(&self, needle: &str) -> Vec<Logged> {
        self.model.turns_on(needle)
    }

    /// The first request of the turn on `needle`, once fully answered.
    pub fn wait_turn(&self, needle: &str) -> Logged {
        wait_until(&format!("the model's answer to {needle:?}"), TURN, || {
            self.turns(needle)
                .into_iter()
                .next()
                .filter(|r| r.done.is_some())
        })
    }

    /// The model request that followed the tool's result in the turn on
    /// `needle` (the agent's answer after it ticked), once answered.
    pub fn wait_after_tool(&self, needle: &str) -> Logged {
        wait_until(
            &format!("the answer after the tool in {needle:?}"),
            TURN,
            || {
                self.model
                    .requests()
                    .into_iter()
                    .find(|r| r.after_tool && r.last_user.contains(needle) && r.done.is_some())
            },
        )
    }

    /// This session as `reveille status --json` shows it.
    pub fn status_of(&self, session: &str) -> Value {
        let status = self.project.status_json();
        status["sessions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["id"] == session)
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Wait until `status --json` shows the session as `want` accepts.
    pub fn wait_status(&self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        wait_until(what, TURN, || {
            let s = self.status_of(&self.session);
            want(&s).then_some(s)
        })
    }

    /// Wait until reveille's log holds `needle`; the line.
    pub fn wait_log(&self, needle: &str) -> String {
        self.daemon().wait_log(needle, TURN)
    }

    /// The moment reveille's log holds any of `needles` (looked at every
    /// millisecond: a kill must land between two steps of reveille).
    pub fn at_log(&self, needles: &[&str]) {
        at_once(&format!("{needles:?} in reveille's log"), || {
            let log = self.daemon().log();
            needles.iter().any(|n| log.contains(n)).then_some(())
        });
    }

    /// The moment the model was asked for a turn on `needle`.
    pub fn at_turn(&self, needle: &str) {
        at_once(&format!("a turn on {needle:?}"), || {
            self.turns(needle).into_iter().next()
        });
    }

    /// The moment the plan file was closed holding `- [x] <title>`.
    pub fn at_ticked(&self, plan: &Path, title: &str) {
        at_once(&format!("{title:?} ticked"), || self.ticked_at(plan, title));
    }
}

/// Wait for `probe` looking every millisecond (not with the harness's
/// backoff, which may look 200 ms late), at most `TURN`.
fn at_once<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TURN;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The line of the default prompt that names a step: what a model request
/// carrying that step's prompt contains (and a reminder does not).
pub fn step_line(id: &str, goal: &str, title: &str) -> String {
    format!("Step {id} of \"{goal}\" is ready: {title}")
}

/// p50 and max.
pub fn p50_max(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() - 1])
}

/// Milliseconds, for printing.
pub fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}
