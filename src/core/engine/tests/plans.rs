//! A plan's wake-ups end to end through the engine: announce, withdraw,
//! renames, restarts, errors, the outbox cap.

use super::*;

#[test]
fn a_new_plan_announces_only_its_first_step() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[false, false, false]));
    assert_eq!(rig.take_delivered(), vec!["s1"]);
    let text = &rig
        .engine
        .memory()
        .plans
        .get(&src("plan:20261130T101500_a1b2c3d4"))
        .unwrap();
    assert_eq!(text.len(), 1);
}

#[test]
fn task_complete_rewrites_unblock_the_next_step_once() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[false, false, false]));
    rig.take_delivered();
    rig.write(NAME, &stock(&[true, false, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    // The same content again (a second close) announces nothing.
    rig.write(NAME, &stock(&[true, false, false]));
    assert!(rig.take_delivered().is_empty());
    rig.write(NAME, &stock(&[true, true, false]));
    assert_eq!(rig.take_delivered(), vec!["s3"]);
}

#[test]
fn the_default_prompt_carries_goal_id_title_description_deps_and_file() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[true, false]));
    let (_, _, text) = &rig.world.delivered[0];
    assert!(text.contains("Ship it"), "{text}");
    assert!(text.contains("s2"), "{text}");
    assert!(text.contains("Step 2"), "{text}");
    assert!(text.contains("do thing 2"), "{text}");
    assert!(text.contains("Completed dependencies: s1."), "{text}");
    // How to close it with the tools the agent has: the checkbox edit.
    assert!(
        text.contains(&format!(
            "When it is finished, change `- [ ] Step 2` to `- [x] Step 2` in {PLAN_DIR}/{NAME}."
        )),
        "{text}"
    );
    assert!(
        text.contains("Sent by reveille, the plan watcher your user set up"),
        "{text}"
    );
    assert!(!text.contains("task_complete"), "{text}");
}

#[test]
fn renames_through_the_lifecycle_never_reannounce() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[false, false]));
    rig.rename(NAME, WIP);
    rig.settle();
    assert_eq!(rig.take_delivered(), vec!["s1"]);
    let plans = rig.engine.plans();
    assert_eq!(plans[0].lifecycle, Lifecycle::Wip);
    rig.write(WIP, &stock(&[true, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    // A slug change is the same plan too.
    let renamed = "20261130T101500_a1b2c3d4--ship-it-now__wip.md";
    rig.rename(WIP, renamed);
    rig.settle();
    assert!(rig.take_delivered().is_empty());
    assert_eq!(rig.engine.plan_count(), 1);
}

#[test]
fn split_rename_halves_are_one_move() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[false, false]));
    rig.take_delivered();
    // The from-half arrives alone; the to-half a moment later.
    let from = PathBuf::from(PLAN_DIR).join(NAME);
    let to = PathBuf::from(PLAN_DIR).join(WIP);
    let text = rig.world.files.remove(&from).unwrap();
    rig.world.files.insert(to.clone(), text);
    rig.feed(Input::Changed {
        path: from,
        change: Change::Gone,
    });
    rig.advance(Duration::from_millis(10));
    rig.feed(Input::Changed {
        path: to,
        change: Change::Appeared,
    });
    rig.settle();
    assert!(rig.take_delivered().is_empty());
    assert_eq!(rig.engine.plans()[0].lifecycle, Lifecycle::Wip);
    // An unmatched from-half (moved out of the directory) is a removal,
    // decided by listing the directory after the grace period.
    let wip = PathBuf::from(PLAN_DIR).join(WIP);
    rig.world.files.remove(&wip);
    rig.feed(Input::Changed {
        path: wip,
        change: Change::Gone,
    });
    assert_eq!(
        rig.engine.plan_count(),
        1,
        "not removed before the grace period"
    );
    rig.settle();
    assert_eq!(rig.engine.plan_count(), 0);
}

#[test]
fn done_and_abandoned_plans_wake_no_one_and_withdraw_pending() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    rig.write(NAME, &stock(&[false, false]));
    assert_eq!(rig.engine.memory().pending_total(), 1);
    rig.rename(NAME, DONE);
    assert_eq!(
        rig.engine.memory().pending_total(),
        0,
        "pending prompt withdrawn"
    );
    assert!(rig
        .world
        .logs
        .iter()
        .any(|l| l.message.contains("withdrew")));
    rig.world.readers.insert("s1".into(), true);
    rig.write(DONE, &stock(&[true, false]));
    rig.settle();
    assert!(rig.world.delivered.is_empty());
}

