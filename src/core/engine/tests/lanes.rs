//! When a session's next prompt goes out (`engine/outbox.rs`): at once
//! after a prompt the agent took; after a turn starts on one held in an
//! agent's inbox; only while idle for an agent that would fold it into its
//! running turn; and what the journal says of each.

use super::*;
use crate::core::session::AgentState;

fn plan(steps: usize) -> String {
    let mut s = String::from("# Lanes\n\n");
    for i in 1..=steps {
        s.push_str(&format!("- [ ] Step {i} (after: none)\n"));
    }
    s
}

/// A started rig whose default session is `session`, observed in `state`,
/// taking prompts as `reached`.
fn rig(session: &str, state: Option<AgentState>, reached: Reached) -> Rig {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some(session.into());
    let memory = Memory::started();
    let mut rig = Rig::new(config, Some(memory));
    rig.world.readers.insert(session.into(), true);
    rig.world.reaches.insert(session.into(), reached);
    rig.startup();
    if state.is_some() {
        rig.feed(Input::Observed(Observation::state(
            session.into(),
            state,
            Observer::Index,
            "gone",
        )));
    }
    rig
}

impl Rig {
    /// Every timer due in the next `span`, as the daemon's deadline fires.
    fn ticks_for(&mut self, span: Duration) {
        let end = self.now + span;
        while let Some(next) = self.engine.poll_timeout().filter(|&t| t <= end) {
            self.now = self.now.max(next);
            self.feed(Input::Tick);
        }
        self.now = end;
        self.feed(Input::Tick);
    }
}

fn busy() -> Option<AgentState> {
    Some(AgentState::Busy("thinking".into()))
}

