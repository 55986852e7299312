//! The whole loop as the agents live it: the 9beads double and the ollie-9p
//! double, each on its own real FUSE mount, the real daemon between them.
//! A bead that becomes ready starts a turn of the idle default agent; a
//! claim starts a turn of the claimer's agent; a completion elsewhere is
//! told to the agent that had the task; a claimed task left open is
//! reminded of, and never again once it is completed. Every assertion is
//! about the turns the agents ran.

use std::time::Duration;

use crate::doubles::beads::{Beads, Served};
use crate::doubles::fuse::fuse_unavailable;
use crate::doubles::ollie::{Ollie, Options, Turn};
use crate::util::daemon::Daemon;
use crate::util::project::Project;
use crate::util::{try_wait_until, wait_until};

/// FUSE attributes are cached for a second (as 9pfuse's `attrtimeout`):
/// the daemon may see the events file grow that much late.
const HEAR: Duration = Duration::from_secs(10);

struct World {
    ollie: Ollie,
    beads: Served,
    /// The project's mount name on the 9beads double.
    mount: String,
    project: Project,
    _cwd: tempfile::TempDir,
}

/// Sessions `agent` (the default) and `worker` (tracker assignee
/// `agent-1`) on the ollie double; their working tree, the project's
/// `[project] dir`, mounted on the 9beads double.
fn world(configure: impl FnOnce(&mut Project)) -> Option<World> {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: these tests need the doubles over FUSE: {why}");
        return None;
    }
    let ollie = Ollie::with(Options::default());
    let cwd = tempfile::tempdir().unwrap();
    ollie.create("agent", cwd.path());
    ollie.create("worker", cwd.path());
    let beads = Beads::mount().expect("mount the 9beads double");
    // The agents' working tree, mounted as 9beads-mcp mounts an agent's
    // `$PWD`: under a random name; reveille is told only the directory.
    let mount = beads.mount_dir(cwd.path());
    let mut project = Project::with_default_session("agent");
    let sessions = ollie.sessions_dir().display().to_string();
    project.set("sessions", "dir", &format!("{sessions:?}"));
    project.set("sessions", "state_poll_ms", "50");
    let dir = cwd.path().display().to_string();
    project.set("project", "dir", &format!("{dir:?}"));
    beads.track(&mut project);
    project.set("events", "notify_completed", "true");
    project.set("events.assignees", "\"agent-1\"", "\"worker\"");
    configure(&mut project);
    Some(World {
        ollie,
        beads,
        mount,
        project,
        _cwd: cwd,
    })
}

/// Reminders after a second of idleness, three at most.
fn reminding(p: &mut Project) {
    p.set("sessions", "remind_after_ms", "1000");
    p.set("sessions", "remind_max", "3");
}

impl World {
    fn start(&self) -> Daemon {
        let d = Daemon::start(&self.project);
        d.wait_log("first start:", HEAR);
        d
    }

    /// `echo ARGS > <mount>/<endpoint>`.
    fn cmd(&self, endpoint: &str, args: &str) {
        self.beads.cmd(&self.mount, endpoint, args);
    }

    fn new_bead(&self, title: &str) -> String {
        self.beads.new_bead(&self.mount, title, "")
    }

    /// Wait until `session` has run a turn naming every one of `what`,
    /// and has gone idle again; returns that turn.
    fn turn_on(&self, session: &str, what: &[&str]) -> Turn {
        let turn = wait_until(
            &format!("{session} to run a turn on {what:?}"),
            HEAR,
            || {
                self.ollie
                    .turns(session)
                    .into_iter()
                    .find(|t| what.iter().all(|w| t.prompt.contains(w)))
            },
        );
        self.ollie.wait_idle(session, HEAR);
        // As it ended.
        let turns = self.ollie.turns(session);
        turns
            .into_iter()
            .find(|t| t.started == turn.started)
            .unwrap_or(turn)
    }

