//! Wake-ups as agents see them: a stock plan, its lifecycle renames, and a
//! DAG with parallel branches (SPEC §2, §3).

use crate::util::daemon::{Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::{barrier, file_name, rename_state, task_complete, task_plan, Step};
use crate::util::project::Project;

#[test]
fn a_new_stock_plan_wakes_its_steps_one_at_a_time_in_order() {
    let p = Project::with_default_session("agent");
    let reader = Reader::open(&p.session("agent"));
    let _d = Daemon::start(&p);

    let plan = task_plan(
        &p.plan_dir,
        "Ship the parser",
        &[
            Step::new("Write the lexer").desc("Tokens for every keyword.\nKeep spans."),
            Step::new("Write the parser").desc("Recursive descent."),
            Step::new("Wire the CLI"),
        ],
    );
    let first = reader.next(WAIT);
    for want in [
        "Ship the parser",
        "s1",
        "Write the lexer",
        "Tokens for every keyword.",
        "Keep spans.",
        &file_name(&plan),
    ] {
        assert!(first.contains(want), "missing {want:?} in:\n{first}");
    }
    assert!(!first.contains("Write the parser"), "{first}");
    // Only the first step: nothing else is queued behind it.
    barrier(&p.plan_dir, &reader, "");

    task_complete(&plan, "lexer");
    let second = reader.next(WAIT);
    for want in [
        "s2",
        "Write the parser",
        "Recursive descent.",
        &file_name(&plan),
    ] {
        assert!(second.contains(want), "missing {want:?} in:\n{second}");
    }
    barrier(&p.plan_dir, &reader, "");

    task_complete(&plan, "parser");
    let third = reader.next(WAIT);
    assert!(
        third.contains("s3") && third.contains("Wire the CLI"),
        "{third}"
    );
    // The last step checked in a todo plan: no prompt at all (the all-done
    // nudge is for wip plans).
    task_complete(&plan, "CLI");
    barrier(&p.plan_dir, &reader, "");
}

#[test]
fn renames_through_the_lifecycle_never_re_announce_and_done_plans_wake_nobody() {
    let p = Project::with_default_session("agent");
    let reader = Reader::open(&p.session("agent"));
    let d = Daemon::start(&p);

    let todo = task_plan(
        &p.plan_dir,
        "Migrate the database",
        &[
            Step::new("Dump the data"),
            Step::new("Convert the schema"),
            Step::new("Load the data"),
            Step::new("Verify"),
        ],
    );
    assert!(reader.next(WAIT).contains("Dump the data"));

    // __todo → __wip: the same plan moving, not a new one.
    let wip = rename_state(&todo, "wip");
    d.wait_log(": start, Todo → Wip", WAIT);
    barrier(&p.plan_dir, &reader, "");

    // A step checked in a wip plan still wakes the next, and the prompt
    // names the plan's current file.
    task_complete(&wip, "Dump");
    let next = reader.next(WAIT);
    assert!(
        next.contains("s2") && next.contains("Convert the schema"),
        "{next}"
    );
    assert!(next.contains(&file_name(&wip)), "{next}");
    barrier(&p.plan_dir, &reader, "");

    // __wip → __done: steps that become ready afterwards wake nobody.
    let done = rename_state(&wip, "done");
    d.wait_log(": finish, Wip → Done", WAIT);
    task_complete(&done, "Convert");
    barrier(&p.plan_dir, &reader, "");
    assert_eq!(d.log_count("announced s3"), 0, "{}", d.log());
}

#[test]
fn parallel_roots_are_announced_together_and_a_join_waits_for_both() {
    let p = Project::with_default_session("agent");
    let reader = Reader::open(&p.session("agent"));
    let _d = Daemon::start(&p);

    let plan = task_plan(
        &p.plan_dir,
        "Build both halves",
        &[
            Step::new("Build the backend").after("none"),
            Step::new("Build the frontend").after("none"),
            Step::new("Integrate").after("s1, s2"),
        ],
    );
    let a = reader.next(WAIT);
    let b = reader.next(WAIT);
    assert!(a.contains("s1") && a.contains("Build the backend"), "{a}");
    assert!(b.contains("s2") && b.contains("Build the frontend"), "{b}");
    barrier(&p.plan_dir, &reader, "");

    // One branch done: the join still waits.
    task_complete(&plan, "frontend");
    barrier(&p.plan_dir, &reader, "");

    task_complete(&plan, "backend");
    let join = reader.next(WAIT);
    assert!(join.contains("s3") && join.contains("Integrate"), "{join}");
    assert!(join.contains("s1, s2"), "the join's dependencies: {join}");
    barrier(&p.plan_dir, &reader, "");
}

#[test]
fn a_session_scoped_plan_wakes_its_own_session() {
    let p = Project::with_default_session("someone-else");
    let own = Reader::open(&p.session("own"));
    let _other = Reader::open(&p.session("someone-else"));
    let _d = Daemon::start(&p);
    let plan = p.sessions_dir.join("own").join("plan");
    std::fs::write(
        &plan,
        "# Session work\n\n- [x] Read the code\n- [ ] Fix the bug\n",
    )
    .unwrap();
    let got = own.next(WAIT);
    assert!(got.contains("s2") && got.contains("Fix the bug"), "{got}");
    task_complete(&plan, "Fix the bug");
    // A session directory created after start-up is picked up too.
    let late = Reader::open(&p.session("late"));
    std::fs::write(
        p.sessions_dir.join("late").join("plan"),
        "# Late work\n\n- [ ] First thing\n",
    )
    .unwrap();
    let got = late.next(WAIT);
    assert!(got.contains("First thing"), "{got}");
    barrier(&p.plan_dir, &own, "<!-- session: own -->\n");
}
