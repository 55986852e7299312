//! The memory's records and state files: idempotent records, each part
//! applying its share, and state files of every version reading back.

use super::*;
use crate::core::record::{Child, ChildState, Note, Pending};

fn plan() -> Source {
    Source::Plan("p".into())
}

fn announce(seq: u64) -> Record {
    Record::Announce {
        source: plan(),
        item: Item::step(format!("step {seq}")),
        session: Some("s".into()),
        baseline: false,
        pending: Some(Pending {
            seq,
            source: plan(),
            item: Item::step(format!("step {seq}")),
            step: format!("s{seq}"),
            plan: "p.md".into(),
            text: "hi".into(),
        }),
    }
}

#[test]
fn replaying_records_twice_changes_nothing() {
    let records = [
        announce(0),
        announce(1),
        Record::Delivered {
            session: "s".into(),
            seq: 0,
        },
        Record::Forget {
            source: plan(),
            item: Item::step("step 1"),
        },
        Record::Cursor {
            cursor: Cursor {
                dev: 1,
                ino: 2,
                offset: 3,
                head: 4,
                last: 5,
            },
        },
    ];
    let mut once = Memory::default();
    records.iter().for_each(|r| once.apply(r));
    let mut twice = once.clone();
    records.iter().for_each(|r| twice.apply(r));
    assert_eq!(once, twice);
    assert_eq!(once.pending_total(), 1);
    assert_eq!(once.position.next_seq(), 2);
    assert!(once.is_announced(&plan(), &Item::step("step 0")));
    assert!(!once.is_announced(&plan(), &Item::step("step 1")));
}

/// A record about a plan changes the plans' share only, one about a
/// tracker source the tasks' share only.
#[test]
fn each_share_applies_the_records_about_its_own_sources() {
    let mut m = Memory::default();
    m.apply(&announce(0));
    let task = Source::NineBeads("/src/proj".into());
    m.apply(&Record::Announce {
        source: task.clone(),
        item: Item::task("bd-1"),
        session: Some("s".into()),
        baseline: false,
        pending: None,
    });
    assert!(m.plans.is_step_announced(&plan(), "step 0"));
    assert!(!m.plans.has(&task));
    assert!(m.tasks.is_task_announced(&task, "bd-1"));
    assert!(!m.tasks.has(&plan()));
    // One map of both, in source order: `9beads:` sorts before `plan:`.
    let sources: Vec<&Source> = m.announced().map(|(s, _)| s).collect();
    assert_eq!(sources, [&task, &plan()]);
    assert_eq!(m.announced_count(), 2);
}

#[test]
fn child_records_are_idempotent_and_round_trip() {
    let child = Child {
        parent: "agent".into(),
        source: plan(),
        item: Item::step("beta"),
        step: "s2".into(),
        plan: "p.md".into(),
        state: ChildState::Working,
        since_unix_ms: Some(5),
    };
    let records = [
        Record::Child {
            id: "agent.s2-1".into(),
            child: Child {
                state: ChildState::Planned,
                since_unix_ms: None,
                ..child.clone()
            },
        },
        Record::Child {
            id: "agent.s2-1".into(),
            child: child.clone(),
        },
    ];
    let mut once = Memory::default();
    records.iter().for_each(|r| once.apply(r));
    let mut twice = once.clone();
    records.iter().for_each(|r| twice.apply(r));
    assert_eq!(once, twice);
    assert_eq!(once.children.get("agent.s2-1"), Some(&child));
    for r in &records {
        let line = serde_json::to_string(r).unwrap();
        assert_eq!(&serde_json::from_str::<Record>(&line).unwrap(), r);
    }
    let text = serde_json::to_string(&once).unwrap();
    assert_eq!(serde_json::from_str::<Memory>(&text).unwrap(), once);
    once.apply(&Record::ChildEnded {
        id: "agent.s2-1".into(),
    });
    assert!(once.children.is_empty());
}

#[test]
fn adopting_a_source_moves_its_items_and_pending_prompts_once() {
    let from = Source::Mount("proj".into());
    let to = Source::NineBeads("/src/proj".into());
    let task = |id: &str, source: &Source, seq: Option<u64>| Record::Announce {
        source: source.clone(),
        item: Item::task(id),
        session: Some("s".into()),
        baseline: false,
        pending: seq.map(|seq| Pending {
            seq,
            source: source.clone(),
            item: Item::task(id),
            step: id.into(),
            plan: source.to_string(),
            text: format!("{id} at {source}"),
        }),
    };
    let mut once = Memory::default();
    once.apply(&task("bd-1", &from, Some(0)));
    once.apply(&task("bd-2", &from, None));
    once.apply(&task("bd-2", &to, Some(1)));
    let adopt = Record::Adopt {
        from: from.clone(),
        to: to.clone(),
    };
    once.apply(&adopt);
    let mut twice = once.clone();
    twice.apply(&adopt);
    assert_eq!(once, twice);
    assert!(!once.tasks.has(&from));
    assert!(once.is_announced(&to, &Item::task("bd-1")));
    // What `to` already had is kept as it was.
    assert!(once.tasks.entry(&to, &Item::task("bd-2")).is_some());
    let sources: Vec<&Source> = once
        .outbox
        .get("s")
        .unwrap()
        .iter()
        .map(|p| &p.source)
        .collect();
    assert_eq!(sources, [&to, &to]);
    let line = serde_json::to_string(&adopt).unwrap();
    assert_eq!(
        line,
        r#"{"r":"adopt","from":"mount:proj","to":"9beads:/src/proj"}"#
    );
    assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), adopt);
}

