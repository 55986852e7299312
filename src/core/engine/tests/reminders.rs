//! Reminders: an idle session with announced work still open is told
//! again, after doubling intervals, at most `remind_max` times; never for a
//! checked step, an ended plan or a busy session.

use super::*;
use crate::core::session::AgentState;

const AFTER: Duration = Duration::from_secs(10);

/// A started rig whose session `s1` is observed idle, reminders on.
fn reminding(max: u32) -> Rig {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    config.remind_after = Some(AFTER);
    config.remind_max = max;
    let memory = Memory::started();
    let mut rig = Rig::new(config, Some(memory));
    rig.world.readers.insert("s1".into(), true);
    rig.startup();
    rig.state(Some(AgentState::Idle));
    rig
}

impl Rig {
    fn state(&mut self, state: Option<AgentState>) {
        self.feed(Input::Observed(Observation::state(
            "s1".into(),
            state,
            Observer::Index,
            "gone",
        )));
    }

    /// A turn: busy now, idle `len` later.
    fn turn(&mut self, len: Duration) {
        self.state(Some(AgentState::Busy("thinking".into())));
        self.advance(len);
        self.state(Some(AgentState::Idle));
    }

    /// Advance to `at` through every timer on the way, as the daemon's
    /// deadline does.
    fn run_until(&mut self, at: Duration) {
        while let Some(next) = self.engine.poll_timeout().filter(|&t| t <= at) {
            self.now = self.now.max(next);
            self.feed(Input::Tick);
        }
        self.now = at;
        self.feed(Input::Tick);
    }

