//! Fan-out end to end: the real daemon against the ollie-9p double on a
//! real FUSE mount. Parallel steps of a plan run in the parent and in child
//! sessions reveille creates through `s/new`; each step runs exactly once,
//! across `kill -9` too; the parent hears of each child's completion; idle
//! children are reaped; a child killed from outside hands its step back.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::doubles::fuse::fuse_unavailable;
use crate::doubles::ollie::{task_complete, Ollie, TurnScope};
use crate::util::daemon::Daemon;
use crate::util::plans::{task_plan, Step};
use crate::util::project::Project;
use crate::util::wait_until;

const T: Duration = Duration::from_secs(20);
const PARENT: &str = "agent";

/// The double with the parent session in its own working directory, and a
/// project that fans out up to `max_children`; `None` where FUSE cannot run.
fn setup(max_children: u32) -> Option<(Ollie, tempfile::TempDir, Project)> {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: fan-out needs the ollie-9p double, which needs FUSE: {why}");
        return None;
    }
    let ollie = Ollie::start();
    let cwd = tempfile::tempdir().unwrap();
    ollie.create(PARENT, cwd.path());
    let mut project = Project::with_default_session(PARENT);
    let sessions = format!("{:?}", ollie.sessions_dir().display().to_string());
    project.set("sessions", "dir", &sessions);
    project.set("sessions", "state_poll_ms", "50");
    project.set("fanout", "max_children", &max_children.to_string());
    Some((ollie, cwd, project))
}

/// Three parallel steps and a join after them.
fn parallel_plan(plan_dir: &Path) -> PathBuf {
    task_plan(
        plan_dir,
        "fan out",
        &[
            Step::new("Alpha").after("none"),
            Step::new("Beta").after("none"),
            Step::new("Gamma").after("none"),
            Step::new("Join").after("1, 2, 3"),
        ],
    )
}

/// The step a prompt hands over, by title: its first line ends with it.
/// `None` for prompts that hand over no step (a child's completion told).
fn step_of(prompt: &str) -> Option<String> {
    let first = prompt.lines().next()?;
    let handed = first.contains(" is ready: ") || first.contains("sub-agent");
    handed.then(|| first.rsplit(": ").next().unwrap_or("").to_string())
}

/// What each session was handed, and the directory it worked in.
type Handed = Arc<Mutex<Vec<(String, String, PathBuf)>>>;

/// Agents that do the step each prompt hands them: `task_complete` on the
/// plan, as ollie's tool does, at the turn's tool call.
///
/// The ticks are serialised: `task_complete` reads the file and writes it
/// back, so two agents ticking one plan at the same instant can each undo
/// the other's tick (the last writer wins) — a hazard of any plan shared by
/// sessions, not of reveille, and not what these tests are about.
fn working_agents(ollie: &Ollie, plan: &Path) -> Handed {
    let handed = Handed::default();
    let (plan, log) = (plan.to_path_buf(), handed.clone());
    let ticking = Arc::new(Mutex::new(()));
    ollie.on_turn(move |turn: &TurnScope| {
        if let Some(step) = step_of(&turn.prompt) {
            let who = (turn.session.clone(), step.clone(), turn.cwd.clone());
            log.lock().unwrap().push(who);
            let _one_at_a_time = ticking.lock().unwrap();
            task_complete(&plan, &step).unwrap();
        }
    });
    handed
}

fn wait_join(handed: &Handed) {
    wait_until("the join step to reach the parent", T, || {
        let h = handed.lock().unwrap();
        h.iter()
            .any(|(s, step, _)| s == PARENT && step == "Join")
            .then_some(())
    });
}

fn children_of(ollie: &Ollie) -> Vec<String> {
    let mut ids = ollie.session_ids();
    ids.retain(|id| id != PARENT);
    ids
}

