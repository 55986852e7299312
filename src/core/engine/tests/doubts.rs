//! A kind whose record tells whether it took a prompt (opencode: an
//! answer to reveille's message) can store a prompt and never run it, so
//! "could not tell" is answered by looking in the record again after the
//! kind's window — never by calling the prompt delivered because the
//! session is still there, never by sending it again. And a prompt it
//! refused for a running turn waits for the session's idle, not for a
//! backoff.

use super::*;
use crate::core::confirm::OPENCODE_RECORD;
use crate::core::session::AgentState;

const OC: &str = "opencode:x";

fn two_steps() -> String {
    "# Doubts\n\n- [ ] Step 1 (after: none)\n- [ ] Step 2 (after: none)\n".into()
}

fn look_at(state: AgentState) -> Input {
    Input::Observed(Observation::new(
        OC.into(),
        Seen::State(state),
        Observer::Events,
    ))
}

fn evidence(seq: u64, evidence: Evidence) -> Input {
    Input::Evidence {
        session: OC.into(),
        seq,
        evidence,
    }
}

/// An opencode session seen idle, its outcomes fed by the test; its first
/// prompt handed out: the rig, and that prompt's seq.
fn handed_out() -> (Rig, u64) {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some(OC.into());
    let mut rig = Rig::new(config, Some(Memory::started()));
    rig.world.readers.insert(OC.into(), true);
    rig.world.later.insert(OC.into());
    rig.startup();
    rig.advance(Duration::from_millis(5));
    rig.feed(look_at(AgentState::Idle));
    rig.write(NAME, &two_steps());
    assert_eq!(rig.take_delivered(), ["s1"]);
    let seq = rig.engine.memory().outbox.get(OC).unwrap()[0].seq;
    (rig, seq)
}

impl Rig {
    /// Every timer due until `end`, each at its instant.
    fn tick_until(&mut self, end: Duration) {
        while let Some(next) = self.engine.poll_timeout().filter(|&t| t <= end) {
            self.now = self.now.max(next);
            self.feed(Input::Tick);
        }
        self.now = end;
        self.feed(Input::Tick);
    }
}

#[test]
fn a_look_that_could_not_tell_is_looked_at_again_after_the_window_never_delivered_by_a_state() {
    let (mut rig, seq) = handed_out();
    rig.feed(evidence(seq, Evidence::Sent));
    rig.tick_until(rig.now + OPENCODE_RECORD);
    assert_eq!(rig.world.looked, [(OC.to_string(), seq)]);
    // The look's read failed.
    let failed_at = rig.now;
    rig.feed(evidence(
        seq,
        Evidence::Unsure("reading its messages failed: 500".into()),
    ));
    assert!(rig.world.logs.iter().any(|l| l.message.starts_with(
        "could not tell whether session opencode:x took s1 (reading its messages failed: 500)"
    )));
    // The session is seen, still there, idle and busy: that proves nothing
    // of a stored prompt opencode may never run.
    rig.advance(Duration::from_millis(10));
    rig.feed(look_at(AgentState::Busy("busy".into())));
    rig.feed(look_at(AgentState::Idle));
    assert_eq!(rig.engine.memory().outbox.len_of(OC), 2, "not delivered");
    assert!(rig.take_delivered().is_empty(), "nothing sent on a doubt");
    rig.tick_until(failed_at + OPENCODE_RECORD - Duration::from_millis(1));
    assert_eq!(rig.world.looked.len(), 1, "not before the window");
    rig.tick_until(failed_at + OPENCODE_RECORD);
    assert_eq!(rig.world.looked.len(), 2, "looked at again after it");
    assert!(rig.take_delivered().is_empty(), "a look writes nothing");
    // Failing again: looked at again, said once.
    rig.feed(evidence(seq, Evidence::Unsure("reset".into())));
    rig.tick_until(rig.now + OPENCODE_RECORD);
    assert_eq!(rig.world.looked.len(), 3);
    let doubts = rig.world.logs.iter();
    assert_eq!(
        doubts
            .filter(|l| l.message.contains("could not tell"))
            .count(),
        1
    );
    // The answer tells: delivered, and the next one goes.
    rig.feed(Input::Delivered {
        session: OC.into(),
        seq,
        reached: Reached::Accepted,
    });
    assert_eq!(rig.engine.memory().outbox.len_of(OC), 1);
    rig.feed(look_at(AgentState::Idle));
    assert_eq!(rig.take_delivered(), ["s2"]);
}