    /// The reminders recorded so far: (step label, n).
    fn reminders(&self) -> Vec<(String, u32)> {
        self.world
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Remind { pending, n, .. } => Some((pending.step.clone(), *n)),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn an_idle_session_is_reminded_after_doubling_intervals_up_to_the_cap() {
    let mut rig = reminding(3);
    rig.write(NAME, &stock(&[false, false]));
    assert_eq!(rig.take_delivered(), vec!["s1"]);
    // The agent takes the prompt, works a second and stops without ticking.
    rig.turn(Duration::from_secs(1));
    let idle = rig.now;
    rig.run_until(idle + AFTER - Duration::from_millis(1));
    assert!(rig.reminders().is_empty(), "too early");
    rig.run_until(idle + AFTER);
    assert_eq!(rig.reminders(), vec![("s1".to_string(), 1)]);
    let (_, _, text) = rig.world.delivered.last().unwrap().clone();
    assert!(text.contains("Reminder 1 of 3"), "{text}");
    let call = format!("change `- [ ] Step 1` to `- [x] Step 1` in {PLAN_DIR}/{NAME}");
    assert!(text.contains(&call), "{text}");
    assert!(text.contains("announced to you 11s ago"), "{text}");
    let log = rig
        .world
        .logs
        .iter()
        .find(|l| l.reminder == Some(1))
        .unwrap();
    assert_eq!(log.step.as_deref(), Some("s1"));
    // The reminder starts a turn; the second comes 2×AFTER after it ends.
    rig.turn(Duration::from_secs(1));
    let idle = rig.now;
    rig.run_until(idle + 2 * AFTER - Duration::from_millis(1));
    assert_eq!(rig.reminders().len(), 1);
    rig.run_until(idle + 2 * AFTER);
    assert_eq!(rig.reminders().last(), Some(&("s1".to_string(), 2)));
    rig.turn(Duration::from_secs(1));
    let idle = rig.now;
    rig.run_until(idle + 4 * AFTER);
    assert_eq!(rig.reminders().last(), Some(&("s1".to_string(), 3)));
    rig.turn(Duration::from_secs(1));
    rig.run_until(rig.now + 100 * AFTER);
    assert_eq!(rig.reminders().len(), 3, "never beyond remind_max");
}

#[test]
fn a_step_ticked_in_time_gets_no_reminder_and_progress_restarts_the_count() {
    let mut rig = reminding(2);
    rig.write(NAME, &stock(&[false, false, false]));
    rig.turn(Duration::from_secs(1));
    rig.run_until(rig.now + AFTER);
    assert_eq!(rig.reminders(), vec![("s1".to_string(), 1)]);
    // Reminded, the agent ticks s1: s2 is announced, with a fresh count.
    rig.state(Some(AgentState::Busy("calling: task_complete".into())));
    rig.write(NAME, &stock(&[true, false, false]));
    rig.advance(Duration::from_secs(1));
    rig.state(Some(AgentState::Idle));
    rig.run_until(rig.now + AFTER);
    assert_eq!(rig.reminders().last(), Some(&("s2".to_string(), 1)));
    // Ticked within the interval: nothing more for s2.
    rig.state(Some(AgentState::Busy("thinking".into())));
    rig.write(NAME, &stock(&[true, true, false]));
    rig.state(Some(AgentState::Idle));
    rig.write(NAME, &stock(&[true, true, true]));
    rig.run_until(rig.now + 100 * AFTER);
    let s2_s3: Vec<_> = rig
        .reminders()
        .into_iter()
        .filter(|(s, _)| s != "s1")
        .collect();
    assert_eq!(s2_s3, vec![("s2".to_string(), 1)]);
}

#[test]
fn a_busy_or_unobserved_session_and_an_ended_plan_get_no_reminder() {
    let mut rig = reminding(3);
    rig.write(NAME, &stock(&[false, false]));
    rig.state(Some(AgentState::Busy("thinking".into())));
    rig.run_until(rig.now + 100 * AFTER);
    assert!(rig.reminders().is_empty(), "busy");
    rig.state(None);
    rig.run_until(rig.now + 100 * AFTER);
    assert!(rig.reminders().is_empty(), "not observed");
    rig.state(Some(AgentState::Idle));
    rig.rename(NAME, DONE);
    rig.run_until(rig.now + 100 * AFTER);
    assert!(rig.reminders().is_empty(), "done plan");
}

#[test]
fn zero_disables_reminders() {
    let mut rig = reminding(3);
    let mut config = rig.engine.config().clone();
    config.remind_after = None;
    rig.engine.reconfigure(config);
    rig.write(NAME, &stock(&[false]));
    rig.turn(Duration::from_secs(1));
    rig.run_until(rig.now + 100 * AFTER);
    assert!(rig.reminders().is_empty());
}

#[test]
fn a_restart_keeps_the_count_and_restarts_the_idle_clock() {
    let mut rig = reminding(3);
    rig.write(NAME, &stock(&[false, false]));
    rig.turn(Duration::from_secs(1));
    rig.run_until(rig.now + AFTER);
    rig.turn(Duration::from_secs(1));
    assert_eq!(rig.reminders().len(), 1);
    // kill -9: memory is what the journal held.
    let mut again = rig.restarted();
    again.now = Duration::from_secs(1000);
    again.state(Some(AgentState::Idle));
    let seen = again.now;
    again.run_until(seen + 2 * AFTER - Duration::from_millis(1));
    assert!(again.reminders().is_empty(), "no repeat of reminder 1");
    again.run_until(seen + 2 * AFTER);
    assert_eq!(again.reminders(), vec![("s1".to_string(), 2)]);
}

#[test]
fn a_reminder_recorded_but_not_written_goes_out_after_a_restart_once() {
    let mut rig = reminding(3);
    rig.write(NAME, &stock(&[false, false]));
    rig.turn(Duration::from_secs(1));
    rig.world.readers.insert("s1".into(), false);
    rig.run_until(rig.now + AFTER);
    assert_eq!(rig.reminders().len(), 1);
    assert_eq!(rig.engine.memory().pending_total(), 1);
    let mut again = rig.restarted();
    assert_eq!(again.take_delivered(), vec!["s1"]);
    assert!(again.reminders().is_empty(), "not recorded again");
}

#[test]
fn a_reminder_not_yet_written_is_withdrawn_when_its_step_is_checked() {
    let mut rig = reminding(3);
    rig.write(NAME, &stock(&[false, false]));
    rig.turn(Duration::from_secs(1));
    rig.world.readers.insert("s1".into(), false);
    rig.run_until(rig.now + AFTER);
    rig.write(NAME, &stock(&[true, false]));
    let outbox = &rig.engine.memory().outbox.get("s1").unwrap();
    assert!(outbox.iter().all(|p| p.step != "s1"), "{outbox:?}");
}

#[test]
fn status_shows_reminders_sent_and_the_next_due() {
    let mut rig = reminding(3);
    rig.write(NAME, &stock(&[false, false]));
    rig.turn(Duration::from_secs(1));
    let idle = rig.now;
    let views = rig.engine.reminders();
    assert_eq!(views.len(), 1);
    assert_eq!((views[0].id.as_str(), views[0].sent), ("s1", 0));
    assert_eq!(views[0].next_at, Some(idle + AFTER));
    rig.run_until(idle + AFTER);
    rig.turn(Duration::from_secs(1));
    let views = rig.engine.reminders();
    assert_eq!(views[0].sent, 1);
    assert_eq!(views[0].next_at, Some(rig.now + 2 * AFTER));
}

/// What the property test does to the session and its plan.
#[derive(Debug, Clone)]
enum Act {
    Wait(u64),
    Turn(u64),
    Busy,
    Idle,
    Gone,
    Tick,
    Finish,
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        4 => (1u64..60_000).prop_map(Act::Wait),
        2 => (1u64..5_000).prop_map(Act::Turn),
        1 => Just(Act::Busy),
        1 => Just(Act::Idle),
        1 => Just(Act::Gone),
        2 => Just(Act::Tick),
        1 => Just(Act::Finish),
    ]
}

/// What the property test believes of the session and its plan, and the
/// reminders it has seen, each checked against the rule as it is recorded.
struct Model {
    max: u32,
    checked: Vec<bool>,
    name: &'static str,
    busy: bool,
    observed: bool,
    /// Per step: when its reminders were recorded, and how many since the
    /// last progress.
    sent: BTreeMap<String, (Vec<Duration>, u32)>,
    /// Records already judged.
    seen: usize,
}

impl Model {
    /// Judge every record written since the last look.
    fn check(&mut self, rig: &Rig) -> Result<(), TestCaseError> {
        let records = &rig.world.records[self.seen..];
        let times = &rig.world.recorded_at[self.seen..];
        self.seen = rig.world.records.len();
        for (r, &at) in records.iter().zip(times) {
            let Record::Remind { pending, n, .. } = r else {
                continue;
            };
            let step = pending.step.clone();
            let i: usize = step[1..].parse().unwrap();
            prop_assert!(!self.checked[i - 1], "reminded of checked {}", step);
            prop_assert!(self.name != DONE, "reminded in a done plan");
            prop_assert!(
                self.observed && !self.busy,
                "reminded a busy or unobserved session"
            );
            let entry = self.sent.entry(step).or_default();
            entry.1 += 1;
            prop_assert_eq!(*n, entry.1);
            prop_assert!(*n <= self.max, "beyond remind_max");
            // Intervals never shrink: reminder k+1 comes at least
            // AFTER·2^k after reminder k.
            if let (Some(&last), true) = (entry.0.last(), *n > 1) {
                prop_assert!(at >= last + AFTER * (1 << (*n - 1)));
            }
            entry.0.push(at);
        }
        Ok(())
    }

