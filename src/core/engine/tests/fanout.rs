//! Fan-out: ready steps run by child sessions the engine asks for, their
//! confirmation, completion, reaping and hand-back.

use super::*;

use crate::core::record::ChildState;
use crate::core::session::AgentState;

const PLAN: &str = "plan:20261130T101500_a1b2c3d4";

/// Three parallel steps, then a join after all three.
fn parallel(checked: [bool; 4]) -> String {
    let mark = |c: bool| if c { "x" } else { " " };
    format!(
        "# Fan\n\n- [{}] Alpha (after: none)\n- [{}] Beta (after: none)\n- [{}] Gamma (after: none)\n- [{}] Join (after: 1, 2, 3)\n",
        mark(checked[0]),
        mark(checked[1]),
        mark(checked[2]),
        mark(checked[3])
    )
}

fn rig(max_children: usize, max_total: usize) -> Rig {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("p".into());
    config.fanout.max_children = max_children;
    config.fanout.max_total = max_total;
    let memory = Memory::started();
    let mut rig = Rig::new(config, Some(memory));
    rig.world.readers.insert("p".into(), true);
    rig.startup();
    rig
}

fn children(rig: &Rig) -> Vec<(String, String, ChildState)> {
    rig.engine
        .memory()
        .children
        .iter()
        .map(|(id, c)| (id.clone(), c.step.clone(), c.state))
        .collect()
}

/// A child exists and reads its prompts.
/// A parallel plan with two children planned; the first exists and
/// was told its step (s2). The rig and the children's ids.
fn one_child_at_work() -> (Rig, Vec<String>) {
    let mut rig = rig(2, 8);
    rig.write(NAME, &parallel([false; 4]));
    let ids: Vec<String> = rig.world.spawned.iter().map(|s| s.child.clone()).collect();
    appear(&mut rig, &ids[0], AgentState::Idle);
    rig.settle();
    rig.take_delivered();
    (rig, ids)
}

fn appear(rig: &mut Rig, id: &str, state: AgentState) {
    rig.world.readers.insert(id.into(), true);
    rig.feed(Input::ChildSpawned {
        child: id.into(),
        outcome: Ok(1_800_000_000_000),
    });
    rig.feed(Input::Observed(Observation::state(
        id.into(),
        Some(state),
        Observer::Index,
        "gone",
    )));
}

#[test]
fn parallel_steps_beyond_the_first_go_to_children_up_to_the_cap() {
    let mut rig = rig(2, 8);
    rig.write(NAME, &parallel([false; 4]));
    let spawned: Vec<String> = rig.world.spawned.iter().map(|s| s.child.clone()).collect();
    assert_eq!(spawned.len(), 2, "{:?}", rig.world.spawned);
    assert!(rig.world.spawned.iter().all(|s| s.parent == "p"));
    assert_eq!(
        children(&rig)
            .iter()
            .map(|c| c.1.clone())
            .collect::<Vec<_>>(),
        vec!["s2", "s3"]
    );
    // The parent got s1 at once; the children's prompts wait for them,
    // without a write tried at a session that is not there yet.
    assert_eq!(rig.take_delivered(), vec!["s1"]);
    rig.settle();
    let tried = rig
        .world
        .logs
        .iter()
        .any(|l| l.message.starts_with("cannot deliver"));
    assert!(!tried, "{:?}", rig.world.logs);
    for id in &spawned {
        appear(&mut rig, id, AgentState::Idle);
    }
    rig.settle();
    let texts: Vec<(String, String, String)> = rig.world.delivered.clone();
    assert_eq!(texts.len(), 2, "{texts:?}");
    for (session, step, text) in &texts {
        assert!(spawned.contains(session), "{session}");
        assert!(text.contains("sub-agent"), "{text}");
        assert!(text.contains("to `- [x] "), "{text}");
        assert!(!text.contains("task_complete"), "{text}");
        assert!(text.contains(&format!("{step}: ")), "{text}");
    }
    assert!(children(&rig).iter().all(|c| c.2 == ChildState::Working));
    // The same content again creates nobody.
    rig.write(NAME, &parallel([false; 4]));
    assert_eq!(rig.world.spawned.len(), 2);
}