#[test]
fn a_post_that_broke_midway_is_looked_for_and_sent_again_only_when_not_there() {
    let (mut rig, seq) = handed_out();
    rig.feed(evidence(
        seq,
        Evidence::Unsure("the connection was reset".into()),
    ));
    rig.tick_until(rig.now + OPENCODE_RECORD * 3);
    assert_eq!(rig.world.looked, [(OC.to_string(), seq)], "one look");
    assert!(
        rig.take_delivered().is_empty(),
        "never posted again on a doubt"
    );
    rig.feed(evidence(seq, Evidence::NotRecorded("not there".into())));
    rig.tick_until(rig.now + Duration::from_secs(1));
    assert_eq!(
        rig.take_delivered(),
        ["s1"],
        "posted again: it was not taken"
    );
}

#[test]
fn a_prompt_refused_for_a_running_turn_goes_at_the_idle_not_after_a_backoff() {
    let (mut rig, seq) = handed_out();
    // The backend saw it busy (its look first), and refused the prompt.
    rig.advance(Duration::from_millis(5));
    rig.feed(look_at(AgentState::Busy("busy".into())));
    rig.feed(evidence(
        seq,
        Evidence::Busy("busy: waits for the running turn to end".into()),
    ));
    assert!(
        !rig.world
            .logs
            .iter()
            .any(|l| l.message.contains("cannot deliver")),
        "not a failure: {:?}",
        rig.world.logs
    );
    assert!(rig.world.logs.iter().any(|l| l
        .message
        .starts_with("s1 waits for session opencode:x to be idle")));
    rig.tick_until(rig.now + Duration::from_secs(60));
    assert!(rig.take_delivered().is_empty(), "held while busy");
    assert!(rig.engine.poll_timeout().is_none(), "no retry timer");
    rig.feed(look_at(AgentState::Idle));
    assert_eq!(rig.take_delivered(), ["s1"], "at the idle");
}

#[test]
fn a_busy_refusal_older_than_the_newest_idle_goes_again_at_once() {
    let (mut rig, seq) = handed_out();
    // The backend's busy look was made before an idle the engine has.
    let mut old = Observation::new(
        OC.into(),
        Seen::State(AgentState::Busy("b".into())),
        Observer::Program,
    );
    old.at = rig.now;
    rig.advance(Duration::from_millis(5));
    rig.feed(look_at(AgentState::Idle));
    rig.feed(Input::Observed(old));
    rig.feed(evidence(seq, Evidence::Busy("busy".into())));
    assert_eq!(rig.take_delivered(), ["s1"], "the newest look says idle");
}

#[test]
fn a_prompt_found_taken_after_its_turn_ended_leaves_the_session_idle_for_the_next() {
    let (mut rig, seq) = handed_out();
    rig.feed(evidence(seq, Evidence::Sent));
    // Its turn ran and ended, its answer unseen (an event lost).
    rig.advance(Duration::from_millis(100));
    rig.feed(look_at(AgentState::Busy("busy".into())));
    rig.advance(Duration::from_millis(100));
    rig.feed(look_at(AgentState::Idle));
    assert!(rig.take_delivered().is_empty(), "s1 is in flight");
    // The look finds it answered.
    rig.tick_until(rig.now + OPENCODE_RECORD);
    assert_eq!(rig.world.looked, [(OC.to_string(), seq)]);
    rig.feed(Input::Delivered {
        session: OC.into(),
        seq,
        reached: Reached::Accepted,
    });
    assert_eq!(rig.take_delivered(), ["s2"], "the session is idle: s2 goes");
}