/// A state file written by version 1 (mount sources, a pending prompt,
/// the cursor) reads as it is.
#[test]
fn a_version_1_state_file_reads() {
    let text = r#"{"version":1,"announced":{"mount:proj":{"task:bd-1":{"session":"s"}}},
        "outbox":{"s":[{"seq":4,"source":"mount:proj","item":"task:bd-1","step":"bd-1",
        "plan":"mount:proj","text":"[reveille] Task bd-1 is ready"}]},"next_seq":5,
        "cursor":{"dev":1,"ino":2,"offset":300,"head":9,"last":8},"baselined":true}"#;
    let m: Memory = serde_json::from_str(text).unwrap();
    assert_eq!(m.version, 1);
    assert!(m.is_announced(&Source::Mount("proj".into()), &Item::task("bd-1")));
    assert_eq!(m.pending_total(), 1);
    assert_eq!(m.cursor().map(|c| c.offset), Some(300));
}

/// A state file written by version 2 — `state-v2.json`, written by that
/// version's own code with an item of every kind, a reminder count, a
/// baseline entry with no session, a prompt pending for a parent and one
/// for a child, the cursor and a child — reads with each source in its
/// share, and writes back as version 3 with nothing lost.
#[test]
fn a_version_2_state_file_reads_each_source_into_its_share() {
    let m: Memory = serde_json::from_str(include_str!("state-v2.json")).unwrap();
    assert_eq!(m.version, 2);
    let plan = Source::Plan("20260101T000000_0a1b2c3d".into());
    let keys: Vec<&str> = m.plans.step_keys(&plan).collect();
    assert_eq!(keys, ["write the docs", "write the tests"]);
    let tests = m
        .plans
        .entry(&plan, &Item::step("write the tests"))
        .unwrap();
    assert_eq!(
        (tests.session.as_deref(), tests.reminded),
        (Some("agent"), 2)
    );
    assert!(m.plans.told_all_done(&plan));
    assert!(m.plans.told_child_done(&plan, "write the code"));
    assert!(m
        .plans
        .is_step_announced(&Source::PlanJson("roadmap".into()), "phase one"));
    let checklist = Source::SessionPlan("1744276689123456789-2b986c".into());
    let baseline = m
        .plans
        .entry(&checklist, &Item::step("look around"))
        .unwrap();
    assert!(baseline.baseline && baseline.session.is_none());

    let nine = Source::NineBeads("/src/proj".into());
    assert_eq!(m.tasks.task_announced_to(&nine, "bd-1"), Some("agent"));
    let claim = Item::from(Note::Claim("bd-2".into(), "agent-1".into()));
    assert!(m.tasks.contains(&nine, &claim));
    assert!(m
        .tasks
        .contains(&nine, &Work::Claimed("bd-2".into()).into()));
    assert!(m
        .tasks
        .contains(&nine, &Note::Completed("bd-3".into()).into()));
    let held = m.tasks.holder(&nine, "bd-4");
    assert_eq!(held, Some(("agent".into(), "Write\tthe changelog".into())));
    assert!(m
        .tasks
        .is_task_announced(&Source::Mount("proj".into()), "bd-5"));
    assert!(m.tasks.is_task_announced(&Source::Beads, "bd-9"));
    assert!(m.plans.sources().all(Source::is_plan));
    assert!(m.tasks.sources().all(|s| !s.is_plan()));

    let seqs = |s: &str| -> Vec<u64> { m.outbox.get(s).unwrap().iter().map(|p| p.seq).collect() };
    assert_eq!(seqs("agent"), [8]);
    assert_eq!(seqs("agent.s3-00000000abcd"), [7]);
    assert_eq!(m.position.next_seq(), 10);
    assert_eq!(
        m.cursor().map(|c| (c.offset, c.last)),
        Some((1234, 0x0102030405060708))
    );
    assert!(m.baselined());
    let child = m.children.get("agent.s3-00000000abcd").unwrap();
    assert_eq!(
        (child.state, child.step.as_str()),
        (ChildState::Working, "s3")
    );

    let mut now = m.clone();
    now.version = Memory::VERSION;
    let text = serde_json::to_string(&now).unwrap();
    assert!(
        text.contains(r#""plans":{"#) && !text.contains("announced"),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<Memory>(&text).unwrap(), now);
}

#[test]
fn records_and_memory_round_trip_through_json() {
    let mut m = Memory::default();
    m.apply(&announce(7));
    let text = serde_json::to_string(&m).unwrap();
    let back: Memory = serde_json::from_str(&text).unwrap();
    assert_eq!(back, m);
    let r = announce(3);
    let line = serde_json::to_string(&r).unwrap();
    assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
}
