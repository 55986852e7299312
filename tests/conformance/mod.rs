//! The conformance suite: the same scenarios for every kind of session
//! reveille wakes — ollie-9p (the real server, and its FUSE double where a
//! fault must be injected), a named pipe, Codex, Claude Code and opencode
//! (the real programs, offline against the fake model).
//!
//! A kind is a [`Kind`] (its driver in `kinds/`: how its agent is started,
//! how a person's long turn is made, how a fault is injected — or why it
//! cannot be); a scenario is a function generic over it (`scenarios/`);
//! `cells` holds one `#[test]` per (scenario, kind), named after both. A
//! driver that cannot run a scenario says why (`Err(reason)`), and
//! doc/TESTING.md's matrix says the same; `matrix_is_documented` holds the
//! two together.
//!
//! Every scenario asserts what the agent experienced: how many times a
//! step's prompt began a turn (model requests, or lines read from the
//! pipe), that it came at all, that reminders came, and what `status` and
//! `why` said.

mod cells;
mod kinds;
mod matrix;
mod scenarios;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::util::daemon::Daemon;
use crate::util::plans::Step;
use crate::util::project::Project;
use crate::util::wait_until;

/// Why a scenario does not apply to a kind, in words.
pub type NotApplicable = &'static str;

/// A step prompt the agent acts on: the fake model ticks the step in the
/// plan file with its shell tool (`TICK <path> :: <title>`).
pub const TICKING: &str = "[reveille] {id} {title}\nTICK {path} :: {title}\n";

/// A step prompt the agent reads and does nothing about: its step stays
/// open.
pub const LEFT_OPEN: &str = "[reveille] {id} {title}\nPlan file: {path}\n";

/// A reminder, told apart from the step's own prompt by its first words.
pub const REMINDER: &str = "[reveille] Reminder {n} of {max}: {id} {title}\n";

/// What every prompt of step `id` titled `title` begins with (and a
/// reminder does not): counting turns on it counts deliveries.
pub fn step_needle(id: &str, title: &str) -> String {
    format!("[reveille] {id} {title}")
}

/// A turn an agent began: when (unix seconds), and when it ended (the last
/// byte of the turn's answer) if it has.
#[derive(Clone, Debug)]
pub struct Seen {
    pub started: f64,
    pub ended: Option<f64>,
    /// The text the turn began on (the model's last user message, the
    /// Submit, the line read): a prompt folded into another shows here.
    pub prompt: String,
}

/// How a kind's program is made slow (`Kind::slow_answers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slow {
    /// It takes the prompt at once, and starts its turn seconds later.
    Turn,
    /// Its answer to the delivery comes seconds late (the turn runs).
    Answer,
}

/// One kind of session, as the scenarios drive it.
pub trait Kind: Sized {
    /// The kind's name in the matrix and in test names.
    const NAME: &'static str;
    /// How long one thing its agent does may take on two loaded cores.
    const T: Duration;

    /// Start the agent's program (idle, ready for prompts) and reveille on
    /// a project whose default session it is, with `prompt.template` set to
    /// `template` and `tune` applied before reveille starts; `None` (after
    /// a `skipped:` line) where the program cannot run here.
    fn start(template: &str, tune: &dyn Fn(&mut Project)) -> Option<Self>;
    fn project(&self) -> &Project;
    fn daemon(&self) -> &Daemon;
    /// reveille's name of the session (`codex:<thread>`, `agent`, …).
    fn session(&self) -> String;
    /// Write a plan of `steps` (after the goal, the lines `extra`) where
    /// reveille reads plans and the agent may edit them.
    fn plan(&self, goal: &str, steps: &[Step], extra: &str) -> PathBuf;
    /// The turns the agent began on a prompt containing `needle`, in order.
    fn turns(&self, needle: &str) -> Vec<Seen>;
    /// Wait until step `title` of `plan` is ticked: by the agent on its
    /// prompt, or — where nothing acts on the prompt (a pipe's reader is
    /// the test) — by the test on the agent's behalf once it came.
    fn closed(&self, plan: &Path, title: &str);
    /// How often reveille observes the session's state: its poll, or the
    /// bound this suite holds an event stream to. `Err` where it has none.
    fn interval(&self) -> Result<Duration, NotApplicable>;
    /// A person starts a turn of about three seconds (`delay=3`) with
    /// `text`; returns when the agent is seen busy on it.
    fn person_turn(&self, text: &str) -> Result<(), NotApplicable>;
    /// A person sends each of `texts` at once, one after the other, each a
    /// short turn (the state flaps busy, idle, busy); returns without
    /// waiting for them.
    fn person_prompts(&self, texts: &[String]) -> Result<(), NotApplicable>;
    /// Stop the agent's program as a crash would (its sessions survive
    /// where the program keeps them).
    fn stop_program(&mut self) -> Result<(), NotApplicable>;
    /// Start it again on the same session, and wait until it serves.
    fn start_program(&mut self);
    /// From now on the program answers a delivery slowly: its turn starts
    /// seconds after the prompt was taken, or its answer to the delivery
    /// comes seconds late (which).
    fn slow_answers(&self) -> Result<Slow, NotApplicable>;
    /// With a late answer: how many deliveries reveille made while an
    /// earlier one's answer had not come (none, if it waits for each).
    fn overlapped(&self) -> usize {
        0
    }
    /// The next read that would confirm a delivery fails, as the real
    /// program's can (never kinder than the program).
    fn fail_confirmation(&self) -> Result<(), NotApplicable>;
    /// A session of this kind that reveille cannot reach or that does not
    /// exist (created as far as it needs to be: a pipe nobody reads).
    fn absent(&self) -> String;
    /// Each write of a prompt containing `needle` that crossed the wire to
    /// the agent's program: when it went (unix seconds), and when its
    /// answer came back — where the suite sees the wire (a proxy), else
    /// `None`.
    fn writes(&self, _needle: &str) -> Option<Vec<(f64, Option<f64>)>> {
        None
    }
}

/// The session's entry in `reveille status --json`, or `Null`.
pub fn status_of(project: &Project, session: &str) -> serde_json::Value {
    let status = project.status_json();
    status["sessions"]
        .as_array()
        .and_then(|l| l.iter().find(|s| s["id"] == session).cloned())
        .unwrap_or_default()
}

/// The state `status` shows for the session, if any.
pub fn state_of(project: &Project, session: &str) -> Option<String> {
    status_of(project, session)["state"]
        .as_str()
        .map(str::to_string)
}

/// Wait until `status` shows the session in some state (reveille follows
/// it).
pub fn wait_followed(project: &Project, session: &str, t: Duration) {
    wait_until(&format!("status to show {session}'s state"), t, || {
        state_of(project, session)
    });
}

/// Unix seconds now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// `at` in unix seconds.
pub fn unix_of(at: Instant) -> f64 {
    let now = Instant::now();
    match now.checked_duration_since(at) {
        Some(ago) => unix_now() - ago.as_secs_f64(),
        None => unix_now() + (at - now).as_secs_f64(),
    }
}

/// A TOML string.
pub fn toml(s: &str) -> String {
    format!("{s:?}")
}