#[test]
fn the_parent_hears_of_each_child_completion_and_idle_children_are_reaped() {
    let mut rig = rig(2, 8);
    rig.write(NAME, &parallel([false; 4]));
    let ids: Vec<String> = rig.world.spawned.iter().map(|s| s.child.clone()).collect();
    for id in &ids {
        appear(&mut rig, id, AgentState::Busy("thinking".into()));
    }
    rig.settle();
    rig.take_delivered();
    rig.write(NAME, &parallel([false, true, false, false]));
    let told: Vec<(String, String, String)> = std::mem::take(&mut rig.world.delivered);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].0, "p");
    assert!(
        told[0]
            .2
            .contains(&format!("s2 was completed by child {}", ids[0])),
        "{}",
        told[0].2
    );
    // Busy: not killed yet; idle: killed, once.
    assert!(rig.world.reaped.is_empty());
    rig.feed(Input::Observed(Observation::state(
        ids[0].clone(),
        Some(AgentState::Idle),
        Observer::Index,
        "gone",
    )));
    assert_eq!(rig.world.reaped, vec![ids[0].clone()]);
    rig.feed(Input::Observed(Observation::state(
        ids[0].clone(),
        None,
        Observer::Index,
        "gone",
    )));
    rig.write(NAME, &parallel([true, true, true, false]));
    rig.feed(Input::Observed(Observation::state(
        ids[1].clone(),
        Some(AgentState::Idle),
        Observer::Index,
        "gone",
    )));
    assert_eq!(rig.world.reaped, ids);
    // The join step reaches the parent; nothing else creates a child.
    let last: Vec<(String, String)> = rig
        .world
        .delivered
        .iter()
        .map(|d| (d.0.clone(), d.1.clone()))
        .collect();
    assert!(last.contains(&("p".into(), "s4".into())), "{last:?}");
    assert!(last.contains(&("p".into(), "s3".into())), "{last:?}");
    assert_eq!(rig.world.spawned.len(), 2);
    assert!(children(&rig).is_empty(), "{:?}", children(&rig));
}

#[test]
fn a_child_gone_before_its_step_is_checked_hands_it_back_to_the_parent_once() {
    let (mut rig, ids) = one_child_at_work();
    rig.feed(Input::Observed(Observation::state(
        ids[0].clone(),
        None,
        Observer::Index,
        "gone",
    )));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    let to_parent = rig
        .engine
        .memory()
        .plans
        .get(&src(PLAN))
        .unwrap()
        .values()
        .filter(|a| a.session.as_deref() == Some("p"))
        .count();
    assert_eq!(to_parent, 2, "s1 and the handed-back s2");
    // Reads again announce nothing more, and create no child for it.
    rig.write(NAME, &parallel([false; 4]));
    assert!(rig.take_delivered().is_empty());
    assert_eq!(rig.world.spawned.len(), 2);
    // A create that fails hands back the same way.
    rig.feed(Input::ChildSpawned {
        child: ids[1].clone(),
        outcome: Err("no s/new".into()),
    });
    assert_eq!(rig.take_delivered(), vec!["s3"]);
}

/// A child killed within a poll of its creation is never listed by any
/// read of `idx`: a read begun after it was seen created and not listing
/// it says it is gone, and its step goes back to the parent; a read begun
/// before it was created says nothing of it.
#[test]
fn a_child_no_read_of_idx_listed_since_its_creation_is_gone() {
    let (mut rig, ids) = one_child_at_work();
    let created = 1_800_000_000_000;
    let read = |begun_unix_ms| Input::IndexRead {
        begun_unix_ms,
        listed: ["p".to_string()].into(),
    };
    rig.feed(read(created - 1));
    assert!(rig.take_delivered().is_empty(), "too new for that read");
    assert!(children(&rig).iter().any(|(id, ..)| *id == ids[0]));
    rig.feed(read(created + 1));
    assert_eq!(rig.take_delivered(), vec!["s2"], "handed back once");
    rig.feed(read(created + 2));
    assert!(rig.take_delivered().is_empty());
}

/// A child whose program stopped (an opencode server, a Codex
/// app-server) keeps its step: it goes on when the program is back.
/// Found gone then, it hands the step back.
#[test]
fn a_child_whose_program_is_unreachable_keeps_its_step_until_it_is_found_gone() {
    let (mut rig, ids) = one_child_at_work();
    rig.feed(Input::Observed(Observation::new(
        ids[0].clone(),
        Seen::Unreachable("down".into()),
        Observer::Program,
    )));
    rig.write(NAME, &parallel([false; 4]));
    assert!(rig.take_delivered().is_empty(), "nothing handed back");
    assert!(
        !rig.engine.sessions.observed().contains_key(&ids[0]),
        "nothing is known of it while its program is away"
    );
    appear(&mut rig, &ids[0], AgentState::Idle);
    assert!(rig.take_delivered().is_empty(), "its step is its own still");
    rig.feed(Input::Observed(Observation::new(
        ids[0].clone(),
        Seen::Unreachable("down".into()),
        Observer::Program,
    )));
    rig.feed(Input::Observed(Observation::state(
        ids[0].clone(),
        None,
        Observer::Index,
        "gone",
    )));
    assert_eq!(rig.take_delivered(), vec!["s2"], "gone: handed back");
}