#[test]
fn checked_steps_withdraw_their_pending_prompt() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    rig.write(NAME, &stock(&[false, false]));
    rig.write(NAME, &stock(&[true, false]));
    // s1 was withdrawn, s2 is pending.
    let pending: Vec<String> = rig
        .engine
        .memory()
        .outbox
        .get("s1")
        .unwrap()
        .iter()
        .map(|p| p.step.clone())
        .collect();
    assert_eq!(pending, vec!["s2"]);
    rig.world.readers.insert("s1".into(), true);
    rig.settle();
    assert_eq!(rig.take_delivered(), vec!["s2"]);
}

#[test]
fn an_absent_reader_keeps_prompts_in_order_and_backs_off() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    let plan = "# G\n\n- [ ] A (after: none)\n- [ ] B (after: none)\n- [ ] C (after: none)\n";
    rig.write(NAME, plan);
    assert_eq!(rig.engine.memory().pending_total(), 3);
    let t1 = rig.engine.poll_timeout().unwrap();
    rig.advance(t1 - rig.now);
    let t2 = rig.engine.poll_timeout().unwrap();
    assert!(
        t2 - rig.now > t1,
        "backoff grows: {t1:?} then {:?}",
        t2 - rig.now
    );
    rig.world.readers.insert("s1".into(), true);
    // A reader appearing in the session directory triggers an immediate retry.
    rig.feed(Input::SessionActivity {
        session: "s1".into(),
    });
    assert_eq!(rig.take_delivered(), vec!["s1", "s2", "s3"]);
    assert_eq!(rig.engine.memory().pending_total(), 0);
    assert_eq!(
        rig.world
            .logs
            .iter()
            .filter(|l| l.message.contains("cannot deliver"))
            .count(),
        1,
        "a failure streak is logged once"
    );
}

#[test]
fn one_stuck_session_does_not_delay_another() {
    let mut rig = Rig::started();
    rig.world.readers.insert("stuck".into(), false);
    rig.world.readers.insert("ok".into(), true);
    rig.write(NAME, "<!-- session: stuck -->\n# A\n\n- [ ] one\n");
    rig.write(
        "20261130T101501_00000001--b__todo.md",
        "<!-- session: ok -->\n# B\n\n- [ ] two\n",
    );
    assert_eq!(rig.steps_delivered(), vec!["s1"]);
    assert_eq!(rig.world.delivered[0].0, "ok");
    assert_eq!(rig.engine.memory().outbox.get("stuck").unwrap().len(), 1);
}

#[test]
fn first_start_takes_a_baseline_and_announces_what_comes_after() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    let mut rig = Rig::new(config, None);
    rig.world.readers.insert("s1".into(), true);
    rig.world.files.insert(
        PathBuf::from(PLAN_DIR).join(NAME),
        stock(&[true, false, false]),
    );
    rig.startup();
    assert!(rig.world.delivered.is_empty(), "baseline is not announced");
    assert!(rig.engine.memory().baselined());
    let base = &rig
        .engine
        .memory()
        .plans
        .get(&src("plan:20261130T101500_a1b2c3d4"))
        .unwrap();
    assert!(base.values().all(|a| a.baseline));
    rig.write(NAME, &stock(&[true, true, false]));
    assert_eq!(rig.take_delivered(), vec!["s3"]);
    // A plan appearing later is announced.
    rig.write("20261130T101501_00000001--b__todo.md", &stock(&[false]));
    assert_eq!(rig.take_delivered(), vec!["s1"]);
}

#[test]
fn a_restart_announces_what_became_ready_while_down_once() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[false, false, false]));
    rig.take_delivered();
    let memory = rig.engine.memory().clone();
    // Down: the agent completes s1.
    let files = rig.world.files.clone();
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    let mut again = Rig::new(config, Some(memory));
    again.world.readers.insert("s1".into(), true);
    again.world.files = files;
    again.world.files.insert(
        PathBuf::from(PLAN_DIR).join(NAME),
        stock(&[true, false, false]),
    );
    again.startup();
    assert_eq!(again.take_delivered(), vec!["s2"]);
    // A second restart repeats nothing.
    let third = again.restarted();
    assert!(third.world.delivered.is_empty());
}

#[test]
fn a_crash_between_record_and_write_repeats_exactly_that_prompt() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    rig.write(NAME, &stock(&[false, false]));
    let mut again = rig.restarted();
    assert_eq!(again.take_delivered(), vec!["s1"]);
}

