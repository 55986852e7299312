//! Wake means wake, judged by what the agent experiences: the real daemon
//! against the ollie-9p double served over a real FUSE mount, with the
//! default `[sessions]` delivery. Every assertion is about the turns the
//! agent ran (did an idle agent start working, did a busy one get it after
//! its turn, did anyone get it twice) — not about what reveille wrote.

use std::time::Duration;

use crate::doubles::fuse::fuse_unavailable;
use crate::doubles::ollie::{Ollie, Options, Outcome, Turn};
use crate::util::daemon::Daemon;
use crate::util::plans::{task_complete, task_plan, Step};
use crate::util::project::Project;
use crate::util::{try_wait_until, wait_until};

const T: Duration = Duration::from_secs(10);

/// The double, a working directory for its sessions, and a project whose
/// sessions live on the double's mount (default session `agent`, which is
/// created). `None`, with the reason printed, where FUSE cannot run.
fn world(options: Options) -> Option<(Ollie, tempfile::TempDir, Project)> {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: these tests need the ollie-9p double over FUSE: {why}");
        return None;
    }
    let ollie = Ollie::with(options);
    let cwd = tempfile::tempdir().unwrap();
    ollie.create("agent", cwd.path());
    let mut project = Project::with_default_session("agent");
    let dir = ollie.sessions_dir().display().to_string();
    project.set("sessions", "dir", &format!("{dir:?}"));
    project.set("sessions", "state_poll_ms", "50");
    Some((ollie, cwd, project))
}

/// Wait until the daemon has seen session `id` in the tree's `idx` (its
/// state is in `status`). "following … session states" is said before the
/// first read of `idx`: a session killed right after it was never seen.
fn wait_seen(project: &Project, id: &str) {
    wait_until(&format!("the daemon to see session {id}"), T, || {
        let status = project.status_json();
        let sessions = status["sessions"].as_array()?.clone();
        sessions
            .iter()
            .any(|s| s["id"] == id && s["state"].is_string())
            .then_some(())
    });
}

/// Submit a person's prompt straight to `prompt`, as a shell would.
fn submit(ollie: &Ollie, session: &str, text: &str) {
    std::fs::write(ollie.session_dir(session).join("prompt"), text).unwrap();
}

/// The turns whose prompt names `needle`.
fn runs_of<'a>(turns: &'a [Turn], needle: &str) -> Vec<&'a Turn> {
    turns.iter().filter(|t| t.prompt.contains(needle)).collect()
}

fn ended(turn: &Turn) -> std::time::Instant {
    turn.ended.expect("the turn ended").0
}

/// Write a second plan whose only step is `barrier`, and wait for the
/// agent to run it: everything reveille had for the agent before is in by
/// then (one lane per session, in order).
fn barrier(project: &Project, ollie: &Ollie, barrier: &str) -> Vec<Turn> {
    task_plan(&project.plan_dir, barrier, &[Step::new(barrier)]);
    wait_until(&format!("the agent to run {barrier}"), T, || {
        let turns = ollie.turns("agent");
        (!runs_of(&turns, barrier).is_empty()).then_some(())
    });
    ollie.wait_idle("agent", T);
    ollie.turns("agent")
}

#[test]
fn an_idle_agent_starts_a_turn_on_the_step_at_once() {
    let Some((ollie, _cwd, project)) = world(Options::default()) else {
        return;
    };
    let daemon = Daemon::start(&project);
    task_plan(
        &project.plan_dir,
        "wake me",
        &[Step::new("Write the lexer")],
    );
    let turns = ollie.wait_turns("agent", 1, T);
    assert!(turns[0].prompt.contains("Write the lexer"), "{turns:?}");
    daemon.wait_log("woke idle session agent for s1", T);
    assert!(
        ollie.queue("agent").is_empty(),
        "nothing may be left queued on an idle agent"
    );
}

#[test]
fn a_busy_agent_runs_the_step_after_its_current_turn() {
    let Some((ollie, _cwd, project)) = world(Options::default()) else {
        return;
    };
    ollie.set_turn(Duration::from_millis(1500));
    let daemon = Daemon::start(&project);
    submit(&ollie, "agent", "a person's question");
    wait_until("the agent to be busy", T, || {
        (!ollie.idle("agent")).then_some(())
    });
    task_plan(&project.plan_dir, "later", &[Step::new("Package it")]);
    daemon.wait_log("queued s1 behind the running turn of agent", T);
    let turns = ollie.wait_turns("agent", 2, T);
    assert!(turns[0].prompt.contains("a person's question"), "{turns:?}");
    assert!(turns[1].prompt.contains("Package it"), "{turns:?}");
    assert!(
        turns[1].started >= ended(&turns[0]),
        "the step ran during the person's turn: {turns:?}"
    );
}

