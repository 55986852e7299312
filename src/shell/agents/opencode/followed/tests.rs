//! The followed sessions' rules, each shown on a `Followed` fed as the
//! follower and the courier feed it.

use super::*;
use crate::core::session::AgentState;

fn followed() -> (Followed, tokio::sync::mpsc::UnboundedReceiver<Input>) {
    let (tx, rx) = Reports::channel();
    let mut f = Followed::new(tx);
    f.learn("ses_a");
    (f, rx)
}

/// What was reported, each look's stamp left out.
fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Input>) -> Vec<Input> {
    std::iter::from_fn(|| rx.try_recv().ok())
        .map(|mut i| {
            if let Input::Observed(look) = &mut i {
                look.at = std::time::Duration::ZERO;
            }
            i
        })
        .collect()
}

fn state(s: Option<AgentState>) -> Input {
    Presence::State(s).input("opencode:ses_a")
}

fn busy(s: &str) -> Option<AgentState> {
    Some(AgentState::Busy(s.into()))
}

#[test]
fn every_state_is_reported_with_the_running_tool() {
    let (mut f, mut rx) = followed();
    f.state("ses_a", Some(AgentState::Idle));
    f.state("ses_a", Some(AgentState::Idle));
    f.state("ses_a", busy("busy"));
    f.tool("ses_a", Some("bash".into()));
    f.state("ses_a", busy("busy"));
    f.tool("ses_a", None);
    f.state("ses_a", Some(AgentState::Idle));
    f.server_gone("down");
    f.state("ses_other", busy("busy"));
    assert_eq!(
        drain(&mut rx),
        vec![
            state(Some(AgentState::Idle)),
            state(Some(AgentState::Idle)),
            state(busy("busy")),
            state(busy("calling: bash")),
            state(busy("calling: bash")),
            state(busy("busy")),
            state(Some(AgentState::Idle)),
            Presence::Unreachable("down".into()).input("opencode:ses_a"),
        ]
    );
    // Found gone once the server is back: news.
    f.state("ses_a", None);
    assert_eq!(drain(&mut rx), vec![state(None)]);
}

#[test]
fn a_posted_prompt_holds_the_next_while_its_turn_runs_and_starts_once() {
    let (mut f, mut rx) = followed();
    f.state("ses_a", Some(AgentState::Idle));
    f.posted("ses_a", 4, "msg_x");
    assert_eq!(f.guard("ses_a", 4), Guard::Taken);
    // Unanswered, it holds nothing: the engine settles it first.
    assert_eq!(f.guard("ses_a", 5), Guard::Free);
    // An idle seen before its turn starts is told (the session is idle),
    // and forgets nothing of it.
    f.state("ses_a", Some(AgentState::Idle));
    f.state("ses_a", busy("busy"));
    f.answer("ses_a", "msg_other");
    f.answer("ses_a", "msg_x");
    f.answer("ses_a", "msg_x");
    assert_eq!(f.guard("ses_a", 5), Guard::Running(4), "its turn runs");
    let delivered = Input::Delivered {
        session: "opencode:ses_a".into(),
        seq: 4,
        reached: crate::core::input::Reached::Accepted,
    };
    f.outcome("ses_a", delivered.clone());
    f.state("ses_a", Some(AgentState::Idle));
    assert_eq!(f.guard("ses_a", 5), Guard::Free);
    assert_eq!(f.guard("ses_a", 4), Guard::Taken, "delivered in this run");
    assert_eq!(
        drain(&mut rx),
        vec![
            state(Some(AgentState::Idle)),
            state(Some(AgentState::Idle)),
            state(busy("busy")),
            delivered,
            Input::TurnStarted {
                session: "opencode:ses_a".into(),
                seq: 4
            },
            state(Some(AgentState::Idle)),
        ]
    );
}