#[test]
fn a_create_refused_at_once_hands_the_step_back_and_the_journal_replays_to_the_same_memory() {
    let mut rig = rig(1, 8);
    rig.world.refuse_spawns = true;
    let start = rig.engine.memory().clone();
    rig.write(NAME, &parallel([false; 4]));
    // Each step once, to the parent (the one handed back after the
    // one that waited at the cap).
    let mut got = rig.take_delivered();
    got.sort();
    assert_eq!(got, vec!["s1", "s2", "s3"]);
    assert!(rig.engine.memory().outbox.keys().all(|s| s == "p"));
    // The journal, replayed after a crash, is the memory the engine
    // has: a refusal handled before the records queued after its
    // create would leave the child's announcement after its withdrawal.
    let mut replayed = start;
    for r in &rig.world.records {
        replayed.apply(r);
    }
    assert_eq!(&replayed, rig.engine.memory(), "{:#?}", rig.world.records);
}

#[test]
fn a_child_recorded_but_not_confirmed_is_asked_for_again_with_the_same_id_after_a_crash() {
    let mut rig = rig(1, 8);
    rig.write(NAME, &parallel([false; 4]));
    assert_eq!(rig.world.spawned.len(), 1);
    let id = rig.world.spawned[0].child.clone();
    let memory = rig.engine.memory().clone();
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("p".into());
    config.fanout.max_children = 1;
    let mut again = Rig::new(config, Some(memory));
    again.world.files = rig.world.files.clone();
    again.startup();
    assert_eq!(again.world.spawned.len(), 1, "{:?}", again.world.spawned);
    assert_eq!(again.world.spawned[0].child, id);
    // s3 waited at the cap and went to the parent: no new child.
    assert_eq!(children(&again).len(), 1);
}

#[test]
fn kept_children_are_not_killed_and_free_their_slot_when_done() {
    let mut rig = rig(1, 1);
    let mut config = rig.engine.config().clone();
    config.fanout.keep_children = true;
    rig.engine.reconfigure(config);
    rig.write(NAME, &parallel([false; 4]));
    let id = rig.world.spawned[0].child.clone();
    appear(&mut rig, &id, AgentState::Idle);
    rig.write(NAME, &parallel([false, true, false, false]));
    rig.feed(Input::Observed(Observation::state(
        id.clone(),
        Some(AgentState::Idle),
        Observer::Index,
        "gone",
    )));
    assert!(rig.world.reaped.is_empty());
    assert_eq!(
        children(&rig),
        vec![(id.clone(), "s2".into(), ChildState::Done)]
    );
    // A done child no longer counts against max_total = 1: another
    // plan's parallel step gets a child.
    rig.write(
        "20261130T101600_b1b2c3d4--other__todo.md",
        &parallel([false; 4]),
    );
    assert_eq!(rig.world.spawned.len(), 2, "{:?}", rig.world.spawned);
    // Gone (killed by a person): no longer followed, nothing handed back.
    rig.feed(Input::Observed(Observation::state(
        id.clone(),
        None,
        Observer::Index,
        "gone",
    )));
    assert!(!rig.engine.memory().children.contains_key(&id));
}

#[test]
fn children_of_an_ended_plan_are_reaped_and_hand_nothing_back() {
    let mut rig = rig(2, 8);
    rig.write(NAME, &parallel([false; 4]));
    let ids: Vec<String> = rig.world.spawned.iter().map(|s| s.child.clone()).collect();
    appear(&mut rig, &ids[0], AgentState::Busy("thinking".into()));
    rig.take_delivered();
    rig.delete(NAME);
    rig.settle();
    assert!(
        children(&rig).iter().all(|c| c.2 == ChildState::Done),
        "{:?}",
        children(&rig)
    );
    rig.feed(Input::Observed(Observation::state(
        ids[0].clone(),
        Some(AgentState::Idle),
        Observer::Index,
        "gone",
    )));
    assert_eq!(rig.world.reaped, vec![ids[0].clone()]);
    assert!(
        rig.take_delivered().is_empty(),
        "nobody told of a deleted plan"
    );
    // Its slots are free: a new plan fans out again.
    rig.write(
        "20261130T101600_b1b2c3d4--other__todo.md",
        &parallel([false; 4]),
    );
    assert_eq!(rig.world.spawned.len(), 4);
}

#[test]
fn session_checklists_never_fan_out() {
    let mut rig = rig(2, 8);
    let path = PathBuf::from(SESSIONS).join("p/plan");
    rig.world.files.insert(path.clone(), parallel([false; 4]));
    rig.feed(Input::Changed {
        path,
        change: Change::Closed,
    });
    assert!(rig.world.spawned.is_empty());
    assert_eq!(rig.take_delivered(), vec!["s1", "s2", "s3"]);
}

#[test]
fn the_project_cap_holds_across_plans() {
    let mut rig = rig(2, 1);
    rig.write(NAME, &parallel([false; 4]));
    rig.write(
        "20261130T101600_b1b2c3d4--other__todo.md",
        &parallel([false; 4]),
    );
    assert_eq!(rig.world.spawned.len(), 1, "{:?}", rig.world.spawned);
    let to_parent = rig.world.delivered.iter().filter(|d| d.0 == "p").count();
    assert_eq!(to_parent, 5, "{:?}", rig.world.delivered);
}