    fn set(&mut self, rig: &mut Rig, state: Option<AgentState>) -> Result<(), TestCaseError> {
        self.observed = state.is_some();
        self.busy = state.as_ref().is_some_and(|s| !s.is_idle());
        rig.state(state);
        self.check(rig)
    }
}

proptest! {
    #[test]
    fn reminders_respect_the_rule(max in 0u32..4, acts in proptest::collection::vec(act(), 1..40)) {
        let mut rig = reminding(max);
        let mut m = Model {
            max,
            checked: vec![false; 4],
            name: NAME,
            busy: false,
            observed: true,
            sent: BTreeMap::new(),
            seen: 0,
        };
        rig.write(NAME, &stock(&m.checked));
        m.check(&rig)?;
        let busy = || Some(AgentState::Busy("thinking".into()));
        for a in acts {
            match a {
                Act::Wait(ms) => rig.run_until(rig.now + Duration::from_millis(ms)),
                Act::Turn(ms) => {
                    m.set(&mut rig, busy())?;
                    rig.run_until(rig.now + Duration::from_millis(ms));
                    m.check(&rig)?;
                    m.set(&mut rig, Some(AgentState::Idle))?;
                }
                Act::Busy => m.set(&mut rig, busy())?,
                Act::Idle => m.set(&mut rig, Some(AgentState::Idle))?,
                Act::Gone => m.set(&mut rig, None)?,
                Act::Tick => {
                    if let Some(i) = m.checked.iter().position(|c| !c) {
                        m.checked[i] = true;
                        rig.write(m.name, &stock(&m.checked));
                        // Progress: every count in this plan starts again.
                        for (_, n) in m.sent.values_mut() {
                            *n = 0;
                        }
                    }
                }
                Act::Finish => {
                    if m.name != DONE {
                        rig.rename(m.name, DONE);
                        m.name = DONE;
                    }
                }
            }
            m.check(&rig)?;
        }
    }
}

#[test]
fn a_task_is_reminded_while_ready_unless_claimed_for_another_session() {
    let mut rig = tracker_rig(false);
    let mut config = rig.engine.config().clone();
    config.remind_after = Some(AFTER);
    rig.engine.reconfigure(config);
    rig.startup();
    set_ready(
        &mut rig,
        &[
            ("bd-1", "-", "Fix the build"),
            ("bd-2", "agent-1", "Write docs"),
        ],
    );
    events(
        &mut rig,
        &[r#"{"type":"updated","id":"bd-1","mount":"proj"}"#],
    );
    // bd-1 is claimed for a session reveille does not route to; bd-2 by
    // the assignee of a1, its own session.
    set_ready(
        &mut rig,
        &[
            ("bd-1", "agent-9", "Fix the build"),
            ("bd-2", "agent-1", "Write docs"),
        ],
    );
    events(
        &mut rig,
        &[r#"{"type":"updated","id":"bd-2","mount":"proj"}"#],
    );
    for session in ["s1", "a1"] {
        rig.feed(Input::Observed(Observation::state(
            session.into(),
            Some(AgentState::Idle),
            Observer::Index,
            "gone",
        )));
    }
    rig.run_until(rig.now + AFTER);
    assert_eq!(rig.reminders(), vec![("bd-2".to_string(), 1)]);
    let text = &rig.world.delivered.last().unwrap().2;
    assert!(
        text.contains("Write docs") && text.contains("echo bd-2 > /beads/proj/complete"),
        "{text}"
    );
}

#[test]
fn a_step_checked_restarts_the_count_and_the_clock_of_the_others() {
    let mut rig = reminding(3);
    let plan = "# Ship it\n\n- [x] Root\n- [ ] A (after: 1)\n- [ ] B (after: 1)\n";
    rig.write(NAME, plan);
    assert_eq!(rig.take_delivered(), vec!["s2", "s3"]);
    rig.turn(Duration::from_secs(1));
    let idle = rig.now;
    rig.run_until(idle + AFTER);
    assert_eq!(rig.reminders().len(), 2);
    // A is checked in a turn too short for the state poll to see: the
    // session never looks busy, yet B's count and clock start again.
    rig.run_until(rig.now + Duration::from_secs(4));
    let progress = rig.now;
    rig.write(NAME, &plan.replace("- [ ] A", "- [x] A"));
    rig.run_until(progress + AFTER - Duration::from_millis(1));
    assert_eq!(rig.reminders().len(), 2, "the clock restarted");
    rig.run_until(progress + AFTER);
    assert_eq!(rig.reminders().last(), Some(&("s3".to_string(), 1)));
}

#[test]
fn turning_reminders_on_by_reload_arms_them_for_idle_sessions() {
    let mut rig = reminding(3);
    let mut config = rig.engine.config().clone();
    config.remind_after = None;
    rig.engine.reconfigure(config.clone());
    rig.write(NAME, &stock(&[false]));
    rig.turn(Duration::from_secs(1));
    config.remind_after = Some(AFTER);
    let reload = rig.now;
    rig.engine.reconfigure(config);
    rig.run_until(reload + AFTER);
    assert_eq!(rig.reminders(), vec![("s1".to_string(), 1)]);
}

/// A started tracker rig with reminders on and `idle` observed idle.
fn claim_rig(idle: &[&str]) -> Rig {
    let mut rig = tracker_rig(false);
    let mut config = rig.engine.config().clone();
    config.remind_after = Some(AFTER);
    rig.engine.reconfigure(config);
    rig.startup();
    for session in idle {
        rig.feed(Input::Observed(Observation::state(
            session.to_string(),
            Some(AgentState::Idle),
            Observer::Index,
            "gone",
        )));
    }
    rig
}

/// Bead `id` claimed by agent-1 (session a1): out of the ready set, and
/// the older `BeadClaimed` event, which names the assignee.
fn claim_by_agent_1(rig: &mut Rig, id: &str) {
    set_ready(rig, &[]);
    let claim = format!(
        r#"{{"id":"u-1","ts":1708598530,"source":"beads/proj","type":"BeadClaimed","data":{{"bead_id":"{id}","assignee":"agent-1","mount":"proj"}}}}"#
    );
    events(rig, &[&claim]);
}

#[test]
fn a_claimed_bead_is_reminded_to_its_claimer_until_it_is_completed() {
    let mut rig = claim_rig(&["s1", "a1"]);
    set_ready(&mut rig, &[("bd-1", "-", "Fix the build")]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-1","mount":"proj"}"#],
    );
    // Claimed by agent-1 (a1): it leaves the ready set. a1 is told of the
    // claim, and the claimed task is a1's open work; the claim note and
    // who holds it are notes, never reminded of.
    claim_by_agent_1(&mut rig, "bd-1");
    let notes = rig
        .engine
        .memory()
        .tasks
        .get(&src("mount:proj"))
        .unwrap()
        .clone();
    assert!(
        notes
            .keys()
            .all(|i| !matches!(i, Item::Work(Work::Task(_)))),
        "{notes:?}"
    );
    assert!(
        notes
            .keys()
            .any(|i| matches!(i, Item::Note(Note::Claim(..)))),
        "{notes:?}"
    );
    assert_eq!(
        notes[&Work::Claimed("bd-1".into()).into()]
            .session
            .as_deref(),
        Some("a1"),
        "{notes:?}"
    );
    rig.run_until(rig.now + AFTER + Duration::from_millis(10));
    assert_eq!(rig.reminders(), vec![("bd-1".to_string(), 1)]);
    let (session, _, text) = rig.world.delivered.last().unwrap().clone();
    assert_eq!(session, "a1");
    assert!(text.contains("echo bd-1 > /beads/proj/complete"), "{text}");
    // Completed: no longer anyone's open work, and no more reminders.
    events(
        &mut rig,
        &[r#"{"type":"completed","id":"bd-1","mount":"proj"}"#],
    );
    assert!(!rig
        .engine
        .memory()
        .is_announced(&src("mount:proj"), &Work::Claimed("bd-1".into()).into()));
    rig.run_until(rig.now + 100 * AFTER);
    assert_eq!(rig.reminders(), vec![("bd-1".to_string(), 1)]);
}

/// The engine keeps the titles of ready and announced steps only (not of
/// every unchecked step): an announced step whose dependency was unchecked
/// again is no longer ready, and is still named by its reminder.
#[test]
fn an_announced_step_no_longer_ready_is_still_named_by_its_reminder() {
    let mut rig = reminding(3);
    rig.write(NAME, &stock(&[false, false]));
    rig.write(NAME, &stock(&[true, false]));
    rig.write(NAME, &stock(&[false, false]));
    rig.turn(Duration::from_secs(1));
    rig.run_until(rig.now + AFTER);
    let reminded: Vec<String> = rig.reminders().into_iter().map(|(s, _)| s).collect();
    assert!(reminded.contains(&"s2".to_string()), "{reminded:?}");
    let call = format!("change `- [ ] Step 2` to `- [x] Step 2` in {PLAN_DIR}/{NAME}");
    assert!(
        rig.world
            .delivered
            .iter()
            .any(|(_, _, t)| t.contains(&call)),
        "{:?}",
        rig.world.delivered
    );
}

/// 9beads writes no event for `unclaim`: before reminding a session of a
/// mount's task, the mount is read once more, and a task no longer the
/// session's (back in the ready set, unassigned) is not reminded of — it
/// is announced again to where ready tasks go.
#[test]
fn a_silently_unclaimed_bead_is_not_reminded_of() {
    let mut rig = claim_rig(&["s1", "a1"]);
    set_ready(&mut rig, &[("bd-1", "-", "Fix the build")]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-1","mount":"proj"}"#],
    );
    claim_by_agent_1(&mut rig, "bd-1");
    let heard_by_s1 = |rig: &Rig| {
        let delivered = &rig.world.delivered;
        delivered
            .iter()
            .filter(|(s, _, t)| s == "s1" && t.contains("bd-1"))
            .count()
    };
    assert_eq!(heard_by_s1(&rig), 1);
    // `unclaim bd-1`: back in the ready set, no event.
    set_ready(&mut rig, &[("bd-1", "-", "Fix the build")]);
    rig.run_until(rig.now + AFTER + Duration::from_millis(10));
    assert!(rig.reminders().is_empty(), "{:?}", rig.reminders());
    assert!(!rig
        .engine
        .memory()
        .is_announced(&src("mount:proj"), &Work::Claimed("bd-1".into()).into()));
    assert_eq!(heard_by_s1(&rig), 2, "{:?}", rig.world.delivered);
    // From now on it is s1's open work (reminded of as such), never a1's.
    rig.run_until(rig.now + 100 * AFTER);
    let reminded: Vec<&str> = rig
        .world
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Remind { session, .. } => Some(session.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        !reminded.is_empty() && reminded.iter().all(|s| *s == "s1"),
        "{reminded:?}"
    );
}

/// A claim by an outside actor reaches a session that has idled for
/// longer than the interval: the claimed task's clock starts at the claim's
/// note, so no reminder follows right behind it.
#[test]
fn a_claimed_beads_reminder_counts_from_the_claim_not_from_a_long_idle() {
    let mut rig = claim_rig(&["a1"]);
    rig.run_until(rig.now + 5 * AFTER);
    claim_by_agent_1(&mut rig, "bd-7");
    assert!(rig
        .world
        .delivered
        .iter()
        .any(|(s, _, t)| s == "a1" && t.contains("bd-7")));
    let claimed = rig.now;
    rig.run_until(claimed + AFTER - Duration::from_millis(1));
    assert!(rig.reminders().is_empty(), "{:?}", rig.reminders());
    rig.run_until(claimed + AFTER + Duration::from_millis(10));
    assert_eq!(rig.reminders(), vec![("bd-7".to_string(), 1)]);
}

/// Regression: a claimed task's clock starts when its claim's note is
/// heard. While that note still waits to be written (a1 has no reader),
/// a report of a1's state must not find the claimed task due — it found
/// it due at once (idle since long before the claim), and the reminder
/// reached the agent ahead of the claim itself.
#[test]
fn a_claimed_task_is_not_reminded_of_while_its_claims_note_waits() {
    let mut rig = claim_rig(&["s1", "a1"]);
    rig.world.readers.insert("a1".into(), false);
    rig.advance(AFTER * 3);
    set_ready(&mut rig, &[("bd-1", "-", "Fix the build")]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-1","mount":"proj"}"#],
    );
    claim_by_agent_1(&mut rig, "bd-1");
    rig.feed(Input::Observed(Observation::state(
        "a1".into(),
        Some(AgentState::Idle),
        Observer::Index,
        "gone",
    )));
    rig.advance(Duration::from_millis(1));
    assert!(rig.reminders().is_empty(), "{:?}", rig.reminders());
    // Once the note is heard, a full interval later, the reminder comes.
    rig.world.readers.insert("a1".into(), true);
    rig.feed(Input::SessionActivity {
        session: "a1".into(),
    });
    let heard = rig.now;
    rig.run_until(heard + AFTER - Duration::from_millis(1));
    assert!(rig.reminders().is_empty());
    rig.run_until(heard + AFTER);
    assert_eq!(rig.reminders(), [("bd-1".to_string(), 1)]);
}

mod waiting;
impl Rig {
    /// A look at `s1` by `by`, made at `at`.
    fn look(&mut self, state: AgentState, by: Observer, at: Duration) {
        let mut look = Observation::new("s1".into(), Seen::State(state), by);
        look.at = at;
        self.feed(Input::Observed(look));
    }
}

/// A turn shorter than the index's poll: the index sees idle before and
/// after it, a delivery's own read saw it busy in between. The newest look
/// wins whoever made it, so the index's next idle ends the turn and the
/// reminder comes; a look older than the newest (a read that answered
/// late) changes nothing.
#[test]
fn the_newest_look_wins_so_a_turn_shorter_than_a_poll_ends_and_is_reminded() {
    let mut rig = reminding(3);
    rig.write(NAME, &stock(&[false, false]));
    assert_eq!(rig.take_delivered(), vec!["s1"]);
    let busy = AgentState::Busy("thinking".into());
    let turn = rig.now + Duration::from_millis(10);
    rig.advance(Duration::from_millis(300));
    rig.look(busy.clone(), Observer::Delivery, turn);
    assert!(!rig.engine.sessions()["s1"].state.is_idle());
    // The index polls a second after its last poll: idle, as it was.
    rig.advance(Duration::from_millis(700));
    let polled = rig.now;
    rig.look(AgentState::Idle, Observer::Index, polled);
    let s1 = &rig.engine.sessions()["s1"];
    assert!(s1.state.is_idle(), "{s1:?}");
    assert_eq!((s1.since, s1.by), (polled, Observer::Index));
    // The delivery's read that saw the turn start, answering late: older
    // than the poll, it changes nothing.
    rig.advance(Duration::from_millis(50));
    rig.look(busy, Observer::Delivery, turn);
    assert!(rig.engine.sessions()["s1"].state.is_idle());
    rig.run_until(polled + AFTER);
    assert_eq!(rig.reminders(), vec![("s1".to_string(), 1)]);
}