/// Independent steps ready at once are written one after another, each
/// once the agent took the one before; the agent runs each as a turn of
/// its own, exactly once — in the order ollie-core's chains allow (a
/// Submit landing between two turns of a chain runs after that chain), not
/// necessarily reveille's: no step depends on another, so none may wait
/// seconds to keep an order that nothing needs (doc/SESSIONS.md).
#[test]
fn three_steps_ready_at_once_each_run_once() {
    let Some((ollie, _cwd, project)) = world(Options::default()) else {
        return;
    };
    ollie.set_turn(Duration::from_millis(150));
    let _daemon = Daemon::start(&project);
    let steps = [
        Step::new("Alpha").after("none"),
        Step::new("Bravo").after("none"),
        Step::new("Charlie").after("none"),
    ];
    task_plan(&project.plan_dir, "parallel", &steps);
    ollie.wait_ended("agent", 3, T);
    // Nothing more comes: each step ran once, as a turn of its own.
    let more = try_wait_until(Duration::from_secs(1), || {
        (ollie.turns("agent").len() > 3).then_some(())
    });
    let turns = ollie.turns("agent");
    assert!(more.is_none(), "a step ran twice: {turns:?}");
    for name in ["Alpha", "Bravo", "Charlie"] {
        assert_eq!(runs_of(&turns, name).len(), 1, "{name}: {turns:?}");
    }
    assert!(ollie.queue("agent").is_empty());
}

