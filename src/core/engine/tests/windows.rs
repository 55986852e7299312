//! The windows of "was it taken" (`core::confirm`) kept by the engine's
//! timers: a prompt handed out again to a kind whose record lags its
//! writes (Claude Code's transcript) goes only once that window has passed
//! since its last possible write — a look for it in the record sooner
//! could miss a copy the agent has, and writing it again runs it twice.
//! A first delivery never waits.

use super::*;
use crate::core::confirm::{CLAUDE_RECORD, CLAUDE_TRANSCRIPT_LAG};

const CLAUDE: &str = "claude:x";

fn one_step() -> String {
    "# Windows\n\n- [ ] Step 1 (after: none)\n".into()
}

/// A Claude session whose outcomes the test feeds, from `memory`, in a
/// world of `files`.
fn claude(config: Option<EngineConfig>, memory: Memory, files: &BTreeMap<PathBuf, String>) -> Rig {
    let config = config.unwrap_or_else(|| {
        let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
        config.default_session = Some(CLAUDE.into());
        config
    });
    let mut rig = Rig::new(config, Some(memory));
    rig.world.readers.insert(CLAUDE.into(), true);
    rig.world.reaches.insert(CLAUDE.into(), Reached::Inbox);
    rig.world.later.insert(CLAUDE.into());
    rig.world.files = files.clone();
    rig.startup();
    rig
}

fn handed(rig: &Rig) -> Vec<(String, bool)> {
    rig.world.handed.clone()
}

#[test]
fn a_first_delivery_goes_at_once_and_one_from_an_earlier_run_after_the_lag() {
    let mut rig = claude(None, Memory::started(), &BTreeMap::new());
    rig.write(NAME, &one_step());
    assert_eq!(handed(&rig), [("s1".to_string(), false)], "at once");

    // Killed with the prompt written and not yet confirmed: the next run
    // starts at engine time zero, and the transcript may not show it yet.
    let memory = rig.engine.memory().clone();
    let config = Some(rig.engine.config().clone());
    let mut again = claude(config, memory, &rig.world.files);
    assert!(handed(&again).is_empty(), "not before the lag");
    assert_eq!(again.engine.poll_timeout(), Some(CLAUDE_TRANSCRIPT_LAG));
    again.advance(CLAUDE_TRANSCRIPT_LAG - Duration::from_millis(1));
    assert!(handed(&again).is_empty(), "not before the lag");
    again.advance(Duration::from_millis(1));
    assert_eq!(handed(&again), [("s1".to_string(), true)], "then, again");
}

#[test]
fn a_prompt_tried_before_in_this_run_waits_for_the_lag_after_its_outcome() {
    let mut rig = claude(None, Memory::started(), &BTreeMap::new());
    rig.advance(Duration::from_secs(10));
    rig.write(NAME, &one_step());
    let seq = rig.engine.memory().outbox.get(CLAUDE).unwrap()[0].seq;
    rig.advance(Duration::from_secs(1));
    let failed_at = rig.now;
    rig.feed(Input::Undeliverable {
        session: CLAUDE.into(),
        seq,
        why: Undeliverable {
            reason: "Claude Code session x ended before it recorded the prompt".into(),
        },
    });
    // The backoff (50 ms) ends first; the lag still holds it.
    let backoff = rig.engine.config().retry_initial;
    assert!(backoff < CLAUDE_TRANSCRIPT_LAG);
    rig.advance(backoff);
    assert_eq!(handed(&rig).len(), 1, "held by the lag: {:?}", handed(&rig));
    assert_eq!(
        rig.engine.poll_timeout(),
        Some(failed_at + CLAUDE_TRANSCRIPT_LAG)
    );
    rig.now = failed_at + CLAUDE_TRANSCRIPT_LAG;
    rig.feed(Input::Tick);
    assert_eq!(
        handed(&rig),
        [("s1".to_string(), false), ("s1".to_string(), true)]
    );
}

/// The first prompt of a started Claude rig, sent into the inbox
/// (`Evidence::Sent`) at `rig.now`: its seq.
fn sent(rig: &mut Rig) -> u64 {
    rig.write(NAME, &two_steps());
    let seq = rig.engine.memory().outbox.get(CLAUDE).unwrap()[0].seq;
    rig.feed(Input::Evidence {
        session: CLAUDE.into(),
        seq,
        evidence: Evidence::Sent,
    });
    seq
}

