//! Codex's hidden dispatch over random runs of one session: whatever the
//! thread shows when, and however often reveille restarts, a prompt
//! written once is written again only after two looks found it in neither
//! the thread's queue nor its turns while the thread was idle, the window
//! (`CODEX_HIDDEN_DISPATCH`) or more apart — an absence on a busy thread
//! never counts; nothing else goes while a prompt is in flight; and every
//! step arrives in the end.

use super::*;
use crate::core::confirm::CODEX_HIDDEN_DISPATCH as HIDDEN;
use crate::core::session::AgentState;

const CODEX: &str = "codex:p";
const STEPS: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    /// The thread's state, as its events say.
    Idle,
    Busy,
    /// The hand-out or look in flight found it nowhere.
    Absent,
    /// The hand-out or look in flight found it, or wrote it.
    Found,
    /// The connection broke under the hand-out or look in flight.
    Lost,
    /// Time passes (ms), every timer firing when due.
    Wait(u64),
    /// reveille killed and started again (engine time zero).
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Idle),
        1 => Just(Op::Busy),
        4 => Just(Op::Absent),
        1 => Just(Op::Found),
        1 => Just(Op::Lost),
        4 => (1..400u64).prop_map(Op::Wait),
        1 => Just(Op::Restart),
    ]
}

/// The test's model of the session.
#[derive(Default)]
struct Model {
    /// The hand-out or look in flight (seq), not answered.
    flight: Option<u64>,
    busy: bool,
    /// Per seq: written at least once (in any run).
    written: BTreeSet<u64>,
    /// Per seq: the absences fed on an idle thread since its last write
    /// (engine time of the current run; a restart makes them unknown).
    absences: BTreeMap<u64, Vec<Duration>>,
    checked: usize,
}

fn rig_from(memory: Memory, files: &BTreeMap<PathBuf, String>) -> Rig {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some(CODEX.into());
    let mut rig = Rig::new(config, Some(memory));
    rig.world.readers.insert(CODEX.into(), true);
    rig.world.reaches.insert(CODEX.into(), Reached::Accepted);
    rig.world.later.insert(CODEX.into());
    rig.world.files = files.clone();
    rig.startup();
    rig
}

fn plan() -> String {
    let mut s = String::from("# Hidden\n\n");
    for i in 1..=STEPS {
        s.push_str(&format!("- [ ] Step {i} (after: none)\n"));
    }
    s
}

impl Model {
    /// Check what the engine handed out since the last check.
    fn check(&mut self, rig: &Rig) -> Result<(), TestCaseError> {
        let handed = &rig.world.handed[..];
        for (i, &(seq, _, look)) in rig.world.handed_at[self.checked..].iter().enumerate() {
            let again = if look {
                true
            } else {
                // handed and handed_at grow together for hand-outs.
                let nth = rig.world.handed_at[..self.checked + i]
                    .iter()
                    .filter(|h| !h.2)
                    .count();
                handed[nth].1
            };
            prop_assert!(self.flight.is_none(), "{seq} while {:?} flies", self.flight);
            if !again {
                if self.written.contains(&seq) {
                    let idle = self.absences.get(&seq).cloned().unwrap_or_default();
                    let proved = idle.iter().any(|&a| idle.iter().any(|&b| b >= a + HIDDEN));
                    prop_assert!(proved, "{seq} written again after absences {idle:?}");
                }
                self.written.insert(seq);
                self.absences.remove(&seq);
            }
            self.flight = Some(seq);
        }
        self.checked = rig.world.handed_at.len();
        Ok(())
    }
}

fn seen(rig: &mut Rig, state: AgentState) {
    rig.feed(Input::Observed(Observation::new(
        CODEX.into(),
        Seen::State(state),
        Observer::Events,
    )));
}

fn apply(rig: &mut Rig, m: &mut Model, op: &Op) {
    match (op, m.flight) {
        (Op::Idle, _) => {
            m.busy = false;
            seen(rig, AgentState::Idle);
        }
        (Op::Busy, _) => {
            m.busy = true;
            seen(rig, AgentState::Busy("active".into()));
        }
        (Op::Absent, Some(seq)) => {
            m.flight = None;
            if !m.busy {
                m.absences.entry(seq).or_default().push(rig.now);
            }
            rig.feed(Input::Evidence {
                session: CODEX.into(),
                seq,
                evidence: Evidence::NotRecorded("nowhere".into()),
            });
        }
        (Op::Found, Some(seq)) => {
            m.flight = None;
            rig.feed(Input::Delivered {
                session: CODEX.into(),
                seq,
                reached: Reached::Accepted,
            });
        }
        (Op::Lost, Some(seq)) => {
            m.flight = None;
            rig.feed(Input::Undeliverable {
                session: CODEX.into(),
                seq,
                why: Undeliverable {
                    reason: "connection lost".into(),
                },
            });
        }
        (Op::Wait(ms), _) => run_for(rig, Duration::from_millis(*ms)),
        (Op::Restart, _) => {
            let memory = rig.engine.memory().clone();
            let files = rig.world.files.clone();
            *m = Model {
                written: std::mem::take(&mut m.written),
                ..Model::default()
            };
            *rig = rig_from(memory, &files);
        }
        _ => {}
    }
}

/// Every timer due in the next `span`, each at its instant.
fn run_for(rig: &mut Rig, span: Duration) {
    let end = rig.now + span;
    while let Some(next) = rig.engine.poll_timeout().filter(|&t| t <= end) {
        rig.now = rig.now.max(next);
        rig.feed(Input::Tick);
    }
    rig.now = end;
    rig.feed(Input::Tick);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn a_prompt_is_written_again_only_after_two_idle_absences_a_window_apart(
        ops in proptest::collection::vec(op(), 1..60)
    ) {
        let mut rig = rig_from(Memory::started(), &BTreeMap::new());
        rig.write(NAME, &plan());
        let mut m = Model::default();
        m.check(&rig)?;
        for op in &ops {
            apply(&mut rig, &mut m, op);
            m.check(&rig)?;
        }
        // Then the thread idles and takes whatever comes: every step
        // arrives.
        apply(&mut rig, &mut m, &Op::Idle);
        m.check(&rig)?;
        for _ in 0..4 * STEPS {
            run_for(&mut rig, Duration::from_secs(60));
            m.check(&rig)?;
            apply(&mut rig, &mut m, &Op::Found);
            m.check(&rig)?;
        }
        prop_assert_eq!(rig.engine.memory().outbox.len_of(CODEX), 0);
    }
}