#[test]
fn plans_deleted_while_down_are_dropped_on_restart() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    rig.write(NAME, &stock(&[false, false]));
    let memory = rig.engine.memory().clone();
    let mut again = Rig::new(rig.engine.config().clone(), Some(memory));
    again.world.readers.insert("s1".into(), true);
    again.startup();
    assert!(again.world.delivered.is_empty());
    assert!(again.engine.memory().announced().next().is_none());
    assert_eq!(again.engine.memory().pending_total(), 0);
}

#[test]
fn an_invalid_plan_is_one_error_and_no_wakeups_until_fixed() {
    let mut rig = Rig::started();
    let bad = "# G\n\n- [x] A\n- [ ] B (after: 9)\n";
    // (The stub parser may not detect this; the engine path is what counts:
    // feed bytes that no parser accepts.)
    rig.write(NAME, "\u{0}\u{0}binary");
    rig.write(NAME, "\u{0}\u{0}binary");
    let errors = rig
        .world
        .logs
        .iter()
        .filter(|l| l.level() == Level::Error)
        .count();
    assert_eq!(errors, 1, "{:?}", rig.world.logs);
    let _ = bad;
    rig.write(NAME, &stock(&[true, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
}

#[test]
fn the_all_done_nudge_is_sent_once_for_wip_plans() {
    let mut rig = Rig::started();
    rig.write(WIP, &stock(&[true, false]));
    rig.take_delivered();
    rig.write(WIP, &stock(&[true, true]));
    assert_eq!(rig.take_delivered(), vec!["all-done"]);
    assert!(rig.world.delivered.is_empty());
    rig.write(WIP, &stock(&[true, true]));
    assert!(rig.take_delivered().is_empty(), "sent once");
    let mut text = rig.engine.memory().announced();
    assert!(text.any(|(_, m)| m.contains_key(&Note::AllDone.into())));
}

#[test]
fn a_plan_without_a_session_is_tracked_warned_once_and_wakes_later() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = None;
    let mut rig = Rig::new(config, Some(Memory::started()));
    rig.world.readers.insert("late".into(), true);
    rig.startup();
    rig.write(NAME, &stock(&[false]));
    rig.write(NAME, &stock(&[false]));
    assert!(rig.world.delivered.is_empty());
    assert_eq!(
        rig.world
            .logs
            .iter()
            .filter(|l| l.message.contains("no session"))
            .count(),
        1
    );
    rig.write(
        NAME,
        &format!("<!-- session: late -->\n{}", stock(&[false])),
    );
    assert_eq!(rig.take_delivered(), vec!["s1"]);
}

#[test]
fn session_ids_that_climb_out_are_refused() {
    let mut rig = Rig::started();
    rig.world.readers.insert("../x".into(), true);
    rig.write(
        NAME,
        &format!("<!-- session: ../x -->\n{}", stock(&[false])),
    );
    assert!(rig.world.delivered.is_empty());
    assert!(rig
        .world
        .logs
        .iter()
        .any(|l| l.level() == Level::Error && l.message.contains("../x")));
}

/// Regression (found by the crash campaign, `tests/reliability`): an
/// in-place rewrite truncates the file before writing it, and a read brought
/// by the previous close can see zero bytes. Parsed as a plan with no steps,
/// that forgot every announced step, and the next read announced the ready
/// ones again — a repeated prompt without a crash.
#[test]
fn a_read_catching_a_rewrite_between_truncate_and_write_repeats_nothing() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[true, false, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    rig.write(NAME, "");
    rig.write(NAME, &stock(&[true, false, false]));
    assert!(rig.take_delivered().is_empty(), "{:?}", rig.world.delivered);
    rig.write(NAME, &stock(&[true, true, false]));
    assert_eq!(rig.take_delivered(), vec!["s3"]);
}

/// Regression (found by the 30-minute soak in `tests/reliability`): the
/// same race as above, but the read got the head of the file (its first
/// read(2) of 32 bytes) before the truncate: a goal and no steps. Every
/// step looked checked, so the all-done nudge went out early, and every
/// announced step was forgotten and announced again.
#[test]
fn a_read_catching_only_the_head_of_a_rewrite_repeats_nothing_and_nudges_nobody() {
    let mut rig = Rig::started();
    rig.write(WIP, &stock(&[true, false, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    rig.write(WIP, "# Ship it\n\n");
    rig.write(WIP, &stock(&[true, false, false]));
    assert!(rig.take_delivered().is_empty(), "{:?}", rig.world.delivered);
    rig.write(WIP, &stock(&[true, true, true]));
    assert_eq!(rig.take_delivered(), vec!["all-done"]);
}

/// A plan that never had a step has nothing to be done: no nudge.
#[test]
fn a_plan_without_steps_gets_no_done_nudge() {
    let mut rig = Rig::started();
    rig.write(WIP, "# Nothing to do yet\n");
    assert!(rig.take_delivered().is_empty(), "{:?}", rig.world.delivered);
}

#[test]
fn a_settle_read_ignores_a_half_written_last_line() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[true]));
    rig.take_delivered();
    let path = PathBuf::from(PLAN_DIR).join(NAME);
    // Mid-write: a new step's title is cut off, and the writer has not closed.
    rig.world
        .files
        .insert(path.clone(), format!("{}- [ ] Half a ti", stock(&[true])));
    rig.feed(Input::Changed {
        path: path.clone(),
        change: Change::Modified,
    });
    rig.settle();
    assert!(rig.world.delivered.is_empty(), "{:?}", rig.world.delivered);
    rig.world.files.insert(
        path.clone(),
        format!("{}- [ ] Half a title\n", stock(&[true])),
    );
    rig.feed(Input::Changed {
        path,
        change: Change::Closed,
    });
    assert_eq!(rig.take_delivered(), vec!["s2"]);
}

#[test]
fn queue_mode_dumps_every_step_in_topological_order_with_the_goal_first() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    config.mode = Mode::Queue;
    let mut rig = Rig::new(config, Some(Memory::started()));
    rig.world.readers.insert("s1".into(), true);
    rig.startup();
    rig.write(NAME, &stock(&[false, false, false]));
    assert_eq!(rig.steps_delivered(), vec!["q1", "q2", "q3"]);
    assert!(rig.world.delivered[0].2.starts_with("Goal: Ship it"));
    assert!(
        rig.world.delivered[1]
            .2
            .starts_with("q2: Step 2 (after: q1)"),
        "{}",
        rig.world.delivered[1].2
    );
    assert!(!rig.world.delivered[1].2.contains("Goal:"));
}

#[test]
fn the_outbox_cap_refuses_loudly_and_loses_nothing() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    config.outbox_cap = 2;
    let mut rig = Rig::new(config, Some(Memory::started()));
    rig.startup();
    let plan = "# G\n\n- [ ] A (after: none)\n- [ ] B (after: none)\n- [ ] C (after: none)\n";
    rig.write(NAME, plan);
    assert_eq!(rig.engine.memory().pending_total(), 2);
    assert_eq!(rig.engine.refused()["s1"], 1);
    assert!(rig
        .world
        .logs
        .iter()
        .any(|l| l.message.contains("outbox full")));
    rig.world.readers.insert("s1".into(), true);
    rig.settle();
    let mut got = rig.take_delivered();
    got.sort();
    assert_eq!(got, vec!["s1", "s2", "s3"]);
}

