//! Codex's hidden dispatch (`core::confirm::CODEX_HIDDEN_DISPATCH`) kept
//! by the engine: a prompt handed out again and found in neither the
//! thread's queue nor its turns (`Evidence::NotRecorded`) is looked for
//! again after the window; found nowhere while a turn runs — the running
//! turn may be that very prompt, still hidden — it is looked for again once
//! the thread is idle; and it is written again only when a second look on
//! the idle thread, the window after the first, still does not find it.

use super::*;
use crate::core::confirm::CODEX_HIDDEN_DISPATCH as HIDDEN;
use crate::core::session::AgentState;

const CODEX: &str = "codex:t";

/// A Codex session whose outcomes the test feeds: a first run hands out
/// step 1 and is killed before its answer; the rig returned is the next
/// run, which has handed it out again (`again`).
fn restarted_with_s1_handed_again() -> Rig {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some(CODEX.into());
    let mut first = codex_rig(config, Memory::started(), &BTreeMap::new());
    first.write(NAME, "# Hidden\n\n- [ ] Step 1 (after: none)\n");
    assert_eq!(first.world.handed, [("s1".to_string(), false)]);
    let memory = first.engine.memory().clone();
    let mut again = codex_rig(first.engine.config().clone(), memory, &first.world.files);
    again.advance(Duration::from_secs(1));
    assert_eq!(again.world.handed, [("s1".to_string(), true)]);
    again
}

fn codex_rig(config: EngineConfig, memory: Memory, files: &BTreeMap<PathBuf, String>) -> Rig {
    let mut rig = Rig::new(config, Some(memory));
    rig.world.readers.insert(CODEX.into(), true);
    rig.world.reaches.insert(CODEX.into(), Reached::Accepted);
    rig.world.later.insert(CODEX.into());
    rig.world.files = files.clone();
    rig.startup();
    rig
}

impl Rig {
    fn seen(&mut self, state: AgentState) {
        self.feed(Input::Observed(Observation::new(
            CODEX.into(),
            Seen::State(state),
            Observer::Events,
        )));
    }

    fn absent(&mut self, seq: u64) {
        self.feed(Input::Evidence {
            session: CODEX.into(),
            seq,
            evidence: Evidence::NotRecorded("in neither the queue nor the turns".into()),
        });
    }

    fn s1(&self) -> u64 {
        self.engine.memory().outbox.get(CODEX).unwrap()[0].seq
    }

    fn writes(&self) -> usize {
        self.world.handed.iter().filter(|(_, again)| !again).count()
    }
}

fn busy() -> AgentState {
    AgentState::Busy("active".into())
}

#[test]
fn a_first_absence_is_looked_at_after_the_window_and_a_second_writes_it_once() {
    let mut rig = restarted_with_s1_handed_again();
    rig.seen(AgentState::Idle);
    let seq = rig.s1();
    rig.absent(seq);
    let first = rig.now;
    assert_eq!(rig.engine.poll_timeout(), Some(first + HIDDEN));
    rig.advance(HIDDEN - Duration::from_millis(1));
    assert!(rig.world.looked.is_empty(), "not before the window");
    rig.advance(Duration::from_millis(1));
    assert_eq!(rig.world.looked, [(CODEX.to_string(), seq)], "looked");
    assert_eq!(rig.writes(), 0, "a look writes nothing");
    rig.absent(seq);
    assert_eq!(
        rig.world.handed.last(),
        Some(&("s1".to_string(), false)),
        "written again as a first delivery, at once"
    );
    assert_eq!(rig.writes(), 1);
    assert!(rig
        .world
        .logs
        .iter()
        .any(|l| l.message.contains("did not take s1")));
}

#[test]
fn found_at_the_look_it_is_delivered_and_never_written() {
    let mut rig = restarted_with_s1_handed_again();
    rig.seen(AgentState::Idle);
    let seq = rig.s1();
    rig.absent(seq);
    rig.advance(HIDDEN);
    assert_eq!(rig.world.looked.len(), 1);
    rig.feed(Input::Delivered {
        session: CODEX.into(),
        seq,
        reached: Reached::Accepted,
    });
    rig.settle();
    assert_eq!(rig.writes(), 0);
    assert_eq!(rig.engine.memory().outbox.len_of(CODEX), 0);
}

