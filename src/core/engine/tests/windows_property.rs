//! The windows of "was it taken" over random runs of one Claude session:
//! whatever its record says when, and however often reveille restarts,
//! a prompt goes out again only once its kind's `unseen` window has passed
//! since its last possible write, a look is asked only after the `record`
//! window and never writes, nothing else goes while a prompt is in flight,
//! a look that could not tell is answered by another look after the
//! window (never by a send, nor by "delivered" because the session was
//! seen still there), nothing is delivered that the record did not show,
//! and every step arrives in the end (nothing lost).

use super::*;
use crate::core::confirm::{CLAUDE_RECORD, CLAUDE_TRANSCRIPT_LAG};

const CLAUDE: &str = "claude:p";
const STEPS: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    /// The backend reports the prompt in flight written into the inbox.
    Sent,
    /// The transcript shows it taken (delivered, its turn started).
    Found,
    /// The look asked for found nothing.
    Absent,
    /// The write failed.
    Refused,
    /// A look (or the write's own read) could not tell.
    Unsure,
    /// The session is seen idle, still there.
    Seen,
    /// Time passes (ms), every timer firing when due.
    Wait(u64),
    /// reveille killed and started again (engine time zero).
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Sent),
        2 => Just(Op::Found),
        2 => Just(Op::Absent),
        1 => Just(Op::Refused),
        2 => Just(Op::Unsure),
        2 => Just(Op::Seen),
        4 => (1..4_000u64).prop_map(Op::Wait),
        1 => Just(Op::Restart),
    ]
}

/// The test's model of the prompt in flight and of each prompt's writes.
#[derive(Default)]
struct Model {
    /// The prompt handed out and not answered, and whether `Sent` came
    /// for it (and when).
    flight: Option<(u64, Option<Duration>)>,
    /// A look asked and not answered.
    look: Option<u64>,
    /// Per seq, the last moment a write of it may have happened (engine
    /// time of the current run).
    last_write: BTreeMap<u64, Duration>,
    /// How many hand-outs and looks of `Sim::handed_at` are checked.
    checked: usize,
    /// The prompts the record showed taken.
    found: BTreeSet<u64>,
}

fn rig_from(memory: Memory, files: &BTreeMap<PathBuf, String>) -> Rig {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some(CLAUDE.into());
    let mut rig = Rig::new(config, Some(memory));
    rig.world.readers.insert(CLAUDE.into(), true);
    rig.world.reaches.insert(CLAUDE.into(), Reached::Inbox);
    rig.world.later.insert(CLAUDE.into());
    rig.world.files = files.clone();
    rig.startup();
    rig
}

fn plan() -> String {
    let mut s = String::from("# Windows\n\n");
    for i in 1..=STEPS {
        s.push_str(&format!("- [ ] Step {i} (after: none)\n"));
    }
    s
}

impl Model {
    /// Check what the engine handed out since the last check.
    fn check(&mut self, rig: &Rig) -> Result<(), TestCaseError> {
        for &(seq, at, look) in &rig.world.handed_at[self.checked..] {
            if look {
                let Some((f, Some(sent))) = self.flight else {
                    return Err(TestCaseError::fail(format!("look at {seq} not sent")));
                };
                prop_assert_eq!(f, seq);
                prop_assert!(at >= sent + CLAUDE_RECORD, "look too soon");
                self.look = Some(seq);
                continue;
            }
            prop_assert!(self.flight.is_none(), "{seq} while {:?} flies", self.flight);
            if let Some(&last) = self.last_write.get(&seq) {
                prop_assert!(
                    at >= last + CLAUDE_TRANSCRIPT_LAG,
                    "{seq} again at {at:?}, last write {last:?}"
                );
            }
            self.last_write.insert(seq, at);
            self.flight = Some((seq, None));
        }
        self.checked = rig.world.handed_at.len();
        for r in &rig.world.records {
            if let Record::Delivered { seq, .. } = r {
                prop_assert!(self.found.contains(seq), "{seq} delivered unseen");
            }
        }
        Ok(())
    }