/// Regression (found by the outbox-cap flood in `tests/reliability`): with
/// more ready steps than the cap, every delivery diffed every plan again and
/// refilled the outbox by one, logging "outbox full" each time — 10,000
/// prompts behind a cap of 1,000 took minutes and logged 2,000 errors. Now
/// the diff waits until half the cap has drained, and the refusal is said
/// once per streak; the order and the count are unchanged.
#[test]
fn draining_a_capped_outbox_refills_in_batches_and_says_full_once() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    config.outbox_cap = 10;
    let mut rig = Rig::new(config, Some(Memory::started()));
    rig.startup();
    let mut plan = String::from("# G\n\n");
    for i in 1..=100 {
        plan.push_str(&format!("- [ ] T{i:03} (after: none)\n"));
    }
    rig.write(NAME, &plan);
    assert_eq!(rig.engine.memory().pending_total(), 10);
    rig.world.readers.insert("s1".into(), true);
    rig.settle();
    let got = rig.take_delivered();
    let want: Vec<String> = (1..=100).map(|i| format!("s{i}")).collect();
    assert_eq!(got, want);
    let full = rig
        .world
        .logs
        .iter()
        .filter(|l| l.message.contains("outbox full"))
        .count();
    assert_eq!(full, 1);
    let diffs = rig
        .world
        .records
        .iter()
        .filter(|r| matches!(r, Record::Announce { .. }))
        .count();
    assert_eq!(diffs, 100);
}