fn delivered_seqs(rig: &Rig) -> Vec<u64> {
    rig.world
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Delivered { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect()
}

fn said(rig: &Rig, needle: &str) -> bool {
    rig.world.logs.iter().any(|l| l.message.contains(needle))
}

#[test]
fn prompts_an_agent_took_are_followed_by_the_next_at_once() {
    // No hold after a Submit, whether it woke the agent or queued.
    for state in [Some(AgentState::Idle), busy(), None] {
        let mut rig = rig("a", state.clone(), Reached::Accepted);
        rig.write(NAME, &plan(3));
        assert_eq!(rig.steps_delivered(), ["s1", "s2", "s3"], "{state:?}");
        assert_eq!(delivered_seqs(&rig).len(), 3);
    }
}

#[test]
fn a_prompt_in_an_inbox_is_delivered_when_its_turn_starts_and_only_then_the_next_goes() {
    let mut rig = rig("claude:x", busy(), Reached::Inbox);
    rig.write(NAME, &plan(2));
    // One prompt in the inbox; the second waits in the outbox.
    assert_eq!(rig.steps_delivered(), ["s1"]);
    assert!(
        delivered_seqs(&rig).is_empty(),
        "not delivered before its turn"
    );
    assert!(said(&rig, "s1 waits in the inbox of claude:x"));
    assert_eq!(rig.engine.memory().pending_total(), 2);
    // Its step checked meanwhile: it is in the agent's hands, not withdrawn.
    let seq = rig.engine.memory().outbox.get("claude:x").unwrap()[0].seq;
    rig.feed(Input::TurnStarted {
        session: "claude:x".into(),
        seq,
    });
    assert_eq!(delivered_seqs(&rig), [seq]);
    assert!(said(&rig, "turn started on s1 in session claude:x"));
    assert_eq!(rig.steps_delivered(), ["s1", "s2"]);
    assert_eq!(rig.engine.told()["claude:x"].step, "s2");
}

#[test]
fn a_session_gone_with_a_prompt_in_its_inbox_gets_it_again_when_it_is_back() {
    let mut rig = rig("claude:x", Some(AgentState::Idle), Reached::Inbox);
    rig.write(NAME, &plan(1));
    assert_eq!(rig.take_delivered(), ["s1"]);
    rig.feed(Input::Observed(Observation::state(
        "claude:x".into(),
        None,
        Observer::Index,
        "gone",
    )));
    assert!(said(&rig, "went away with s1 in its inbox"));
    // Nothing is offered while it is gone…
    rig.world.readers.insert("claude:x".into(), false);
    rig.settle();
    // …and once it is back, the same prompt, once.
    rig.world.readers.insert("claude:x".into(), true);
    rig.feed(Input::Observed(Observation::state(
        "claude:x".into(),
        Some(AgentState::Idle),
        Observer::Index,
        "gone",
    )));
    rig.settle();
    assert_eq!(rig.steps_delivered(), ["s1"]);
    assert!(delivered_seqs(&rig).is_empty(), "still awaiting its turn");
}

#[test]
fn an_agent_that_folds_prompts_into_its_turn_gets_them_only_while_idle() {
    let mut rig = rig("opencode:x", busy(), Reached::Accepted);
    rig.write(NAME, &plan(2));
    assert!(
        rig.steps_delivered().is_empty(),
        "nothing into a running turn"
    );
    rig.feed(Input::Observed(Observation::state(
        "opencode:x".into(),
        Some(AgentState::Idle),
        Observer::Index,
        "gone",
    )));
    // Idle: the first goes; the second waits for the turn it starts to
    // end, as the agent reports it.
    assert_eq!(rig.take_delivered(), ["s1"]);
    rig.settle();
    assert!(
        rig.take_delivered().is_empty(),
        "not into the turn s1 started"
    );
    rig.feed(Input::Observed(Observation::state(
        "opencode:x".into(),
        Some(AgentState::Idle),
        Observer::Index,
        "gone",
    )));
    assert_eq!(rig.take_delivered(), ["s2"]);
}

#[test]
fn the_journal_says_once_that_a_prompt_waits_for_an_agent_to_be_idle() {
    let mut oc = rig("opencode:x", busy(), Reached::Accepted);
    oc.write(NAME, &plan(2));
    let waits = |rig: &Rig, step: &str| {
        rig.world
            .logs
            .iter()
            .filter(|l| {
                l.message
                    .starts_with(&format!("{step} waits for session opencode:x to be idle"))
            })
            .count()
    };
    assert_eq!(waits(&oc, "s1"), 1);
    assert!(said(&oc, "would be folded into that turn (thinking)"));
    oc.feed(Input::Observed(Observation::state(
        "opencode:x".into(),
        Some(AgentState::Busy("calling: bash".into())),
        Observer::Index,
        "gone",
    )));
    assert_eq!(waits(&oc, "s1"), 1, "said once per prompt");
    oc.feed(Input::Observed(Observation::state(
        "opencode:x".into(),
        Some(AgentState::Idle),
        Observer::Index,
        "gone",
    )));
    assert_eq!(oc.take_delivered(), ["s1"]);
    // s2 now waits for the turn s1 started: said, with why.
    assert_eq!(waits(&oc, "s2"), 1);
    assert!(said(&oc, "(starting a turn on s1)"));
    // An agent that runs a prompt after its turn is never said to hold one.
    let mut ollie = rig("a", busy(), Reached::Accepted);
    ollie.write(NAME, &plan(1));
    assert!(!said(&ollie, "to be idle"));
}

#[test]
fn the_journal_says_whether_the_prompt_woke_the_agent_or_waits_behind_its_turn() {
    let mut idle = rig("a", Some(AgentState::Idle), Reached::Accepted);
    idle.write(NAME, &plan(1));
    let seq = delivered_seqs(&idle)[0];
    idle.feed(Input::TurnStarted {
        session: "a".into(),
        seq,
    });
    assert!(said(&idle, "woke idle session a for s1"));
    // Named with its plan, though the prompt left the outbox when the
    // agent took it.
    let woke = idle
        .world
        .logs
        .iter()
        .find(|l| l.message.contains("woke idle"))
        .unwrap();
    assert!(woke.plan.is_some(), "{woke:?}");

    let mut slow = rig("a", Some(AgentState::Idle), Reached::Accepted);
    slow.write(NAME, &plan(1));
    slow.settle();
    assert!(said(
        &slow,
        "submitted s1 to idle session a; its turn was not seen starting within 2s"
    ));
    assert_eq!(slow.engine.told()["a"].outcome, Outcome::NotSeenStarting);

    let mut behind = rig("a", busy(), Reached::Accepted);
    behind.write(NAME, &plan(1));
    assert!(said(
        &behind,
        "queued s1 behind the running turn of a (thinking)"
    ));
    behind.settle();
    assert!(
        !said(&behind, "not seen starting"),
        "a queued prompt waits for its turn"
    );
}

#[test]
fn the_journal_judges_a_delivery_by_the_state_seen_when_it_was_written() {
    // Claude's inbox confirms a prompt only when the transcript shows it,
    // ~150 ms after the write: an idle agent is busy on it by then, and one
    // that was busy may have gone idle. Written to an idle agent: a wake-up.
    let mut woke = rig("claude:x", Some(AgentState::Idle), Reached::Inbox);
    woke.world.later.insert("claude:x".into());
    woke.write(NAME, &plan(1));
    assert_eq!(woke.take_delivered(), ["s1"]);
    let seq = woke.engine.memory().outbox.get("claude:x").unwrap()[0].seq;
    for input in [
        Input::Observed(Observation::state(
            "claude:x".into(),
            busy(),
            Observer::Index,
            "gone",
        )),
        Input::Delivered {
            session: "claude:x".into(),
            seq,
            reached: Reached::Inbox,
        },
        Input::TurnStarted {
            session: "claude:x".into(),
            seq,
        },
    ] {
        woke.feed(input);
    }
    assert!(!said(&woke, "waits in the inbox"), "{:?}", woke.world.logs);
    assert!(said(&woke, "woke idle session claude:x for s1"));
    // Written behind a running turn that ended before the confirmation.
    let mut behind = rig("claude:x", busy(), Reached::Inbox);
    behind.world.later.insert("claude:x".into());
    behind.write(NAME, &plan(1));
    let seq = behind.engine.memory().outbox.get("claude:x").unwrap()[0].seq;
    for input in [
        Input::Observed(Observation::state(
            "claude:x".into(),
            Some(AgentState::Idle),
            Observer::Index,
            "gone",
        )),
        Input::Delivered {
            session: "claude:x".into(),
            seq,
            reached: Reached::Inbox,
        },
        Input::TurnStarted {
            session: "claude:x".into(),
            seq,
        },
    ] {
        behind.feed(input);
    }
    assert!(said(
        &behind,
        "s1 waits in the inbox of claude:x for its running turn to end (thinking)"
    ));
    assert!(said(&behind, "turn started on s1 in session claude:x"));
    assert!(!said(&behind, "woke idle"), "{:?}", behind.world.logs);
}

#[test]
fn a_write_finishing_later_is_judged_by_the_state_when_it_finished() {
    // An ollie-9p Submit finishes in the background; its tree is polled,
    // so the state seen at its end is fresher than the one at its start.
    let mut rig = rig("a", Some(AgentState::Idle), Reached::Accepted);
    rig.world.later.insert("a".into());
    rig.write(NAME, &plan(1));
    let seq = rig.engine.memory().outbox.get("a").unwrap()[0].seq;
    rig.feed(Input::Observed(Observation::state(
        "a".into(),
        busy(),
        Observer::Index,
        "gone",
    )));
    rig.feed(Input::Delivered {
        session: "a".into(),
        seq,
        reached: Reached::Accepted,
    });
    assert!(said(
        &rig,
        "queued s1 behind the running turn of a (thinking)"
    ));
}

/// The close instruction quotes the step's line as the file has it — an
/// inline `(after: …)` too — so an agent's exact edit finds the line.
#[test]
fn the_close_instruction_quotes_the_line_as_written() {
    let mut rig = rig("a", None, Reached::Written);
    rig.write(NAME, "# G\n\n- [ ] Alpha  one (after: none)\n- [ ] Beta\n");
    let texts: Vec<&str> = rig
        .world
        .delivered
        .iter()
        .map(|(_, _, t)| t.as_str())
        .collect();
    assert!(
        texts[0].contains(
            "change `- [ ] Alpha  one (after: none)` to `- [x] Alpha  one (after: none)`"
        ),
        "{}",
        texts[0]
    );
    assert!(
        texts[0].contains("ready: Alpha one\n"),
        "the title is normalised: {}",
        texts[0]
    );
}

/// `again` marks a prompt that may have reached the agent already: tried
/// before in this run, or pending when this run began — never a first try.
#[test]
fn a_prompt_is_handed_out_again_after_a_failed_try_or_a_restart_only() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    rig.write(NAME, &stock(&[false, false]));
    let retry = rig.engine.poll_timeout().unwrap();
    rig.advance(retry - rig.now);
    assert_eq!(
        rig.world.handed,
        [("s1".to_string(), false), ("s1".to_string(), true)]
    );

    let mut again = rig.restarted();
    // Announced by the run before: it may have written it.
    assert_eq!(again.world.handed, [("s1".to_string(), true)]);
    // Announced in this run: a first delivery.
    again.write(NAME, &stock(&[true, false]));
    assert_eq!(again.world.handed[1], ("s2".to_string(), false));
}

