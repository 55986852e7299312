//! Reminders end to end: the real daemon against the ollie-9p FUSE double,
//! whose agents end their turns with or without ticking their step.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::doubles::fuse::fuse_unavailable;
use crate::doubles::ollie::{task_complete, Ollie, Turn};
use crate::util::daemon::Daemon;
use crate::util::plans::{task_plan, Step};
use crate::util::project::Project;
use crate::util::{try_wait_until, wait_until};

const T: Duration = Duration::from_secs(15);
const AFTER: Duration = Duration::from_millis(1000);
/// How late a reminder may be on a loaded machine (two cores shared by
/// several builds): the idle state is seen within one 50 ms poll.
const SLACK: Duration = Duration::from_millis(2000);

/// A double with session `agent`, and a project whose daemon follows its
/// states every 50 ms and reminds after `AFTER`, at most `max` times.
fn setup(max: u32) -> Option<(Ollie, tempfile::TempDir, Project)> {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: the ollie-9p double needs FUSE: {why}");
        return None;
    }
    let ollie = Ollie::start();
    let cwd = tempfile::tempdir().unwrap();
    ollie.create("agent", cwd.path());
    let mut project = Project::with_default_session("agent");
    let sessions = format!("{:?}", ollie.sessions_dir().display().to_string());
    project.set("sessions", "dir", &sessions);
    project.set("sessions", "state_poll_ms", "50");
    project.set(
        "sessions",
        "remind_after_ms",
        &AFTER.as_millis().to_string(),
    );
    project.set("sessions", "remind_max", &max.to_string());
    Some((ollie, cwd, project))
}

fn reminders(turns: &[Turn]) -> Vec<&Turn> {
    turns
        .iter()
        .filter(|t| t.prompt.contains("[reveille] Reminder"))
        .collect()
}

fn ended(turn: &Turn) -> Instant {
    turn.ended.expect("the turn ended").0
}

/// Waits until `n` turns of `agent` have ended.
fn ended_turns(ollie: &Ollie, n: usize) -> Vec<Turn> {
    ollie.wait_ended("agent", n, T)
}

/// No further turn of `agent` starts within `window` (a reminder would).
fn no_turn_beyond(ollie: &Ollie, n: usize, window: Duration) {
    let more = try_wait_until(window, || (ollie.turns("agent").len() > n).then_some(()));
    assert!(more.is_none(), "{:#?}", ollie.turns("agent"));
}

fn plan(project: &Project) -> PathBuf {
    task_plan(
        &project.plan_dir,
        "remind me",
        &[Step::new("first step"), Step::new("second step")],
    )
}

#[test]
fn an_agent_that_leaves_its_step_open_is_reminded_after_doubling_intervals_up_to_the_cap() {
    let Some((ollie, _cwd, project)) = setup(2) else {
        return;
    };
    let daemon = Daemon::start(&project);
    let path = plan(&project);
    let turns = ended_turns(&ollie, 3);
    let (wake, first, second) = (&turns[0], &turns[1], &turns[2]);
    assert!(wake.prompt.contains("first step"), "{turns:#?}");
    for (n, turn) in [(1, first), (2, second)] {
        assert!(
            turn.prompt
                .contains(&format!("Reminder {n} of 2: s1 is still open: first step")),
            "{turns:#?}"
        );
        // How to close it, with the tools the agent has.
        let close = format!(
            "If it is finished, change `- [ ] first step` to `- [x] first step` in {}",
            path.display()
        );
        assert!(turn.prompt.contains(&close), "{}", turn.prompt);
    }
    // After AFTER idle, then after 2×AFTER idle (the idle state is seen
    // within one 50 ms poll; the slack covers a loaded machine).
    let gap1 = first.started - ended(wake);
    let gap2 = second.started - ended(first);
    assert!(gap1 >= AFTER && gap1 < AFTER + SLACK, "{gap1:?}");
    assert!(gap2 >= 2 * AFTER && gap2 < 2 * AFTER + SLACK, "{gap2:?}");
    // The journal says which reminder each was.
    daemon.wait_log("(reminder 2 of 2)", T);
    let line = daemon.wait_log("(reminder 1 of 2)", T);
    assert!(line.contains("reminder=1"), "{line}");
    // Never beyond the cap: a third would come 4×AFTER after the last.
    no_turn_beyond(&ollie, 3, 4 * AFTER + Duration::from_millis(500));
    // status: the open step, its session idle, both reminders, none due.
    let open = wait_until("status to show both reminders", T, || {
        let status = project.status_json();
        let open = status["reminders"].as_array()?.first()?.clone();
        (open["reminders_sent"] == 2).then_some(open)
    });
    assert_eq!(open["id"], "s1", "{open}");
    assert_eq!(open["state"], "idle", "{open}");
    assert!(open["next_due_ms"].is_null(), "{open}");
    assert!(open["announced_ms"].is_u64(), "{open}");
    let text = String::from_utf8_lossy(&project.run(&["status"]).stdout).into_owned();
    assert!(text.contains("reminders 2/2, no reminder due"), "{text}");
    assert!(text.contains("idle for"), "{text}");
}