    /// The turns of `session` whose prompt names `needle`.
    fn runs(&self, session: &str, needle: &str) -> usize {
        let turns = self.ollie.turns(session);
        turns.iter().filter(|t| t.prompt.contains(needle)).count()
    }
}

#[test]
fn a_ready_bead_a_claim_and_a_completion_each_start_one_turn_of_the_right_agent() {
    let Some(w) = world(|_| {}) else { return };
    let _d = w.start();
    // Ready: the idle default agent starts working on it at once.
    let id = w.new_bead("Fix the build");
    let first = w.turn_on("agent", &[&id, "Fix the build"]);
    // Claimed by agent-1: its agent, idle, starts a turn on the assignment.
    w.cmd("claim", &format!("{id} assignee=agent-1"));
    let claimed = w.turn_on("worker", &[&id, "assigned to agent-1"]);
    assert!(claimed.started > first.started);
    // Completed elsewhere: the agent that had the task is told, in a turn.
    w.cmd("complete", &id);
    w.turn_on("worker", &[&id, "completed elsewhere"]);
    // A second bead after all that: each earlier wake-up ran exactly once.
    let next = w.new_bead("Write the changelog");
    w.turn_on("agent", &[&next]);
    assert_eq!(w.runs("agent", &id), 1, "{:?}", w.ollie.turns("agent"));
    assert_eq!(w.runs("worker", &id), 2, "{:?}", w.ollie.turns("worker"));
    assert!(w.ollie.queue("agent").is_empty() && w.ollie.queue("worker").is_empty());
}

#[test]
fn a_claimed_bead_left_open_is_reminded_of_until_it_is_completed() {
    let Some(w) = world(reminding) else { return };
    let _d = w.start();
    let id = w.new_bead("Port the parser");
    w.turn_on("agent", &[&id]);
    w.cmd("claim", &format!("{id} assignee=agent-1"));
    // The worker takes the claim and ends its turn without completing it.
    let claimed = w.turn_on("worker", &[&id, "assigned to agent-1"]);
    let reminded = w.turn_on("worker", &[&id, "Reminder 1 of 3"]);
    assert!(reminded.prompt.contains("Port the parser"), "{reminded:?}");
    // A full interval of idleness after the claim's own turn, though the
    // worker had been idle longer than that before the claim came.
    let ended = claimed.ended.expect("the claim's turn ended").0;
    assert!(
        reminded.started >= ended + Duration::from_millis(950),
        "reminded {:?} after the claim's turn ended: {:#?}",
        reminded.started - ended,
        w.ollie.turns("worker")
    );
    w.cmd("complete", &id);
    w.turn_on("worker", &[&id, "completed elsewhere"]);
    // Completed: no further reminder, though the worker idles on well past
    // the next interval (2 s after the first reminder).
    let runs = w.runs("worker", "Reminder");
    let more = try_wait_until(Duration::from_secs(3), || {
        (w.runs("worker", "Reminder") > runs).then_some(())
    });
    assert!(more.is_none(), "{:?}", w.ollie.turns("worker"));
}

#[test]
fn a_bead_unclaimed_in_silence_is_not_reminded_of_and_goes_back_to_the_default_agent() {
    let Some(w) = world(reminding) else { return };
    let _d = w.start();
    let id = w.new_bead("Port the lexer");
    w.turn_on("agent", &[&id]);
    w.cmd("claim", &format!("{id} assignee=agent-1"));
    w.turn_on("worker", &[&id, "assigned to agent-1"]);
    // The worker gives it up: 9beads writes no event for `unclaim`.
    w.cmd("unclaim", &id);
    // When the worker's reminder comes due the mount is read first: the
    // bead is nobody's again, so the default agent hears of it, and the
    // worker is not reminded of work that is no longer its own.
    wait_until("the default agent to hear of it again", HEAR, || {
        (w.runs("agent", &id) == 2).then_some(())
    });
    let reminded = try_wait_until(Duration::from_secs(3), || {
        (w.runs("worker", "Reminder") > 0).then_some(())
    });
    assert!(reminded.is_none(), "{:?}", w.ollie.turns("worker"));
}