/// A step checked while its prompt is being written cannot be taken back
/// then; if that write fails, the prompt is withdrawn as it comes back —
/// not kept and retried until it reaches the session, for a closed step.
#[test]
fn a_prompt_closed_while_being_written_is_withdrawn_when_the_write_fails() {
    let mut rig = Rig::started();
    rig.world.later.insert("s1".into());
    rig.write(NAME, &stock(&[false, false]));
    assert_eq!(rig.take_delivered(), ["s1"], "being written");
    let seq = rig.engine.memory().outbox.get("s1").unwrap()[0].seq;
    rig.write(NAME, &stock(&[true, false]));
    assert_eq!(
        rig.engine.memory().outbox.get("s1").unwrap()[0].seq,
        seq,
        "a prompt being written stays while it is"
    );
    rig.feed(Input::Undeliverable {
        session: "s1".into(),
        seq,
        why: Undeliverable {
            reason: "no reader".into(),
        },
    });
    assert!(said(
        &rig,
        "withdrew pending prompt for s1 to session s1: it was closed while it was being written"
    ));
    // The next goes out at once; the closed one never again.
    assert_eq!(rig.take_delivered(), ["s2"]);
    let retry = rig.engine.poll_timeout();
    if let Some(at) = retry {
        rig.advance(at.saturating_sub(rig.now) + Duration::from_secs(60));
    }
    assert!(!rig.steps_delivered().contains(&"s1".to_string()));
}