#[test]
fn a_prompt_posted_and_not_yet_answered_outlives_an_idle_but_not_the_session() {
    let (mut f, _rx) = followed();
    f.posted("ses_a", 4, "msg_x");
    f.state("ses_a", Some(AgentState::Idle));
    assert!(f.unstarted("ses_a").is_some(), "its answer may still come");
    f.state("ses_a", None);
    assert!(f.unstarted("ses_a").is_none(), "gone with the session");
}

#[test]
fn a_polled_state_older_than_the_streams_word_is_not_applied() {
    let (mut f, mut rx) = followed();
    f.streamed("ses_a", busy("busy"));
    let before = f.mark("ses_a");
    // The turn ends while the poll is under way; its stale "busy"
    // comes back after the stream's idle.
    f.streamed("ses_a", Some(AgentState::Idle));
    assert_eq!(
        f.polled("ses_a", busy("busy"), before),
        Some(AgentState::Idle)
    );
    let before = f.mark("ses_a");
    assert_eq!(f.polled("ses_a", busy("busy"), before), busy("busy"));
    assert_eq!(
        drain(&mut rx),
        vec![
            state(busy("busy")),
            state(Some(AgentState::Idle)),
            state(busy("busy"))
        ]
    );
}

#[test]
fn a_child_is_reported_and_found_by_the_engines_name() {
    let (mut f, mut rx) = followed();
    let name = "opencode:ses_a.s2-0123456789ab";
    f.learn("ses_c");
    f.call("ses_c", name);
    assert_eq!(f.find(name).as_deref(), Some("ses_c"));
    assert_eq!(f.find("opencode:ses_c"), None);
    f.state("ses_c", Some(AgentState::Idle));
    f.turn_started("ses_c", 3);
    let child = |state| Presence::State(state).input(name);
    assert_eq!(
        drain(&mut rx),
        vec![
            child(Some(AgentState::Idle)),
            Input::TurnStarted {
                session: name.into(),
                seq: 3
            }
        ]
    );
}

#[test]
fn a_transcript_read_before_the_first_delivery_serves_its_look_once() {
    let (mut f, _rx) = followed();
    let m = MessageInfo {
        id: "msg_1".into(),
        role: "user".into(),
        parent: None,
    };
    assert!(f.must_look("ses_a"));
    f.keep_snapshot("ses_a", vec![m.clone()]);
    assert_eq!(f.take_snapshot("ses_a"), Some(vec![m]));
    assert_eq!(f.take_snapshot("ses_a"), None, "once");
    f.looked("ses_a");
    assert!(
        !f.must_look("ses_a"),
        "only the first delivery of a run looks"
    );
    f.keep_snapshot("ses_a", vec![]);
    assert_eq!(f.take_snapshot("ses_a"), None, "not after a look");
}

#[test]
fn a_request_pending_is_a_wait_until_it_is_answered_and_a_stale_list_is_not_applied() {
    use crate::core::session::Wait;
    let (mut f, mut rx) = followed();
    f.state("ses_a", busy("busy"));
    f.request("ses_a", "per_1", Some(Wait::approval("sed -i x f")));
    f.tool("ses_a", Some("bash".into()));
    f.request("ses_a", "per_1", None);
    let waiting = Some(AgentState::Waiting(Wait::approval("sed -i x f")));
    assert_eq!(
        drain(&mut rx),
        vec![
            state(busy("busy")),
            state(waiting.clone()),
            // The tool's start is one more look, the wait over it.
            state(waiting.clone()),
            state(busy("busy"))
        ]
    );
    // A list read before the stream said more is stale: not applied.
    let before = f.mark("ses_a");
    f.request("ses_a", "per_2", Some(Wait::approval("rm f")));
    f.request("ses_a", "per_2", None);
    drain(&mut rx);
    f.pending(
        "ses_a",
        vec![("per_2".into(), Wait::approval("rm f"))],
        before,
    );
    assert_eq!(drain(&mut rx), vec![]);
    // One read now is: pending at connect, the session waits.
    let now = f.mark("ses_a");
    f.pending(
        "ses_a",
        vec![("per_3".into(), Wait::question("Which?"))],
        now,
    );
    let asked = Some(AgentState::Waiting(Wait::question("Which?")));
    assert_eq!(drain(&mut rx), vec![state(asked)]);
    // The turn ends (a rejection ends it): nothing pending any more.
    f.state("ses_a", Some(AgentState::Idle));
    assert_eq!(drain(&mut rx), vec![state(Some(AgentState::Idle))]);
}