#[test]
fn an_agent_that_ticks_in_time_gets_no_reminder() {
    let Some((ollie, _cwd, project)) = setup(3) else {
        return;
    };
    let _daemon = Daemon::start(&project);
    let path = plan(&project);
    let tick = path.clone();
    ollie.on_turn(move |scope| {
        for step in ["first step", "second step"] {
            if scope.prompt.contains(&format!("is ready: {step}")) {
                task_complete(&tick, step).unwrap();
            }
        }
    });
    // One turn per step, each ticking its step before it ends.
    let turns = ended_turns(&ollie, 2);
    assert!(turns[1].prompt.contains("second step"), "{turns:#?}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("- [ ]"), "{text}");
    no_turn_beyond(&ollie, 2, 2 * AFTER + Duration::from_millis(500));
    assert!(reminders(&ollie.turns("agent")).is_empty());
}

#[test]
fn a_busy_agent_gets_no_reminder() {
    let Some((ollie, _cwd, project)) = setup(3) else {
        return;
    };
    ollie.set_turn(Duration::from_secs(5));
    let _daemon = Daemon::start(&project);
    plan(&project);
    let turns = ollie.wait_turns("agent", 1, T);
    let busy_until = turns[0].started + Duration::from_secs(5);
    // While the turn runs, nothing reaches the agent (a Submit on a busy
    // agent would be queued, and received).
    let early = try_wait_until(busy_until - Instant::now(), || {
        (ollie.received("agent").len() > 1).then_some(())
    });
    assert!(early.is_none(), "{:#?}", ollie.received("agent"));
    // Once idle, the clock starts: the first reminder comes AFTER later.
    let turns = ended_turns(&ollie, 2);
    assert!(turns[1].started - ended(&turns[0]) >= AFTER, "{turns:#?}");
    assert_eq!(reminders(&turns).len(), 1);
}

/// Every text the agent received that is reminder `n`.
fn received_reminder(ollie: &Ollie, n: u32) -> usize {
    let needle = format!("Reminder {n} of 2");
    ollie
        .received("agent")
        .iter()
        .filter(|r| r.text.contains(&needle))
        .count()
}

#[test]
fn a_kill_9_mid_way_keeps_the_schedule() {
    let Some((ollie, _cwd, project)) = setup(2) else {
        return;
    };
    let daemon = Daemon::start(&project);
    plan(&project);
    let turns = ended_turns(&ollie, 2);
    assert_eq!(reminders(&turns).len(), 1, "{turns:#?}");
    daemon.kill9();
    let restarted = Instant::now();
    let daemon = Daemon::start(&project);
    // The count survived: the next is reminder 2, after 2×AFTER idle
    // counted from the state seen after the restart; reminder 1 is not
    // sent again and the first prompt is not repeated.
    let turns = ended_turns(&ollie, 3);
    assert!(turns[2].prompt.contains("Reminder 2 of 2"), "{turns:#?}");
    assert!(turns[2].started - restarted >= 2 * AFTER, "{turns:#?}");
    no_turn_beyond(&ollie, 3, 4 * AFTER + Duration::from_millis(500));
    assert_eq!(received_reminder(&ollie, 1), 1);
    assert_eq!(received_reminder(&ollie, 2), 1);
    let wakes = ollie.received("agent");
    let firsts = wakes.iter().filter(|r| r.text.contains("is ready")).count();
    assert_eq!(firsts, 1, "{wakes:#?}\n{}", daemon.log());
}