/// A Submit whose confirmation read failed: the prompt is in doubt, not
/// lost. Nothing is sent again on the doubt, nor does the next prompt go;
/// a look made before it settles nothing; the first look after it does —
/// the session still there took the write, and the next prompt goes.
#[test]
fn a_doubt_is_settled_by_the_next_look_never_by_sending_again() {
    let mut rig = rig("a", Some(AgentState::Idle), Reached::Accepted);
    rig.world.later.insert("a".into());
    // (A look at engine time zero is stamped as it is fed.)
    rig.advance(Duration::from_millis(5));
    rig.write(NAME, &plan(2));
    assert_eq!(rig.take_delivered(), ["s1"]);
    let seq = rig.engine.memory().outbox.get("a").unwrap()[0].seq;
    let before = rig.now;
    rig.advance(Duration::from_millis(10));
    rig.feed(Input::Evidence {
        session: "a".into(),
        seq,
        evidence: Evidence::Unsure("EIO".into()),
    });
    assert!(said(&rig, "could not tell whether session a took s1 (EIO)"));
    let mut old = Observation::new("a".into(), Seen::State(AgentState::Idle), Observer::Index);
    old.at = before;
    rig.feed(Input::Observed(old));
    rig.ticks_for(Duration::from_secs(60));
    let sent = rig.take_delivered();
    assert!(
        sent.is_empty(),
        "nothing sent on a doubt: {sent:?} {:?}",
        rig.world.logs
    );
    assert_eq!(rig.engine.memory().outbox.len_of("a"), 2);
    rig.feed(Input::Observed(Observation::state(
        "a".into(),
        busy(),
        Observer::Index,
        "gone",
    )));
    assert_eq!(rig.engine.memory().outbox.len_of("a"), 1, "s1 delivered");
    assert_eq!(rig.take_delivered(), ["s2"]);
}

