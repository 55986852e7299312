//! Waiting for a person (SPEC §12): a session whose turn stopped for its
//! user is warned of in the journal and told to the person once per wait,
//! told again when the wait ends, and gets no reminder meanwhile.

use super::*;
use crate::core::effect::{Level, NoticeEvent};
use crate::core::session::Wait;

fn waiting(what: &str) -> Option<AgentState> {
    Some(AgentState::Waiting(Wait::approval(what)))
}

#[test]
fn a_wait_for_a_person_is_warned_told_once_resolved_and_never_reminded() {
    let mut rig = reminding(3);
    rig.write(NAME, &stock(&[false, false]));
    assert_eq!(rig.take_delivered(), vec!["s1"]);
    rig.state(Some(AgentState::Busy("thinking".into())));
    rig.state(waiting(""));
    // Said more precisely (Codex names the command after its flag): the
    // same wait, told once.
    rig.state(waiting("sed -i s/a/b/ plan.md"));
    let warned: Vec<&Log> = rig
        .world
        .logs
        .iter()
        .filter(|l| l.waiting.is_some() && l.level() == Level::Warn)
        .collect();
    assert_eq!(warned.len(), 1, "{:#?}", rig.world.logs);
    let w = warned[0];
    assert_eq!(
        (w.session.as_deref(), w.step.as_deref(), w.waiting),
        (Some("s1"), Some("s1"), Some("approval"))
    );
    assert!(w.plan.is_some());
    assert_eq!(rig.world.notices.len(), 1);
    let n = &rig.world.notices[0];
    assert_eq!(n.event, NoticeEvent::Waiting);
    assert_eq!((n.session.as_str(), n.step.as_deref()), ("s1", Some("s1")));
    assert!(n.plan.is_some());
    // Told once named: the person reads the command.
    assert!(n.body.contains("sed -i s/a/b/ plan.md"), "{n:?}");
    assert!(w.message.contains("sed -i s/a/b/ plan.md"), "{w:?}");
    // However long it waits: no reminder.
    rig.run_until(rig.now + 100 * AFTER);
    assert!(rig.reminders().is_empty(), "reminded while waiting");
    // Approved: the turn goes on, and the person is told it is resolved.
    rig.state(Some(AgentState::Busy("calling: bash".into())));
    let events: Vec<_> = rig.world.notices.iter().map(|n| n.event).collect();
    assert_eq!(events, vec![NoticeEvent::Waiting, NoticeEvent::Resolved]);
    let resolved = &rig.world.notices[1];
    assert!(resolved.summary.contains("no longer waits"), "{resolved:?}");
    // A second wait in the same turn is a wait of its own; a session gone
    // while it waits resolves it too.
    rig.state(waiting("rm f"));
    rig.state(None);
    let events: Vec<_> = rig.world.notices.iter().map(|n| n.event).collect();
    assert_eq!(events.len(), 4);
    assert_eq!(events[2..], [NoticeEvent::Waiting, NoticeEvent::Resolved]);
    // Idle again, with its step open: reminded as ever.
    rig.state(Some(AgentState::Idle));
    rig.run_until(rig.now + AFTER);
    assert_eq!(rig.reminders(), vec![("s1".to_string(), 1)]);
}

#[test]
fn a_wait_never_named_is_told_as_it_is_and_one_over_before_it_was_told_is_not_told() {
    use crate::core::engine::waiting::NAMING;
    let mut rig = reminding(3);
    rig.write(NAME, &stock(&[false, false]));
    rig.state(Some(AgentState::Busy("thinking".into())));
    rig.state(waiting(""));
    let seen = rig.now;
    rig.run_until(seen + NAMING - Duration::from_millis(1));
    assert!(
        rig.world.notices.is_empty(),
        "told before its name could come"
    );
    rig.run_until(seen + NAMING);
    let events: Vec<_> = rig.world.notices.iter().map(|n| n.event).collect();
    assert_eq!(events, vec![NoticeEvent::Waiting]);
    // Named after it was told: not told again.
    rig.state(waiting("rm -rf build"));
    rig.state(Some(AgentState::Busy("calling: bash".into())));
    let events: Vec<_> = rig.world.notices.iter().map(|n| n.event).collect();
    assert_eq!(events, vec![NoticeEvent::Waiting, NoticeEvent::Resolved]);
    // A nameless wait over before it was told: the person hears of
    // neither its start nor its end, and no timer tells it later.
    rig.state(waiting(""));
    rig.state(Some(AgentState::Busy("calling: bash".into())));
    rig.run_until(rig.now + 10 * NAMING);
    assert_eq!(rig.world.notices.len(), 2, "{:#?}", rig.world.notices);
}