#[test]
fn a_look_due_while_a_turn_runs_is_made_and_an_absence_then_waits_for_idle() {
    let mut rig = restarted_with_s1_handed_again();
    rig.seen(AgentState::Idle);
    let seq = rig.s1();
    rig.absent(seq);
    rig.seen(busy());
    rig.advance(HIDDEN);
    // Made while busy: a prompt whose turn runs is found at once.
    assert_eq!(rig.world.looked, [(CODEX.to_string(), seq)]);
    rig.absent(seq);
    assert_eq!(rig.writes(), 0, "an absence while busy proves nothing");
    rig.advance(HIDDEN * 10);
    rig.seen(busy());
    assert_eq!(rig.world.looked.len(), 1, "not again while busy");
    rig.seen(AgentState::Idle);
    assert_eq!(rig.world.looked.len(), 2, "once idle");
    // Long past the window since the first absence: this one proves it.
    rig.absent(seq);
    assert_eq!(rig.writes(), 1);
}

#[test]
fn an_absence_on_a_busy_thread_is_not_counted_and_looked_at_once_idle() {
    let mut rig = restarted_with_s1_handed_again();
    rig.seen(busy());
    let seq = rig.s1();
    rig.absent(seq);
    rig.advance(HIDDEN * 10);
    assert!(rig.world.looked.is_empty(), "not while busy");
    rig.seen(AgentState::Idle);
    assert_eq!(rig.world.looked.len(), 1, "once idle");
    // The first absence on the idle thread: looked at again after the
    // window, not written.
    rig.absent(seq);
    assert_eq!(rig.writes(), 0);
    rig.advance(HIDDEN);
    assert_eq!(rig.world.looked.len(), 2);
    rig.absent(seq);
    assert_eq!(rig.writes(), 1);
}

#[test]
fn a_look_waiting_for_idle_is_made_when_the_session_goes_away_and_nothing_is_written() {
    let mut rig = restarted_with_s1_handed_again();
    rig.seen(busy());
    let seq = rig.s1();
    rig.absent(seq);
    rig.feed(Input::Observed(Observation::new(
        CODEX.into(),
        Seen::Unreachable("codex app-server down".into()),
        Observer::Events,
    )));
    assert_eq!(rig.world.looked, [(CODEX.to_string(), seq)]);
    assert_eq!(rig.writes(), 0);
}

/// A delivery whose answer was lost with the connection (the call may or
/// may not have reached Codex): the journal says it could not tell, and
/// the session's next look makes the engine look in the thread rather
/// than take the session's presence for the prompt's.
#[test]
fn a_lost_answer_is_a_doubt_settled_by_a_look_in_the_thread_never_by_a_write() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some(CODEX.into());
    let mut rig = codex_rig(config, Memory::started(), &BTreeMap::new());
    rig.seen(AgentState::Idle);
    rig.write(NAME, "# Hidden\n\n- [ ] Step 1 (after: none)\n");
    let seq = rig.s1();
    rig.advance(Duration::from_millis(10));
    rig.feed(Input::Evidence {
        session: CODEX.into(),
        seq,
        evidence: Evidence::Unsure("no answer to thread/queue/add".into()),
    });
    assert!(rig.world.logs.iter().any(|l| l
        .message
        .contains("could not tell whether session codex:t took s1")));
    rig.advance(Duration::from_secs(5));
    assert!(rig.world.looked.is_empty(), "nothing before a look at it");
    // The session seen again (busy: the turn may be on it): looked for at
    // once — a turn running on it is found.
    rig.seen(busy());
    assert_eq!(rig.world.looked, [(CODEX.to_string(), seq)], "looked");
    rig.absent(seq);
    assert_eq!(rig.world.looked.len(), 1, "not again while busy");
    rig.seen(AgentState::Idle);
    assert_eq!(rig.world.looked.len(), 2, "once idle");
    // Not there: it never reached Codex; looked for once more, then sent.
    rig.absent(seq);
    assert_eq!(rig.writes(), 1, "only the first write");
    rig.advance(HIDDEN);
    assert_eq!(rig.world.looked.len(), 3);
    rig.absent(seq);
    assert_eq!(rig.writes(), 2);
}