#[test]
fn three_parallel_steps_run_in_the_parent_and_two_children_and_the_join_reaches_the_parent() {
    let Some((ollie, cwd, project)) = setup(2) else {
        return;
    };
    let plan_dir = project.plan_dir.clone();
    let daemon = Daemon::start(&project);
    let plan = parallel_plan(&plan_dir);
    let handed = working_agents(&ollie, &plan);
    wait_join(&handed);
    let handed = handed.lock().unwrap().clone();
    let mut steps: Vec<&str> = handed.iter().map(|(_, s, _)| s.as_str()).collect();
    steps.sort();
    assert_eq!(
        steps,
        vec!["Alpha", "Beta", "Gamma", "Join"],
        "each step exactly once: {handed:?}\n{}",
        daemon.log()
    );
    let at = |step: &str| handed.iter().find(|(_, s, _)| s == step).unwrap().0.clone();
    assert_eq!(at("Alpha"), PARENT);
    assert_eq!(at("Join"), PARENT);
    let (beta, gamma) = (at("Beta"), at("Gamma"));
    assert!(
        beta != PARENT && gamma != PARENT && beta != gamma,
        "{handed:?}"
    );
    for (who, step, dir) in &handed {
        assert_eq!(dir, cwd.path(), "{step} ran in {who} in {dir:?}");
    }
    // The parent hears of each child's completion, naming step and child.
    for (child, step) in [(&beta, "s2"), (&gamma, "s3")] {
        let told = format!("{step} was completed by child {child}");
        wait_until(&format!("the parent to hear {told:?}"), T, || {
            ollie
                .received(PARENT)
                .iter()
                .any(|r| r.text.contains(&told))
                .then_some(())
        });
        let times = ollie
            .received(PARENT)
            .iter()
            .filter(|r| r.text.contains(&told))
            .count();
        assert_eq!(times, 1, "told once");
    }
    // Idle children are reaped.
    wait_until("the children to be reaped", T, || {
        children_of(&ollie).is_empty().then_some(())
    });
    // Journal entries about a child name it and its parent.
    let journal = daemon.log();
    for what in [
        format!("creating child session {beta}"),
        // (The index's own "session … appeared" is the tree worker's,
        // which knows no parents: the engine says the child exists.)
        format!("child session {beta} exists"),
        format!("announced s2 to session {beta}"),
        format!("idle session {beta} for s2"),
        format!("killing child session {beta}"),
    ] {
        let line = journal
            .lines()
            .find(|l| l.contains(&what))
            .unwrap_or_else(|| panic!("no {what:?} in\n{journal}"));
        assert!(
            (line.contains(&format!("session=\"{beta}\""))
                || line.contains(&format!("session={beta} ")))
                && line.contains("parent=\"agent\""),
            "{line}"
        );
    }
}

#[test]
fn kill_9_right_after_the_children_are_created_makes_no_second_child() {
    let Some((ollie, _cwd, project)) = setup(2) else {
        return;
    };
    // Turns long enough that the crash comes while the children start.
    ollie.set_turn(Duration::from_secs(1));
    let daemon = Daemon::start(&project);
    let plan = parallel_plan(&project.plan_dir);
    let handed = working_agents(&ollie, &plan);
    let children = wait_until("two children to exist", T, || {
        let c = children_of(&ollie);
        (c.len() == 2).then_some(c)
    });
    daemon.kill9();
    // Whatever the crash caught (a create recorded but not confirmed is
    // asked for again, under the same name), no third session appears.
    let daemon = Daemon::start(&project);
    wait_join(&handed);
    let ever: Vec<String> = ollie
        .all_turns()
        .iter()
        .map(|t| t.session.clone())
        .filter(|s| s != PARENT)
        .collect();
    assert!(
        ever.iter().all(|s| children.contains(s)),
        "a second child: {ever:?} beyond {children:?}\n{}",
        daemon.log()
    );
    let handed = handed.lock().unwrap().clone();
    for step in ["Beta", "Gamma"] {
        let by: Vec<&String> = handed
            .iter()
            .filter(|(_, s, _)| s == step)
            .map(|(who, _, _)| who)
            .collect();
        assert!(
            !by.is_empty() && by.iter().all(|w| *w == by[0]),
            "{step} ran in {by:?}"
        );
    }
}

#[test]
fn a_child_killed_from_outside_hands_its_step_back_to_the_parent_once() {
    let Some((ollie, _cwd, project)) = setup(2) else {
        return;
    };
    let daemon = Daemon::start(&project);
    let plan = parallel_plan(&project.plan_dir);
    let (victim, step) = wait_until("a child to be handed its step", T, || {
        children_of(&ollie).into_iter().find_map(|c| {
            let step = ollie.received(&c).iter().find_map(|r| step_of(&r.text))?;
            Some((c, step))
        })
    });
    ollie.kill(&victim);
    let handed_back = |ollie: &Ollie| {
        ollie
            .received(PARENT)
            .iter()
            .filter(|r| step_of(&r.text).as_deref() == Some(step.as_str()))
            .count()
    };
    let back = crate::util::try_wait_until(T, || (handed_back(&ollie) > 0).then_some(()));
    assert!(
        back.is_some(),
        "the step was not handed back:\n{}",
        daemon.log()
    );
    // The plan read again (a rewrite, then a second plan as a barrier: its
    // wake-up comes after the rewrite was judged) hands it over no more.
    let text = std::fs::read_to_string(&plan).unwrap();
    crate::util::plans::write_in_place(&plan, text.as_bytes());
    task_plan(&project.plan_dir, "barrier", &[Step::new("Barrier")]);
    wait_until("the barrier to reach the parent", T, || {
        ollie
            .received(PARENT)
            .iter()
            .any(|r| r.text.contains("Barrier"))
            .then_some(())
    });
    assert_eq!(handed_back(&ollie), 1, "{}", daemon.log());
    assert_eq!(daemon.log_count("goes back to agent"), 1);
    assert!(!ollie.exists(&victim));
    assert_eq!(children_of(&ollie).len(), 1, "no replacement child");
}