    /// An outcome of the prompt in flight fed: it is answered.
    fn answered(&mut self, at: Duration) {
        if let Some((seq, _)) = self.flight.take() {
            self.last_write.insert(seq, at);
        }
        self.look = None;
    }
}

fn apply(rig: &mut Rig, m: &mut Model, op: &Op) {
    let flight = m.flight.map(|(seq, _)| seq);
    let evidence = |seq, evidence| Input::Evidence {
        session: CLAUDE.into(),
        seq,
        evidence,
    };
    match (op, flight) {
        (Op::Sent, Some(seq)) if m.flight.is_some_and(|(_, s)| s.is_none()) => {
            m.flight = Some((seq, Some(rig.now)));
            rig.feed(evidence(seq, Evidence::Sent));
        }
        (Op::Found, Some(seq)) => {
            m.answered(rig.now);
            m.found.insert(seq);
            rig.feed(Input::Delivered {
                session: CLAUDE.into(),
                seq,
                reached: Reached::Inbox,
            });
            rig.feed(Input::TurnStarted {
                session: CLAUDE.into(),
                seq,
            });
        }
        (Op::Absent, Some(seq)) if m.look == Some(seq) => {
            m.answered(rig.now);
            rig.feed(evidence(seq, Evidence::NotRecorded("nothing".into())));
        }
        (Op::Refused, Some(seq)) if m.flight.is_some_and(|(_, s)| s.is_none()) => {
            m.answered(rig.now);
            rig.feed(Input::Undeliverable {
                session: CLAUDE.into(),
                seq,
                why: Undeliverable {
                    reason: "no socket".into(),
                },
            });
        }
        (Op::Unsure, Some(seq)) => {
            // Looked for again after the window, from now.
            m.flight = Some((seq, Some(rig.now)));
            m.look = None;
            rig.feed(evidence(seq, Evidence::Unsure("EIO".into())));
        }
        (Op::Seen, _) => {
            let idle = Seen::State(crate::core::session::AgentState::Idle);
            let look = Observation::new(CLAUDE.into(), idle, Observer::Program);
            rig.feed(Input::Observed(look));
        }
        (Op::Wait(ms), _) => rig.run_for(Duration::from_millis(*ms)),
        (Op::Restart, _) => {
            let memory = rig.engine.memory().clone();
            let files = rig.world.files.clone();
            // A write the killed run made may have happened up to its end:
            // the new run's time starts at zero.
            for at in m.last_write.values_mut() {
                *at = Duration::ZERO;
            }
            *m = Model {
                last_write: std::mem::take(&mut m.last_write),
                found: std::mem::take(&mut m.found),
                ..Model::default()
            };
            *rig = rig_from(memory, &files);
        }
        _ => {}
    }
}

impl Rig {
    /// Every timer due in the next `span`, each at its instant.
    fn run_for(&mut self, span: Duration) {
        let end = self.now + span;
        while let Some(next) = self.engine.poll_timeout().filter(|&t| t <= end) {
            self.now = self.now.max(next);
            self.feed(Input::Tick);
        }
        self.now = end;
        self.feed(Input::Tick);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn no_prompt_goes_again_inside_its_window_and_none_is_lost(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        let mut rig = rig_from(Memory::started(), &BTreeMap::new());
        rig.write(NAME, &plan());
        let mut m = Model::default();
        m.check(&rig)?;
        for op in &ops {
            apply(&mut rig, &mut m, op);
            m.check(&rig)?;
        }
        // Then the agent takes whatever comes: every step arrives.
        for _ in 0..4 * STEPS {
            rig.run_for(CLAUDE_RECORD * 2);
            m.check(&rig)?;
            apply(&mut rig, &mut m, &Op::Found);
            m.check(&rig)?;
        }
        prop_assert_eq!(rig.engine.memory().outbox.len_of(CLAUDE), 0);
    }
}