fn two_steps() -> String {
    "# Windows\n\n- [ ] Step 1 (after: none)\n- [ ] Step 2 (after: none)\n".into()
}

#[test]
fn a_prompt_sent_is_looked_for_after_the_record_window_and_sent_again_only_when_absent() {
    let mut rig = claude(None, Memory::started(), &BTreeMap::new());
    rig.advance(Duration::from_secs(1));
    let seq = sent(&mut rig);
    let sent_at = rig.now;
    assert_eq!(rig.take_delivered(), ["s1"]);
    assert_eq!(rig.engine.poll_timeout(), Some(sent_at + CLAUDE_RECORD));
    rig.advance(CLAUDE_RECORD - Duration::from_millis(1));
    assert!(rig.world.looked.is_empty(), "not before the window");
    assert!(rig.take_delivered().is_empty(), "nothing more meanwhile");
    rig.advance(Duration::from_millis(1));
    assert_eq!(rig.world.looked, [(CLAUDE.to_string(), seq)], "looked for");
    assert!(rig.take_delivered().is_empty(), "a look writes nothing");
    rig.feed(Input::Evidence {
        session: CLAUDE.into(),
        seq,
        evidence: Evidence::NotRecorded("not in t.jsonl".into()),
    });
    assert!(rig
        .world
        .logs
        .iter()
        .any(|l| l.message.contains("not in t.jsonl")));
    rig.settle();
    assert_eq!(
        handed(&rig).last(),
        Some(&("s1".to_string(), true)),
        "sent again"
    );
}

#[test]
fn a_record_that_tells_first_ends_the_wait_and_no_look_is_asked() {
    let mut rig = claude(None, Memory::started(), &BTreeMap::new());
    let seq = sent(&mut rig);
    assert_eq!(rig.take_delivered(), ["s1"]);
    rig.advance(Duration::from_millis(50));
    rig.feed(Input::Delivered {
        session: CLAUDE.into(),
        seq,
        reached: Reached::Inbox,
    });
    rig.feed(Input::TurnStarted {
        session: CLAUDE.into(),
        seq,
    });
    assert_eq!(rig.take_delivered(), ["s2"]);
    rig.advance(CLAUDE_RECORD * 2);
    assert!(rig.world.looked.is_empty(), "{:?}", rig.world.looked);
}

#[test]
fn a_look_that_could_not_read_the_record_sends_nothing_and_looks_there_again() {
    let mut rig = claude(None, Memory::started(), &BTreeMap::new());
    let seq = sent(&mut rig);
    assert_eq!(rig.take_delivered(), ["s1"]);
    rig.advance(CLAUDE_RECORD);
    assert_eq!(rig.world.looked.len(), 1, "looked for");
    rig.feed(Input::Evidence {
        session: CLAUDE.into(),
        seq,
        evidence: Evidence::Unsure("reading t.jsonl failed: EIO".into()),
    });
    let doubts = |rig: &Rig| {
        let said = rig.world.logs.iter();
        said.filter(|l| {
            l.message
                .contains("could not tell whether session claude:x took s1")
        })
        .count()
    };
    assert_eq!(doubts(&rig), 1);
    // No look at the session comes (Claude Code's observer tells only a
    // change): the record is looked at again after the window.
    rig.advance(CLAUDE_RECORD - Duration::from_millis(1));
    assert_eq!(rig.world.looked.len(), 1, "not before the window");
    rig.advance(Duration::from_millis(1));
    assert_eq!(rig.world.looked.len(), 2, "looked at again");
    // Still unreadable: said once, looked at again.
    rig.feed(Input::Evidence {
        session: CLAUDE.into(),
        seq,
        evidence: Evidence::Unsure("reading t.jsonl failed: EIO".into()),
    });
    assert_eq!(doubts(&rig), 1, "said once");
    rig.advance(CLAUDE_RECORD);
    assert_eq!(rig.world.looked.len(), 3);
    assert!(rig.take_delivered().is_empty(), "nothing sent meanwhile");
    // Read at last: it was taken. The next step goes, and s1 never again.
    rig.feed(Input::Delivered {
        session: CLAUDE.into(),
        seq,
        reached: Reached::Inbox,
    });
    rig.feed(Input::TurnStarted {
        session: CLAUDE.into(),
        seq,
    });
    assert_eq!(rig.take_delivered(), ["s2"]);
    rig.settle();
    assert_eq!(handed(&rig).iter().filter(|(s, _)| s == "s1").count(), 1);
}