/// A doubt settled by the session seen gone: what it had went with it,
/// and the prompt waits for it to come back.
#[test]
fn a_doubt_settled_by_the_session_gone_waits_for_it_to_come_back() {
    let mut rig = rig("a", Some(AgentState::Idle), Reached::Accepted);
    rig.world.later.insert("a".into());
    rig.write(NAME, &plan(1));
    assert_eq!(rig.take_delivered(), ["s1"]);
    let seq = rig.engine.memory().outbox.get("a").unwrap()[0].seq;
    rig.feed(Input::Evidence {
        session: "a".into(),
        seq,
        evidence: Evidence::Unsure("EIO".into()),
    });
    rig.advance(Duration::from_millis(10));
    rig.feed(Input::Observed(Observation::state(
        "a".into(),
        None,
        Observer::Index,
        "killed",
    )));
    assert_eq!(rig.engine.memory().outbox.len_of("a"), 1, "kept");
    rig.advance(Duration::from_secs(60));
    rig.feed(Input::Observed(Observation::state(
        "a".into(),
        Some(AgentState::Idle),
        Observer::Index,
        "gone",
    )));
    rig.ticks_for(Duration::from_secs(60));
    assert_eq!(rig.take_delivered(), ["s1"], "sent again once it is back");
}

/// Just after a restart a Claude session's state is not known yet when
/// its first prompt is written; by the time the transcript confirms it,
/// the session is busy — on that very prompt. It is not said to wait for
/// a running turn.
#[test]
fn a_prompt_written_before_the_state_was_known_is_not_said_to_wait_behind_a_turn() {
    let mut rig = rig("claude:x", None, Reached::Inbox);
    rig.world.later.insert("claude:x".into());
    rig.write(NAME, &plan(1));
    assert_eq!(rig.take_delivered(), ["s1"]);
    let seq = rig.engine.memory().outbox.get("claude:x").unwrap()[0].seq;
    rig.feed(Input::Observed(Observation::state(
        "claude:x".into(),
        Some(AgentState::Busy("busy".into())),
        Observer::Program,
        "gone",
    )));
    rig.feed(Input::Delivered {
        session: "claude:x".into(),
        seq,
        reached: Reached::Inbox,
    });
    assert!(
        !said(&rig, "for its running turn to end"),
        "{:?}",
        rig.world.logs
    );
    assert!(said(
        &rig,
        "submitted s1 to session claude:x (its state is not known)"
    ));
}

/// A session whose program cannot be reached, with prompts waiting: the
/// journal says why at info, once per episode, not at every look.
#[test]
fn why_prompts_wait_for_an_unreachable_session_is_said_once() {
    let mut rig = rig("opencode:x", Some(AgentState::Idle), Reached::Accepted);
    rig.world.later.insert("opencode:x".into());
    rig.write(NAME, &plan(2));
    let down = "the opencode server at http://127.0.0.1:4096 does not answer (connection refused)";
    for _ in 0..3 {
        rig.advance(Duration::from_secs(1));
        rig.feed(Input::Observed(Observation::new(
            "opencode:x".into(),
            Seen::Unreachable(down.into()),
            Observer::Events,
        )));
    }
    let said: Vec<_> = rig
        .world
        .logs
        .iter()
        .filter(|l| l.message.contains("cannot be reached"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", rig.world.logs);
    assert_eq!(said[0].level, Some(Level::Info));
    assert!(said[0].message.contains(down), "{}", said[0].message);
    assert!(
        said[0].message.contains("2 prompt(s) wait"),
        "{}",
        said[0].message
    );
}