#[test]
fn a_session_a_failed_call_found_unreachable_is_read_again_at_each_heartbeat() {
    let (mut f, mut rx) = followed();
    f.state("ses_a", Some(AgentState::Idle));
    f.unreachable(
        "ses_a",
        "the opencode server at http://10.0.0.5:4096 does not answer",
    );
    assert_eq!(f.awaiting_idle(), ["ses_a"]);
    f.state("ses_a", Some(AgentState::Idle));
    assert!(f.awaiting_idle().is_empty());
    assert_eq!(drain(&mut rx).len(), 3, "idle, unreachable, idle again");
}

fn delivered(seq: u64) -> Input {
    Input::Delivered {
        session: "opencode:ses_a".into(),
        seq,
        reached: crate::core::input::Reached::Accepted,
    }
}

fn sent(seq: u64) -> Input {
    Input::Evidence {
        session: "opencode:ses_a".into(),
        seq,
        evidence: crate::core::input::Evidence::Sent,
    }
}

fn started(seq: u64) -> Input {
    Input::TurnStarted {
        session: "opencode:ses_a".into(),
        seq,
    }
}

#[test]
fn a_sent_prompt_is_delivered_by_its_answer_whichever_comes_first() {
    // The answer after the report: it tells the engine at once.
    let (mut f, mut rx) = followed();
    f.posted("ses_a", 4, "msg_x");
    f.sent("ses_a", 4, sent(4));
    f.answer("ses_a", "msg_x");
    assert_eq!(drain(&mut rx), vec![sent(4), delivered(4), started(4)]);
    // Found answered by a look afterwards: nothing more.
    f.taken_as_found("ses_a", 4);
    assert_eq!(drain(&mut rx), vec![]);
    // The answer seen before the report: told right after it.
    let (mut f, mut rx) = followed();
    f.posted("ses_a", 4, "msg_x");
    f.answer("ses_a", "msg_x");
    f.sent("ses_a", 4, sent(4));
    assert_eq!(drain(&mut rx), vec![sent(4), delivered(4), started(4)]);
}

#[test]
fn a_sent_prompt_found_answered_after_its_turn_ended_is_delivered_and_started() {
    let (mut f, mut rx) = followed();
    f.posted("ses_a", 4, "msg_x");
    f.sent("ses_a", 4, sent(4));
    f.state("ses_a", busy("busy"));
    f.state("ses_a", Some(AgentState::Idle));
    drain(&mut rx);
    f.taken_as_found("ses_a", 4);
    assert_eq!(drain(&mut rx), vec![delivered(4), started(4)]);
    assert_eq!(f.guard("ses_a", 4), Guard::Taken);
}

#[test]
fn a_sent_prompt_found_not_taken_is_posted_again() {
    let (mut f, mut rx) = followed();
    f.posted("ses_a", 4, "msg_x");
    f.sent("ses_a", 4, sent(4));
    assert_eq!(
        f.guard("ses_a", 4),
        Guard::Taken,
        "not posted twice while looked for"
    );
    f.not_taken("ses_a", 4);
    assert_eq!(f.guard("ses_a", 4), Guard::Free, "the retry posts it again");
    assert_eq!(f.guard("ses_a", 5), Guard::Free);
    assert_eq!(drain(&mut rx), vec![sent(4)]);
}