#[test]
fn the_cap_holds_and_steps_beyond_it_go_to_the_parent() {
    let Some((ollie, _cwd, project)) = setup(1) else {
        return;
    };
    let daemon = Daemon::start(&project);
    let _plan = parallel_plan(&project.plan_dir);
    daemon.wait_log("exists, working on", T);
    wait_until("the parent's two steps", T, || {
        let steps: Vec<String> = ollie
            .received(PARENT)
            .iter()
            .filter_map(|r| step_of(&r.text))
            .collect();
        (steps.len() == 2).then_some(())
    });
    assert_eq!(children_of(&ollie).len(), 1, "{}", daemon.log());
    let status = project.status_json();
    let kids = status["children"].as_array().expect("children in status");
    assert_eq!(kids.len(), 1, "{status}");
    assert_eq!(kids[0]["parent"], PARENT);
    assert_eq!(kids[0]["step"], "s2");
    assert_eq!(kids[0]["state"], "working");
    assert!(kids[0]["age_s"].is_u64(), "{status}");
    let text = String::from_utf8(project.run(&["status"]).stdout).unwrap();
    assert!(
        text.contains(&format!(
            "child   {}: s2 of",
            kids[0]["id"].as_str().unwrap()
        )),
        "{text}"
    );
}

#[test]
fn kill_9_as_soon_as_a_child_is_recorded_makes_no_second_child() {
    let Some((ollie, _cwd, project)) = setup(1) else {
        return;
    };
    let daemon = Daemon::start(&project);
    let plan = parallel_plan(&project.plan_dir);
    // The record is in the journal before this line is logged; its create
    // may or may not have been written when the kill lands.
    daemon.wait_log("creating child session", T);
    daemon.kill9();
    let handed = working_agents(&ollie, &plan);
    let daemon = Daemon::start(&project);
    wait_join(&handed);
    let ever: std::collections::BTreeSet<String> = ollie
        .all_turns()
        .iter()
        .map(|t| t.session.clone())
        .filter(|s| s != PARENT)
        .collect();
    assert_eq!(ever.len(), 1, "{ever:?}\n{}", daemon.log());
    let handed = handed.lock().unwrap().clone();
    let mut steps: Vec<&str> = handed.iter().map(|(_, s, _)| s.as_str()).collect();
    steps.sort();
    steps.dedup();
    assert_eq!(steps, vec!["Alpha", "Beta", "Gamma", "Join"], "{handed:?}");
}

#[test]
fn check_shows_the_fanout_keys_with_where_they_come_from() {
    let mut project = Project::new();
    project.set("fanout", "max_children", "2");
    let out = project.run(&["check"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in\n{text}"))
            .to_string()
    };
    assert!(line("fanout.max_children").contains("= 2"), "{text}");
    assert!(line("fanout.max_children").contains("# file"), "{text}");
    assert!(line("fanout.max_total").contains("= 8"), "{text}");
    assert!(line("fanout.keep_children").contains("= false"), "{text}");
    assert!(line("fanout.model").contains("default"), "{text}");
}

/// A child gets its parent's cwd and the configured backend and model —
/// never the parent's backend as `cfg` shows it: that is a display name
/// (`local`) which `s/new backend=` refuses.
#[test]
fn children_take_the_parents_cwd_and_the_configured_backend_and_model() {
    let Some((ollie, cwd, mut project)) = setup(1) else {
        return;
    };
    std::fs::write(ollie.session_dir(PARENT).join("cfg"), "backend=ollama\n").unwrap();
    project.set("fanout", "backend", "\"openai\"");
    project.set("fanout", "model", "\"small\"");
    let _daemon = Daemon::start(&project);
    parallel_plan(&project.plan_dir);
    let child = wait_until("a child", T, || children_of(&ollie).pop());
    let idx = std::fs::read_to_string(ollie.sessions_dir().join("idx")).unwrap();
    let row: Vec<&str> = idx
        .lines()
        .find(|l| l.starts_with(&format!("{child}\t")))
        .unwrap_or_else(|| panic!("{child} not in idx:\n{idx}"))
        .split('\t')
        .collect();
    let parent_cwd = cwd.path().display().to_string();
    // ollie-9p lists the configured backend by its display name.
    assert_eq!(&row[2..], [parent_cwd.as_str(), "local", "small"], "{idx}");
}