#[test]
fn a_killed_session_keeps_its_prompt_until_it_comes_back() {
    let Some((ollie, cwd, project)) = world(Options::default()) else {
        return;
    };
    let daemon = Daemon::start(&project);
    wait_seen(&project, "agent");
    ollie.kill("agent");
    daemon.wait_log("session agent is gone", T);
    let plan = task_plan(
        &project.plan_dir,
        "while away",
        &[Step::new("Migrate the db")],
    );
    wait_until("the prompt to wait in the outbox", T, || {
        (project.pending("agent").len() == 1).then_some(())
    });
    // Why it waits, in words, in `status` and `why`.
    let gone = "gone: no longer listed in the session index (killed, or renamed)";
    let status = wait_until("status to say why the session has no state", T, || {
        let status = project.status_json();
        let said = status["sessions"]
            .as_array()?
            .iter()
            .any(|s| s["absent"] == gone);
        said.then_some(status)
    });
    let why = project.run(&["why", &plan.display().to_string()]);
    let why = String::from_utf8_lossy(&why.stdout);
    assert!(
        why.contains(&format!(
            "pending in the outbox of session agent (prompt 0): the session is {gone}"
        )),
        "{why}"
    );
    let session = status["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "agent")
        .cloned()
        .expect("the session is in status");
    assert_eq!(session["pending"], serde_json::json!(["s1"]), "{status:#}");
    ollie.create("agent", cwd.path());
    let turns = ollie.wait_turns("agent", 1, T);
    assert!(turns[0].prompt.contains("Migrate the db"), "{turns:?}");
}

#[test]
fn a_renamed_session_keeps_its_prompt_visible_until_it_goes_stale() {
    let Some((ollie, _cwd, project)) = world(Options::default()) else {
        return;
    };
    let daemon = Daemon::start(&project);
    wait_seen(&project, "agent");
    std::fs::write(ollie.session_dir("agent").join("ctl"), "rn renamed\n").unwrap();
    daemon.wait_log("session agent is gone", T);
    let plan = task_plan(&project.plan_dir, "renamed", &[Step::new("Tidy up")]);
    wait_until("the prompt to wait in the outbox", T, || {
        (project.pending("agent").len() == 1).then_some(())
    });
    task_complete(&plan, "Tidy up");
    daemon.wait_log("withdrew pending prompt for s1", T);
    assert!(project.pending("agent").is_empty());
    assert!(
        ollie.turns("renamed").is_empty(),
        "nothing reached the renamed session: {:?}",
        ollie.all_turns()
    );
}

#[test]
fn a_kill_9_between_writing_and_recording_repeats_that_prompt_at_most_once() {
    // A slow pre-turn window keeps the agent looking idle after the Submit,
    // so the daemon is still waiting to see the turn start — the prompt
    // written, `Delivered` not yet recorded — when it is killed.
    let options = Options {
        pre_turn: Duration::from_millis(1500),
        turn: Duration::from_millis(100),
        ..Options::default()
    };
    let Some((ollie, _cwd, project)) = world(options) else {
        return;
    };
    let daemon = Daemon::start(&project);
    task_plan(
        &project.plan_dir,
        "crash",
        &[Step::new("Survive the crash").after("none")],
    );
    wait_until("the agent to receive the prompt", T, || {
        (!ollie.received("agent").is_empty()).then_some(())
    });
    daemon.kill9();
    let daemon = Daemon::start(&project);
    let turns = barrier(&project, &ollie, "After the crash");
    let runs = runs_of(&turns, "Survive the crash");
    assert!(
        (1..=2).contains(&runs.len()),
        "ran {} times: {turns:?}\n{}",
        runs.len(),
        daemon.log()
    );
    assert_eq!(runs_of(&turns, "After the crash").len(), 1, "{turns:?}");
}

#[test]
fn a_restart_while_the_agent_is_busy_queues_behind_its_turn() {
    let Some((ollie, _cwd, project)) = world(Options::default()) else {
        return;
    };
    let first = Daemon::start(&project);
    assert!(first.term().success());
    ollie.set_turn(Duration::from_millis(2000));
    submit(&ollie, "agent", "a long job");
    wait_until("the agent to be busy", T, || {
        (!ollie.idle("agent")).then_some(())
    });
    // Ready while reveille is down: the restart announces it, once.
    task_plan(&project.plan_dir, "down", &[Step::new("Ready while down")]);
    let daemon = Daemon::start(&project);
    daemon.wait_log("queued s1 behind the running turn of agent", T);
    let turns = ollie.wait_turns("agent", 2, T);
    assert!(turns[1].prompt.contains("Ready while down"), "{turns:?}");
    assert!(turns[1].started >= ended(&turns[0]), "{turns:?}");
    ollie.set_turn(Duration::from_millis(100));
    let turns = barrier(&project, &ollie, "Final barrier");
    assert_eq!(runs_of(&turns, "Ready while down").len(), 1, "{turns:?}");
    assert_eq!(turns[0].ended.map(|e| e.1), Some(Outcome::Finished));
}

/// Status shows each observed session's state.
#[test]
fn status_shows_each_sessions_state() {
    let Some((ollie, cwd, project)) = world(Options::default()) else {
        return;
    };
    ollie.create("helper", cwd.path());
    ollie.set_turn(Duration::from_millis(3000));
    let daemon = Daemon::start(&project);
    submit(&ollie, "helper", "think hard");
    let state_of = |id: &str| -> Option<String> {
        let status = project.status_json();
        status["sessions"]
            .as_array()?
            .iter()
            .find(|s| s["id"] == id)?
            .get("state")?
            .as_str()
            .map(str::to_string)
    };
    wait_until("status to show helper busy", T, || {
        state_of("helper").filter(|s| s != "idle")
    });
    assert_eq!(state_of("agent").as_deref(), Some("idle"));
    let text = String::from_utf8(project.run(&["status"]).stdout).unwrap();
    assert!(
        text.contains("session agent (dir): idle for"),
        "{text}\n{}",
        daemon.log()
    );
}

/// Older ollie-9p (`enqueue`, `state`, `workdir`, no `idx`): recognised by
/// its `prompt` and `state` files, and woken the same way.
#[test]
fn an_idle_agent_of_an_older_ollie_9p_is_woken_too() {
    let Some((ollie, _cwd, project)) = world(Options {
        flavour: crate::doubles::ollie::Flavour::Legacy,
        ..Options::default()
    }) else {
        return;
    };
    let daemon = Daemon::start(&project);
    task_plan(&project.plan_dir, "legacy", &[Step::new("Old but awake")]);
    let turns = ollie.wait_turns("agent", 1, T);
    assert!(turns[0].prompt.contains("Old but awake"), "{turns:?}");
    // No `idx` to follow its state by: the journal says what is known.
    daemon.wait_log("submitted s1 to session agent", T);
    assert!(ollie.queue("agent").is_empty());
}

/// The read of `prompt.prev` that confirms a Submit fails once (EIO, as
/// ollie-9p's store reads do when they time out): the Submit had landed,
/// so the step reaches the agent exactly once — the doubt is settled by
/// the session's next look, never by sending again.
#[test]
fn a_failed_confirmation_read_is_not_a_lost_prompt() {
    let Some((ollie, _cwd, project)) = world(Options::default()) else {
        return;
    };
    let daemon = Daemon::start(&project);
    wait_seen(&project, "agent");
    ollie.fail_reads("prompt.prev", 1);
    task_plan(&project.plan_dir, "once", &[Step::new("Run me once")]);
    daemon.wait_log("could not tell whether session agent took s1", T);
    ollie.wait_ended("agent", 1, T);
    // Anything sent again is in before a second prompt's turn.
    let turns = barrier(&project, &ollie, "After the doubt");
    assert_eq!(
        runs_of(&turns, "Run me once").len(),
        1,
        "{turns:?}\n{}",
        daemon.log()
    );
    assert!(project.pending("agent").is_empty(), "{}", daemon.log());
}