#[test]
fn a_step_still_open_after_its_last_reminder_is_given_up_on_once() {
    let mut rig = reminding(1);
    rig.write(NAME, &stock(&[false, false]));
    rig.turn(Duration::from_secs(1));
    rig.run_until(rig.now + AFTER);
    assert_eq!(rig.reminders(), vec![("s1".to_string(), 1)]);
    rig.turn(Duration::from_secs(1));
    let idle = rig.now;
    // Given up after the interval a second reminder would have had.
    rig.run_until(idle + 2 * AFTER - Duration::from_millis(1));
    assert!(rig.world.notices.is_empty(), "too early");
    rig.run_until(idle + 2 * AFTER);
    let events: Vec<_> = rig.world.notices.iter().map(|n| n.event).collect();
    assert_eq!(events, vec![NoticeEvent::GaveUp]);
    let n = &rig.world.notices[0];
    assert_eq!((n.session.as_str(), n.step.as_deref()), ("s1", Some("s1")));
    let warned = rig
        .world
        .logs
        .iter()
        .filter(|l| l.message.starts_with("gave up on s1"));
    assert_eq!(warned.count(), 1);
    // Told once, however long it stays open; no reminder beyond the cap.
    rig.turn(Duration::from_secs(1));
    rig.run_until(rig.now + 100 * AFTER);
    assert_eq!(rig.world.notices.len(), 1);
    assert_eq!(rig.reminders().len(), 1);
}

#[test]
fn a_session_busy_past_stuck_after_with_nothing_checked_is_told_once_per_stretch() {
    const STUCK: Duration = Duration::from_secs(30);
    let mut rig = reminding(3);
    let mut config = rig.engine.config().clone();
    config.stuck_after = Some(STUCK);
    rig.engine.reconfigure(config);
    rig.write(NAME, &stock(&[false, false, false]));
    rig.state(Some(AgentState::Busy("thinking".into())));
    let busy = rig.now;
    rig.run_until(busy + STUCK - Duration::from_millis(1));
    assert!(rig.world.notices.is_empty(), "too early");
    rig.run_until(busy + 10 * STUCK);
    let stuck: Vec<_> = rig.world.notices.iter().map(|n| n.event).collect();
    assert_eq!(stuck, vec![NoticeEvent::Stuck], "once per stretch");
    assert_eq!(rig.world.notices[0].step.as_deref(), Some("s1"));
    // A step checked starts the clock again, and the stretch may be told
    // anew; a wait for a person or idle ends it.
    rig.write(NAME, &stock(&[true, false, false]));
    let ticked = rig.now;
    rig.run_until(ticked + STUCK - Duration::from_millis(1));
    assert_eq!(rig.world.notices.len(), 1);
    rig.run_until(ticked + STUCK);
    assert_eq!(rig.world.notices.len(), 2);
    rig.state(Some(AgentState::Idle));
    rig.state(Some(AgentState::Busy("thinking".into())));
    rig.state(waiting("ls"));
    rig.run_until(rig.now + 10 * STUCK);
    let events: Vec<_> = rig.world.notices.iter().map(|n| n.event).collect();
    assert_eq!(events[2..], [NoticeEvent::Waiting]);
}

#[test]
fn a_step_given_up_on_is_not_told_again_after_a_restart_until_progress() {
    let mut rig = reminding(1);
    rig.write(NAME, &stock(&[false, false]));
    rig.turn(Duration::from_secs(1));
    rig.run_until(rig.now + AFTER);
    rig.turn(Duration::from_secs(1));
    rig.run_until(rig.now + 2 * AFTER);
    let events: Vec<_> = rig.world.notices.iter().map(|n| n.event).collect();
    assert_eq!(events, vec![NoticeEvent::GaveUp]);
    // kill -9: what the journal held says it was told.
    let mut again = rig.restarted();
    again.now = Duration::from_secs(1000);
    again.state(Some(AgentState::Idle));
    again.run_until(again.now + 100 * AFTER);
    assert!(
        again.world.notices.is_empty(),
        "told again after a restart: {:#?}",
        again.world.notices
    );
    // Progress in the plan (the reset its checked step records) lets it
    // be told again, as it resets the reminder count.
    let plan = again
        .engine
        .memory()
        .announced()
        .next()
        .map(|(s, _)| s.clone());
    let reset = Record::RemindReset {
        source: plan.expect("the plan is announced"),
        session: "s1".into(),
    };
    let mut memory = again.engine.memory().clone();
    memory.apply(&reset);
    let told = memory
        .work_of("s1")
        .filter(|(_, _, a)| a.gave_up || a.reminded > 0)
        .count();
    assert_eq!(told, 0, "progress resets what was given up on");
}
