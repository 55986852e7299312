//! Engine tests: a simulated world (an in-memory file system and sessions
//! whose readers come and go) around the engine, driven on a virtual clock
//! through the daemon's own loop, `core::driver::drive`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::core::driver::{drive, World};
use crate::core::effect::{Delivery, Log, Notice, Spawn};
use crate::core::input::{
    Change, Evidence, FileRead, MountTable, Observation, Observer, ProjectMount, Reached, Seen,
    Undeliverable,
};
use crate::core::record::Cursor;
use crate::core::record::{Item, Note, Work};

const PLAN_DIR: &str = "/p";
/// The project's directory, for 9beads mounts found by it.
const PROJECT_DIR: &str = "/src/proj";

/// A source from its persisted form.
fn src(s: &str) -> Source {
    s.parse().unwrap()
}
const SESSIONS: &str = "/s";

/// An in-memory world: files, sessions whose readers come and go, and
/// what was recorded, logged and delivered.
struct Sim {
    now: Duration,
    files: BTreeMap<PathBuf, String>,
    /// When each file was last written, for fresh reads.
    written: BTreeMap<PathBuf, Duration>,
    /// Whether reads report files written within the settle time as
    /// fresh, as the daemon's reads do (the property test turns it on; the
    /// example tests keep reads plain so each shows one rule).
    fresh_reads: bool,
    /// Sessions with a reader; others fail with ENXIO.
    readers: BTreeMap<String, bool>,
    /// Delivered prompts: (session, step label, text).
    delivered: Vec<(String, String, String)>,
    logs: Vec<Log>,
    /// Every notice told to the person.
    notices: Vec<Notice>,
    records: Vec<Record>,
    /// When each record was written (virtual clock).
    recorded_at: Vec<Duration>,
    /// Wall-clock seconds handed to the engine with beads reads.
    unix: i64,
    /// Child sessions asked for, in order.
    spawned: Vec<Spawn>,
    /// Child sessions killed, in order.
    reaped: Vec<String>,
    /// How a session's agent takes a prompt (`Written` when not given).
    reaches: BTreeMap<String, Reached>,
    /// Sessions whose delivery outcome comes later, as an agent program's
    /// backend reports it: the test feeds it.
    later: BTreeSet<String>,
    /// Child creates refused at once, as by a kind that cannot create
    /// sessions (Claude Code's backend answers `spawn` with `Some`).
    refuse_spawns: bool,
    /// Every delivery handed out, written or not: its step and `again`.
    handed: Vec<(String, bool)>,
}

impl Sim {
    fn file(&self, path: &Path) -> FileRead {
        match self.files.get(path) {
            Some(text) => FileRead::Bytes(text.clone().into_bytes()),
            None => FileRead::Missing,
        }
    }
}

impl World for Sim {
    fn record(&mut self, record: &Record) {
        self.records.push(record.clone());
        self.recorded_at.push(self.now);
    }
    fn log(&mut self, log: Log) {
        self.logs.push(log);
    }
    fn read_plan(&mut self, path: &Path, config: &EngineConfig) -> (FileRead, bool) {
        let fresh = self.fresh_reads
            && self
                .written
                .get(path)
                .is_some_and(|&at| self.now < at + config.settle);
        (self.file(path), fresh)
    }
    fn list(&mut self) -> Vec<PathBuf> {
        self.files.keys().cloned().collect()
    }
    fn read_mount(&mut self, mount: &str) -> (FileRead, bool) {
        (
            self.file(Path::new(&format!("/beads/{mount}/ready"))),
            false,
        )
    }
    fn read_mount_list(&mut self, mount: &str) -> FileRead {
        self.file(Path::new(&format!("/beads/{mount}/list")))
    }
    fn read_beads(&mut self) -> Option<(FileRead, i64)> {
        Some((self.file(Path::new("/beads/issues.jsonl")), self.unix))
    }
    /// `/beads/mtab`; the project's directory is `PROJECT_DIR`, compared
    /// as written (the shell's file-system comparison is tested apart).
    fn read_mount_table(&mut self) -> MountTable {
        let FileRead::Bytes(bytes) = self.file(Path::new("/beads/mtab")) else {
            return MountTable::Missing;
        };
        let (rows, errors) = crate::core::tracker::parse_mtab(&String::from_utf8_lossy(&bytes));
        let (ours, others): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| r.cwd == PROJECT_DIR);
        MountTable::Read {
            ours: ours
                .into_iter()
                .map(|r| ProjectMount {
                    name: r.name,
                    cwd: r.cwd,
                })
                .collect(),
            others: others.len(),
            errors,
        }
    }
    fn spawn(&mut self, spawn: &Spawn) -> Option<Input> {
        // The outcome comes later, as the daemon's does: the test feeds it.
        self.spawned.push(spawn.clone());
        self.refuse_spawns.then(|| Input::ChildSpawned {
            child: spawn.child.clone(),
            outcome: Err("this kind cannot create sessions".into()),
        })
    }
    fn reap(&mut self, child: &str) {
        self.reaped.push(child.to_string());
    }
    fn notify(&mut self, notice: &Notice) {
        self.notices.push(notice.clone());
    }
    fn deliver(&mut self, d: &Delivery) -> Option<Result<Reached, Undeliverable>> {
        self.handed.push((d.step.clone(), d.again));
        if !self.readers.get(&d.session).copied().unwrap_or(false) {
            return Some(Err(Undeliverable {
                reason: "no reader (ENXIO)".into(),
            }));
        }
        self.delivered
            .push((d.session.clone(), d.step.clone(), d.text.clone()));
        if self.later.contains(&d.session) {
            return None;
        }
        Some(Ok(self
            .reaches
            .get(&d.session)
            .copied()
            .unwrap_or(Reached::Written)))
    }
}

/// One engine in its simulated world, on a virtual clock.
struct Rig {
    engine: Engine,
    now: Duration,
    world: Sim,
    /// The memory the engine started from, and the first of its records:
    /// what a restart would load is that with the records replayed.
    start: (Memory, usize),
}

impl Rig {
    fn new(config: EngineConfig, memory: Option<Memory>) -> Rig {
        let engine = Engine::new(config, memory);
        Rig {
            start: (engine.memory().clone(), 0),
            engine,
            now: Duration::ZERO,
            world: Sim {
                now: Duration::ZERO,
                files: BTreeMap::new(),
                written: BTreeMap::new(),
                fresh_reads: false,
                readers: BTreeMap::new(),
                delivered: Vec::new(),
                logs: Vec::new(),
                notices: Vec::new(),
                records: Vec::new(),
                recorded_at: Vec::new(),
                unix: 1_800_000_000,
                spawned: Vec::new(),
                reaped: Vec::new(),
                reaches: BTreeMap::new(),
                later: BTreeSet::new(),
                refuse_spawns: false,
                handed: Vec::new(),
            },
        }
    }

    /// The engine restarted from `memory`, in the same world.
    fn restart_from(&mut self, memory: Memory) {
        self.engine = Engine::new(self.engine.config.clone(), Some(memory));
        self.start = (self.engine.memory().clone(), self.world.records.len());
    }

    /// This engine killed and started again, from the memory its journal
    /// holds, in the same world of files, with session `s1` reading.
    fn restarted(&self) -> Rig {
        let memory = self.engine.memory().clone();
        let mut again = Rig::new(self.engine.config().clone(), Some(memory));
        again.world.readers.insert("s1".into(), true);
        again.world.files = self.world.files.clone();
        again.startup();
        again
    }

    /// A restarted daemon with nothing on disk yet and a session `s1` reading.
    fn started() -> Rig {
        let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
        config.default_session = Some("s1".into());
        let mut rig = Rig::new(config, Some(Memory::started()));
        rig.world.readers.insert("s1".into(), true);
        rig.startup();
        rig
    }

    fn startup(&mut self) {
        let paths = self.world.list();
        self.feed(Input::Listed {
            paths,
            read_all: true,
        });
        self.feed(Input::StartupDone);
    }

    /// Through the daemon's own driver loop.
    fn feed(&mut self, mut input: Input) {
        self.world.now = self.now;
        // A look made by `Observation::new` is stamped as it is sent, as
        // the daemon's reports are.
        if let Input::Observed(look) = &mut input {
            if look.at == Duration::ZERO {
                look.at = self.now;
            }
        }
        drive(&mut self.engine, &mut self.world, self.now, input);
    }

    /// Write a file and report the writer's close.
    fn write(&mut self, name: &str, text: &str) {
        let path = PathBuf::from(PLAN_DIR).join(name);
        self.world.files.insert(path.clone(), text.to_string());
        self.world.written.insert(path.clone(), self.now);
        self.feed(Input::Changed {
            path,
            change: Change::Closed,
        });
    }

    fn rename(&mut self, from: &str, to: &str) {
        let from = PathBuf::from(PLAN_DIR).join(from);
        let to = PathBuf::from(PLAN_DIR).join(to);
        let text = self.world.files.remove(&from).expect("renamed file exists");
        self.world.files.insert(to.clone(), text);
        // A rename keeps the file's mtime.
        if let Some(at) = self.world.written.remove(&from) {
            self.world.written.insert(to.clone(), at);
        }
        // As the watcher reports a rename: the old name gone, the new one
        // moved in.
        self.feed(Input::Changed {
            path: from,
            change: Change::Gone,
        });
        self.feed(Input::Changed {
            path: to,
            change: Change::Appeared,
        });
    }

    fn delete(&mut self, name: &str) {
        let path = PathBuf::from(PLAN_DIR).join(name);
        self.world.files.remove(&path);
        self.feed(Input::Changed {
            path,
            change: Change::Gone,
        });
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.feed(Input::Tick);
    }

    /// Advance past every pending timer.
    fn settle(&mut self) {
        for _ in 0..64 {
            match self.engine.poll_timeout() {
                Some(at) if at > self.now => {
                    self.now = at;
                    self.feed(Input::Tick);
                }
                Some(_) => self.feed(Input::Tick),
                None => return,
            }
        }
    }

    fn steps_delivered(&self) -> Vec<String> {
        self.world
            .delivered
            .iter()
            .map(|(_, s, _)| s.clone())
            .collect()
    }

    fn take_delivered(&mut self) -> Vec<String> {
        let out = self.steps_delivered();
        self.world.delivered.clear();
        out
    }
}

/// Every engine test also checks what a restart relies on: the memory is
/// exactly the one it started from with the records it emitted replayed
/// over it (the journal over the snapshot), and reads back from its state
/// file as it is.
impl Drop for Rig {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let (mut replayed, from) = self.start.clone();
        for record in &self.world.records[from..] {
            replayed.apply(record);
        }
        let memory = self.engine.memory();
        assert_eq!(
            &replayed, memory,
            "the live memory is not its records replayed"
        );
        let text = serde_json::to_string(memory).unwrap();
        let read: Memory = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), text, "{text}");
    }
}

const NAME: &str = "20261130T101500_a1b2c3d4--ship-it__todo.md";
const WIP: &str = "20261130T101500_a1b2c3d4--ship-it__wip.md";
const DONE: &str = "20261130T101500_a1b2c3d4--ship-it__done.md";

fn stock(checked: &[bool]) -> String {
    let mut s = String::from("# Ship it\n\n");
    for (i, c) in checked.iter().enumerate() {
        s.push_str(&format!(
            "- [{}] Step {}\n  do thing {}\n",
            if *c { "x" } else { " " },
            i + 1,
            i + 1
        ));
    }
    s
}

#[test]
fn a_new_plan_announces_only_its_first_step() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[false, false, false]));
    assert_eq!(rig.take_delivered(), vec!["s1"]);
    let text = &rig
        .engine
        .memory()
        .plans
        .get(&src("plan:20261130T101500_a1b2c3d4"))
        .unwrap();
    assert_eq!(text.len(), 1);
}

#[test]
fn task_complete_rewrites_unblock_the_next_step_once() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[false, false, false]));
    rig.take_delivered();
    rig.write(NAME, &stock(&[true, false, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    // The same content again (a second close) announces nothing.
    rig.write(NAME, &stock(&[true, false, false]));
    assert!(rig.take_delivered().is_empty());
    rig.write(NAME, &stock(&[true, true, false]));
    assert_eq!(rig.take_delivered(), vec!["s3"]);
}

#[test]
fn the_default_prompt_carries_goal_id_title_description_deps_and_file() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[true, false]));
    let (_, _, text) = &rig.world.delivered[0];
    assert!(text.contains("Ship it"), "{text}");
    assert!(text.contains("s2"), "{text}");
    assert!(text.contains("Step 2"), "{text}");
    assert!(text.contains("do thing 2"), "{text}");
    assert!(text.contains("Completed dependencies: s1."), "{text}");
    // How to close it with the tools the agent has: the checkbox edit.
    assert!(
        text.contains(&format!(
            "When it is finished, change `- [ ] Step 2` to `- [x] Step 2` in {PLAN_DIR}/{NAME}."
        )),
        "{text}"
    );
    assert!(
        text.contains("Sent by reveille, the plan watcher your user set up"),
        "{text}"
    );
    assert!(!text.contains("task_complete"), "{text}");
}

#[test]
fn renames_through_the_lifecycle_never_reannounce() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[false, false]));
    rig.rename(NAME, WIP);
    rig.settle();
    assert_eq!(rig.take_delivered(), vec!["s1"]);
    let plans = rig.engine.plans();
    assert_eq!(plans[0].lifecycle, Lifecycle::Wip);
    rig.write(WIP, &stock(&[true, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    // A slug change is the same plan too.
    let renamed = "20261130T101500_a1b2c3d4--ship-it-now__wip.md";
    rig.rename(WIP, renamed);
    rig.settle();
    assert!(rig.take_delivered().is_empty());
    assert_eq!(rig.engine.plan_count(), 1);
}

#[test]
fn split_rename_halves_are_one_move() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[false, false]));
    rig.take_delivered();
    // The from-half arrives alone; the to-half a moment later.
    let from = PathBuf::from(PLAN_DIR).join(NAME);
    let to = PathBuf::from(PLAN_DIR).join(WIP);
    let text = rig.world.files.remove(&from).unwrap();
    rig.world.files.insert(to.clone(), text);
    rig.feed(Input::Changed {
        path: from,
        change: Change::Gone,
    });
    rig.advance(Duration::from_millis(10));
    rig.feed(Input::Changed {
        path: to,
        change: Change::Appeared,
    });
    rig.settle();
    assert!(rig.take_delivered().is_empty());
    assert_eq!(rig.engine.plans()[0].lifecycle, Lifecycle::Wip);
    // An unmatched from-half (moved out of the directory) is a removal,
    // decided by listing the directory after the grace period.
    let wip = PathBuf::from(PLAN_DIR).join(WIP);
    rig.world.files.remove(&wip);
    rig.feed(Input::Changed {
        path: wip,
        change: Change::Gone,
    });
    assert_eq!(
        rig.engine.plan_count(),
        1,
        "not removed before the grace period"
    );
    rig.settle();
    assert_eq!(rig.engine.plan_count(), 0);
}

#[test]
fn done_and_abandoned_plans_wake_no_one_and_withdraw_pending() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    rig.write(NAME, &stock(&[false, false]));
    assert_eq!(rig.engine.memory().pending_total(), 1);
    rig.rename(NAME, DONE);
    assert_eq!(
        rig.engine.memory().pending_total(),
        0,
        "pending prompt withdrawn"
    );
    assert!(rig
        .world
        .logs
        .iter()
        .any(|l| l.message.contains("withdrew")));
    rig.world.readers.insert("s1".into(), true);
    rig.write(DONE, &stock(&[true, false]));
    rig.settle();
    assert!(rig.world.delivered.is_empty());
}

#[test]
fn checked_steps_withdraw_their_pending_prompt() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    rig.write(NAME, &stock(&[false, false]));
    rig.write(NAME, &stock(&[true, false]));
    // s1 was withdrawn, s2 is pending.
    let pending: Vec<String> = rig
        .engine
        .memory()
        .outbox
        .get("s1")
        .unwrap()
        .iter()
        .map(|p| p.step.clone())
        .collect();
    assert_eq!(pending, vec!["s2"]);
    rig.world.readers.insert("s1".into(), true);
    rig.settle();
    assert_eq!(rig.take_delivered(), vec!["s2"]);
}

#[test]
fn an_absent_reader_keeps_prompts_in_order_and_backs_off() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    let plan = "# G\n\n- [ ] A (after: none)\n- [ ] B (after: none)\n- [ ] C (after: none)\n";
    rig.write(NAME, plan);
    assert_eq!(rig.engine.memory().pending_total(), 3);
    let t1 = rig.engine.poll_timeout().unwrap();
    rig.advance(t1 - rig.now);
    let t2 = rig.engine.poll_timeout().unwrap();
    assert!(
        t2 - rig.now > t1,
        "backoff grows: {t1:?} then {:?}",
        t2 - rig.now
    );
    rig.world.readers.insert("s1".into(), true);
    // A reader appearing in the session directory triggers an immediate retry.
    rig.feed(Input::SessionActivity {
        session: "s1".into(),
    });
    assert_eq!(rig.take_delivered(), vec!["s1", "s2", "s3"]);
    assert_eq!(rig.engine.memory().pending_total(), 0);
    assert_eq!(
        rig.world
            .logs
            .iter()
            .filter(|l| l.message.contains("cannot deliver"))
            .count(),
        1,
        "a failure streak is logged once"
    );
}

#[test]
fn one_stuck_session_does_not_delay_another() {
    let mut rig = Rig::started();
    rig.world.readers.insert("stuck".into(), false);
    rig.world.readers.insert("ok".into(), true);
    rig.write(NAME, "<!-- session: stuck -->\n# A\n\n- [ ] one\n");
    rig.write(
        "20261130T101501_00000001--b__todo.md",
        "<!-- session: ok -->\n# B\n\n- [ ] two\n",
    );
    assert_eq!(rig.steps_delivered(), vec!["s1"]);
    assert_eq!(rig.world.delivered[0].0, "ok");
    assert_eq!(rig.engine.memory().outbox.get("stuck").unwrap().len(), 1);
}

#[test]
fn first_start_takes_a_baseline_and_announces_what_comes_after() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    let mut rig = Rig::new(config, None);
    rig.world.readers.insert("s1".into(), true);
    rig.world.files.insert(
        PathBuf::from(PLAN_DIR).join(NAME),
        stock(&[true, false, false]),
    );
    rig.startup();
    assert!(rig.world.delivered.is_empty(), "baseline is not announced");
    assert!(rig.engine.memory().baselined());
    let base = &rig
        .engine
        .memory()
        .plans
        .get(&src("plan:20261130T101500_a1b2c3d4"))
        .unwrap();
    assert!(base.values().all(|a| a.baseline));
    rig.write(NAME, &stock(&[true, true, false]));
    assert_eq!(rig.take_delivered(), vec!["s3"]);
    // A plan appearing later is announced.
    rig.write("20261130T101501_00000001--b__todo.md", &stock(&[false]));
    assert_eq!(rig.take_delivered(), vec!["s1"]);
}

#[test]
fn a_restart_announces_what_became_ready_while_down_once() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[false, false, false]));
    rig.take_delivered();
    let memory = rig.engine.memory().clone();
    // Down: the agent completes s1.
    let files = rig.world.files.clone();
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    let mut again = Rig::new(config, Some(memory));
    again.world.readers.insert("s1".into(), true);
    again.world.files = files;
    again.world.files.insert(
        PathBuf::from(PLAN_DIR).join(NAME),
        stock(&[true, false, false]),
    );
    again.startup();
    assert_eq!(again.take_delivered(), vec!["s2"]);
    // A second restart repeats nothing.
    let third = again.restarted();
    assert!(third.world.delivered.is_empty());
}

#[test]
fn a_crash_between_record_and_write_repeats_exactly_that_prompt() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    rig.write(NAME, &stock(&[false, false]));
    let mut again = rig.restarted();
    assert_eq!(again.take_delivered(), vec!["s1"]);
}

#[test]
fn plans_deleted_while_down_are_dropped_on_restart() {
    let mut rig = Rig::started();
    rig.world.readers.insert("s1".into(), false);
    rig.write(NAME, &stock(&[false, false]));
    let memory = rig.engine.memory().clone();
    let mut again = Rig::new(rig.engine.config().clone(), Some(memory));
    again.world.readers.insert("s1".into(), true);
    again.startup();
    assert!(again.world.delivered.is_empty());
    assert!(again.engine.memory().announced().next().is_none());
    assert_eq!(again.engine.memory().pending_total(), 0);
}

#[test]
fn an_invalid_plan_is_one_error_and_no_wakeups_until_fixed() {
    let mut rig = Rig::started();
    let bad = "# G\n\n- [x] A\n- [ ] B (after: 9)\n";
    // (The stub parser may not detect this; the engine path is what counts:
    // feed bytes that no parser accepts.)
    rig.write(NAME, "\u{0}\u{0}binary");
    rig.write(NAME, "\u{0}\u{0}binary");
    let errors = rig
        .world
        .logs
        .iter()
        .filter(|l| l.level() == Level::Error)
        .count();
    assert_eq!(errors, 1, "{:?}", rig.world.logs);
    let _ = bad;
    rig.write(NAME, &stock(&[true, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
}

#[test]
fn the_all_done_nudge_is_sent_once_for_wip_plans() {
    let mut rig = Rig::started();
    rig.write(WIP, &stock(&[true, false]));
    rig.take_delivered();
    rig.write(WIP, &stock(&[true, true]));
    assert_eq!(rig.take_delivered(), vec!["all-done"]);
    assert!(rig.world.delivered.is_empty());
    rig.write(WIP, &stock(&[true, true]));
    assert!(rig.take_delivered().is_empty(), "sent once");
    let mut text = rig.engine.memory().announced();
    assert!(text.any(|(_, m)| m.contains_key(&Note::AllDone.into())));
}

#[test]
fn a_plan_without_a_session_is_tracked_warned_once_and_wakes_later() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = None;
    let mut rig = Rig::new(config, Some(Memory::started()));
    rig.world.readers.insert("late".into(), true);
    rig.startup();
    rig.write(NAME, &stock(&[false]));
    rig.write(NAME, &stock(&[false]));
    assert!(rig.world.delivered.is_empty());
    assert_eq!(
        rig.world
            .logs
            .iter()
            .filter(|l| l.message.contains("no session"))
            .count(),
        1
    );
    rig.write(
        NAME,
        &format!("<!-- session: late -->\n{}", stock(&[false])),
    );
    assert_eq!(rig.take_delivered(), vec!["s1"]);
}

#[test]
fn session_ids_that_climb_out_are_refused() {
    let mut rig = Rig::started();
    rig.world.readers.insert("../x".into(), true);
    rig.write(
        NAME,
        &format!("<!-- session: ../x -->\n{}", stock(&[false])),
    );
    assert!(rig.world.delivered.is_empty());
    assert!(rig
        .world
        .logs
        .iter()
        .any(|l| l.level() == Level::Error && l.message.contains("../x")));
}

/// Regression (found by the crash campaign, `tests/reliability`): an
/// in-place rewrite truncates the file before writing it, and a read brought
/// by the previous close can see zero bytes. Parsed as a plan with no steps,
/// that forgot every announced step, and the next read announced the ready
/// ones again — a repeated prompt without a crash.
#[test]
fn a_read_catching_a_rewrite_between_truncate_and_write_repeats_nothing() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[true, false, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    rig.write(NAME, "");
    rig.write(NAME, &stock(&[true, false, false]));
    assert!(rig.take_delivered().is_empty(), "{:?}", rig.world.delivered);
    rig.write(NAME, &stock(&[true, true, false]));
    assert_eq!(rig.take_delivered(), vec!["s3"]);
}

/// Regression (found by the 30-minute soak in `tests/reliability`): the
/// same race as above, but the read got the head of the file (its first
/// read(2) of 32 bytes) before the truncate: a goal and no steps. Every
/// step looked checked, so the all-done nudge went out early, and every
/// announced step was forgotten and announced again.
#[test]
fn a_read_catching_only_the_head_of_a_rewrite_repeats_nothing_and_nudges_nobody() {
    let mut rig = Rig::started();
    rig.write(WIP, &stock(&[true, false, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    rig.write(WIP, "# Ship it\n\n");
    rig.write(WIP, &stock(&[true, false, false]));
    assert!(rig.take_delivered().is_empty(), "{:?}", rig.world.delivered);
    rig.write(WIP, &stock(&[true, true, true]));
    assert_eq!(rig.take_delivered(), vec!["all-done"]);
}

/// A plan that never had a step has nothing to be done: no nudge.
#[test]
fn a_plan_without_steps_gets_no_done_nudge() {
    let mut rig = Rig::started();
    rig.write(WIP, "# Nothing to do yet\n");
    assert!(rig.take_delivered().is_empty(), "{:?}", rig.world.delivered);
}

#[test]
fn a_settle_read_ignores_a_half_written_last_line() {
    let mut rig = Rig::started();
    rig.write(NAME, &stock(&[true]));
    rig.take_delivered();
    let path = PathBuf::from(PLAN_DIR).join(NAME);
    // Mid-write: a new step's title is cut off, and the writer has not closed.
    rig.world
        .files
        .insert(path.clone(), format!("{}- [ ] Half a ti", stock(&[true])));
    rig.feed(Input::Changed {
        path: path.clone(),
        change: Change::Modified,
    });
    rig.settle();
    assert!(rig.world.delivered.is_empty(), "{:?}", rig.world.delivered);
    rig.world.files.insert(
        path.clone(),
        format!("{}- [ ] Half a title\n", stock(&[true])),
    );
    rig.feed(Input::Changed {
        path,
        change: Change::Closed,
    });
    assert_eq!(rig.take_delivered(), vec!["s2"]);
}

#[test]
fn queue_mode_dumps_every_step_in_topological_order_with_the_goal_first() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    config.mode = Mode::Queue;
    let mut rig = Rig::new(config, Some(Memory::started()));
    rig.world.readers.insert("s1".into(), true);
    rig.startup();
    rig.write(NAME, &stock(&[false, false, false]));
    assert_eq!(rig.steps_delivered(), vec!["q1", "q2", "q3"]);
    assert!(rig.world.delivered[0].2.starts_with("Goal: Ship it"));
    assert!(
        rig.world.delivered[1]
            .2
            .starts_with("q2: Step 2 (after: q1)"),
        "{}",
        rig.world.delivered[1].2
    );
    assert!(!rig.world.delivered[1].2.contains("Goal:"));
}

#[test]
fn the_outbox_cap_refuses_loudly_and_loses_nothing() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    config.outbox_cap = 2;
    let mut rig = Rig::new(config, Some(Memory::started()));
    rig.startup();
    let plan = "# G\n\n- [ ] A (after: none)\n- [ ] B (after: none)\n- [ ] C (after: none)\n";
    rig.write(NAME, plan);
    assert_eq!(rig.engine.memory().pending_total(), 2);
    assert_eq!(rig.engine.refused()["s1"], 1);
    assert!(rig
        .world
        .logs
        .iter()
        .any(|l| l.message.contains("outbox full")));
    rig.world.readers.insert("s1".into(), true);
    rig.settle();
    let mut got = rig.take_delivered();
    got.sort();
    assert_eq!(got, vec!["s1", "s2", "s3"]);
}

/// Regression (found by the outbox-cap flood in `tests/reliability`): with
/// more ready steps than the cap, every delivery diffed every plan again and
/// refilled the outbox by one, logging "outbox full" each time — 10,000
/// prompts behind a cap of 1,000 took minutes and logged 2,000 errors. Now
/// the diff waits until half the cap has drained, and the refusal is said
/// once per streak; the order and the count are unchanged.
#[test]
fn draining_a_capped_outbox_refills_in_batches_and_says_full_once() {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    config.outbox_cap = 10;
    let mut rig = Rig::new(config, Some(Memory::started()));
    rig.startup();
    let mut plan = String::from("# G\n\n");
    for i in 1..=100 {
        plan.push_str(&format!("- [ ] T{i:03} (after: none)\n"));
    }
    rig.write(NAME, &plan);
    assert_eq!(rig.engine.memory().pending_total(), 10);
    rig.world.readers.insert("s1".into(), true);
    rig.settle();
    let got = rig.take_delivered();
    let want: Vec<String> = (1..=100).map(|i| format!("s{i}")).collect();
    assert_eq!(got, want);
    let full = rig
        .world
        .logs
        .iter()
        .filter(|l| l.message.contains("outbox full"))
        .count();
    assert_eq!(full, 1);
    let diffs = rig
        .world
        .records
        .iter()
        .filter(|r| matches!(r, Record::Announce { .. }))
        .count();
    assert_eq!(diffs, 100);
}

// ---- property tests -------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Check(usize),
    Uncheck(usize),
    Insert(usize),
    Rename(usize),
    Delete,
    Restart,
    Reader(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..12usize).prop_map(Op::Check),
        1 => (0..12usize).prop_map(Op::Uncheck),
        1 => (0..12usize).prop_map(Op::Insert),
        1 => (0..4usize).prop_map(Op::Rename),
        1 => Just(Op::Delete),
        1 => Just(Op::Restart),
        1 => any::<bool>().prop_map(Op::Reader),
    ]
}

/// A plan model: titles, checked flags and explicit dependencies by title.
#[derive(Debug, Clone)]
struct Model {
    titles: Vec<String>,
    checked: Vec<bool>,
    /// deps[i]: indices < i.
    deps: Vec<Vec<usize>>,
    state: &'static str,
    exists: bool,
}

impl Model {
    fn render(&self) -> String {
        let mut s = String::from("# Goal\n\n");
        for i in 0..self.titles.len() {
            let refs: Vec<String> = self.deps[i].iter().map(|d| (d + 1).to_string()).collect();
            let ann = if refs.is_empty() {
                "none".to_string()
            } else {
                refs.join(", ")
            };
            s.push_str(&format!(
                "- [{}] {}\n  after: {ann}\n",
                if self.checked[i] { "x" } else { " " },
                self.titles[i]
            ));
        }
        s
    }
    fn name(&self) -> String {
        format!("20261130T101500_a1b2c3d4--p__{}.md", self.state)
    }
    fn ready(&self) -> Vec<String> {
        (0..self.titles.len())
            .filter(|&i| !self.checked[i] && self.deps[i].iter().all(|&d| self.checked[d]))
            .map(|i| self.titles[i].clone())
            .collect()
    }
    fn live(&self) -> bool {
        self.exists && (self.state == "todo" || self.state == "wip")
    }
}

fn dag() -> impl Strategy<Value = Model> {
    (1..10usize)
        .prop_flat_map(|n| {
            let deps = (0..n)
                .map(|i| proptest::collection::vec(0..i.max(1), 0..3))
                .collect::<Vec<_>>();
            (Just(n), deps, proptest::collection::vec(any::<bool>(), n))
        })
        .prop_map(|(n, deps, checked)| {
            let deps = deps
                .into_iter()
                .enumerate()
                .map(|(i, d)| {
                    let mut d: Vec<usize> = d.into_iter().filter(|&x| x < i).collect();
                    d.sort();
                    d.dedup();
                    d
                })
                .collect();
            Model {
                titles: (0..n).map(|i| format!("Task {i}")).collect(),
                checked,
                deps,
                state: "todo",
                exists: true,
            }
        })
}

proptest! {
    // 200 cases by default; PROPTEST_CASES=20000 for a long run.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200),
        .. ProptestConfig::default()
    })]

    /// Never early, never lost, never repeated (except after a crash that
    /// interrupted a write), never for ended plans, renames never re-announce.
    #[test]
    fn wakeups_are_exact(mut model in dag(), ops in proptest::collection::vec(op(), 1..30)) {
        let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
        config.default_session = Some("s1".into());
        config.nudge_done = false;
        let mut rig = Rig::new(config.clone(), Some(Memory::started()));
        rig.world.readers.insert("s1".into(), true);
        // Reads as the daemon's: a file written within the settle time is
        // fresh.
        rig.world.fresh_reads = true;
        rig.startup();
        rig.write(&model.name(), &model.render());
        // Titles announced (delivered or pending) and not checked since.
        let mut outstanding: std::collections::BTreeSet<String> = Default::default();
        for (_, _, text) in std::mem::take(&mut rig.world.delivered) {
            let title = model.titles.iter().find(|t| text.contains(&format!("ready: {t}\n")));
            outstanding.insert(title.expect("prompt names a step").clone());
        }
        let mut next_title = 100;
        for op in ops {
            let before = model.name();
            match op {
                Op::Check(i) if model.exists && !model.titles.is_empty() => {
                    let i = i % model.titles.len();
                    model.checked[i] = true;
                    outstanding.remove(&model.titles[i]);
                    rig.write(&model.name(), &model.render());
                }
                Op::Uncheck(i) if model.exists && !model.titles.is_empty() => {
                    let i = i % model.titles.len();
                    if model.checked[i] {
                        model.checked[i] = false;
                        rig.write(&model.name(), &model.render());
                    }
                }
                Op::Insert(i) if model.exists => {
                    // Insert at the end, depending on an earlier step: keeps
                    // refs by number valid.
                    let dep = if model.titles.is_empty() { vec![] } else { vec![i % model.titles.len()] };
                    model.titles.push(format!("Task {next_title}"));
                    next_title += 1;
                    model.checked.push(false);
                    model.deps.push(dep);
                    rig.write(&model.name(), &model.render());
                }
                Op::Rename(s) if model.exists => {
                    model.state = ["todo", "wip", "done", "abandoned"][s];
                    if model.name() != before {
                        rig.rename(&before, &model.name());
                        rig.settle();
                    }
                }
                Op::Delete if model.exists => {
                    model.exists = false;
                    rig.delete(&before);
                    rig.settle();
                    outstanding.clear();
                }
                Op::Restart => {
                    let memory = rig.engine.memory().clone();
                    let mut again = Rig::new(config.clone(), Some(memory));
                    again.world.readers = rig.world.readers.clone();
                    again.world.files = rig.world.files.clone();
                    again.world.written = rig.world.written.clone();
                    again.world.fresh_reads = true;
                    again.now = rig.now;
                    rig = again;
                    rig.startup();
                }
                Op::Reader(on) => {
                    rig.world.readers.insert("s1".into(), on);
                    rig.settle();
                }
                _ => {}
            }
            // Every delivered prompt was ready at the time, and new.
            for (_, _, text) in std::mem::take(&mut rig.world.delivered) {
                let title = model.titles.iter().find(|t| text.contains(&format!("ready: {t}\n"))).cloned();
                let title = title.expect("prompt names a step");
                let i = model.titles.iter().position(|t| *t == title).unwrap();
                prop_assert!(model.live(), "announced for an ended plan");
                prop_assert!(!model.checked[i], "announced a checked step {title}");
                prop_assert!(model.deps[i].iter().all(|&d| model.checked[d]), "announced {title} early");
                prop_assert!(outstanding.insert(title.clone()), "announced {title} twice");
            }
            // Nothing ready is left unannounced (delivered or pending).
            if model.live() {
                let pending: std::collections::BTreeSet<String> = rig
                    .engine
                    .memory()
                    .outbox.prompts()
                    .filter_map(|p| model.titles.iter().find(|t| p.text.contains(&format!("ready: {t}\n"))).cloned())
                    .collect();
                for title in model.ready() {
                    prop_assert!(
                        outstanding.contains(&title) || pending.contains(&title),
                        "ready step {title} never announced"
                    );
                }
            }
            // Pending prompts are delivered once the reader comes back; then
            // they count as outstanding like any other delivery.
            for title in rig.engine.memory().outbox.prompts()
                .filter_map(|p| model.titles.iter().find(|t| p.text.contains(&format!("ready: {t}\n"))).cloned()) {
                outstanding.remove(&title);
            }
        }
    }
}

// ---- tracker ---------------------------------------------------------------

fn tracker_rig(first_start: bool) -> Rig {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    config.mounts = vec!["proj".into()];
    config.assignees.insert("agent-1".into(), "a1".into());
    config.notify_completed = true;
    config.beads_file = Some("issues.jsonl".into());
    let memory = (!first_start).then(Memory::started);
    let mut rig = Rig::new(config, memory);
    rig.world.readers.insert("s1".into(), true);
    rig.world.readers.insert("a1".into(), true);
    rig
}

fn ready_file(rows: &[(&str, &str, &str)]) -> String {
    rows.iter()
        .map(|(id, assignee, title)| format!("{id}\topen\t0\t{assignee}\t2026-11-30\t{title}\n"))
        .collect()
}

fn events(rig: &mut Rig, lines: &[&str]) {
    let lines = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i as u64 * 100, l.as_bytes().to_vec()))
        .collect();
    rig.feed(Input::TrackerLines {
        lines,
        cursor: Cursor {
            offset: 1,
            ..Cursor::default()
        },
    });
}

fn set_ready(rig: &mut Rig, rows: &[(&str, &str, &str)]) {
    rig.world
        .files
        .insert(PathBuf::from("/beads/proj/ready"), ready_file(rows));
}

#[test]
fn beads_entering_a_mounts_ready_set_are_announced_once_to_their_route() {
    let mut rig = tracker_rig(false);
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
    let mut got: Vec<(String, String)> = rig
        .world
        .delivered
        .iter()
        .map(|(s, st, _)| (s.clone(), st.clone()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![("a1".into(), "bd-2".into()), ("s1".into(), "bd-1".into())]
    );
    assert!(rig
        .world
        .delivered
        .iter()
        .any(|(_, _, t)| t.contains("Fix the build")));
    rig.world.delivered.clear();
    // The same ready set again, and events for other mounts: nothing new.
    events(
        &mut rig,
        &[
            r#"{"type":"created","id":"bd-9","mount":"proj"}"#,
            r#"{"type":"created","id":"bd-9","mount":"other"}"#,
        ],
    );
    assert!(rig.world.delivered.is_empty());
    assert_eq!(
        rig.world
            .records
            .iter()
            .filter(|r| matches!(r, Record::Cursor { .. }))
            .count(),
        2
    );
}

/// Regression (found by the soak test in `tests/reliability`): the titles
/// of tracker tasks were kept for every task ever seen, so a long-running
/// daemon grew with the tracker's history.
#[test]
fn task_titles_are_kept_only_for_ready_or_announced_tasks() {
    let mut rig = tracker_rig(false);
    rig.startup();
    for i in 0..50 {
        let id = format!("bd-{i}");
        set_ready(&mut rig, &[(id.as_str(), "-", "Some task")]);
        events(
            &mut rig,
            &[r#"{"type":"updated","id":"bd-x","mount":"proj"}"#],
        );
    }
    assert_eq!(rig.world.delivered.len(), 50);
    assert!(
        rig.engine.tasks.task_titles.len() <= 2,
        "{:?}",
        rig.engine.tasks.task_titles
    );
}

#[test]
fn a_claim_is_announced_to_the_assignees_session_and_deduplicated() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-1", "-", "Fix the build")]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-1","mount":"proj"}"#],
    );
    rig.world.delivered.clear();
    set_ready(&mut rig, &[]);
    let claim = r#"{"id":"u-1","ts":1708598530,"source":"beads/proj","type":"BeadClaimed","data":{"bead_id":"bd-1","assignee":"agent-1","mount":"proj"}}"#;
    events(&mut rig, &[claim]);
    assert_eq!(rig.world.delivered.len(), 1);
    assert_eq!(rig.world.delivered[0].0, "a1");
    assert!(
        rig.world.delivered[0].2.contains("assigned to agent-1"),
        "{}",
        rig.world.delivered[0].2
    );
    assert!(
        rig.world.delivered[0].2.contains("Fix the build"),
        "title remembered from the ready file"
    );
    // A truncated log read again repeats the claim: not announced twice.
    events(&mut rig, &[claim]);
    assert_eq!(rig.world.delivered.len(), 1);
}

#[test]
fn a_completion_elsewhere_is_told_to_the_session_it_was_announced_to() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-7", "-", "Refactor")]);
    events(
        &mut rig,
        &[r#"{"type":"updated","id":"bd-7","mount":"proj"}"#],
    );
    rig.world.delivered.clear();
    set_ready(&mut rig, &[]);
    events(
        &mut rig,
        &[r#"{"type":"completed","id":"bd-7","mount":"proj"}"#],
    );
    assert_eq!(rig.world.delivered.len(), 1);
    assert_eq!(rig.world.delivered[0].0, "s1");
    assert!(rig.world.delivered[0].2.contains("completed elsewhere"));
    // It left the ready set, so it is no longer announced.
    assert!(!rig
        .engine
        .memory()
        .is_announced(&src("mount:proj"), &Item::task("bd-7")));
}

/// 9beads' `claimed` names no assignee (p9/server.go `cmdClaim`); the
/// claimer is in the mount's `list` row, the bead out of `ready`.
#[test]
fn a_current_shape_claim_is_told_to_the_claimer_found_in_the_list() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-1", "-", "Fix the build")]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-1","mount":"proj"}"#],
    );
    assert_eq!(rig.world.delivered.len(), 1);
    rig.world.delivered.clear();
    set_ready(&mut rig, &[]);
    rig.world.files.insert(
        PathBuf::from("/beads/proj/list"),
        "bd-1\tin_progress\t-\tagent-1\t2026-11-30\tFix the build\n".into(),
    );
    let claim = r#"{"type":"claimed","id":"bd-1","mount":"proj"}"#;
    events(&mut rig, &[claim]);
    let got: Vec<(&str, &str)> = rig
        .world
        .delivered
        .iter()
        .map(|(s, st, _)| (s.as_str(), st.as_str()))
        .collect();
    assert_eq!(got, [("a1", "bd-1")]);
    assert!(rig.world.delivered[0].2.contains("assigned to agent-1"));
    // Repeated (a log read again): told once.
    events(&mut rig, &[claim]);
    assert_eq!(rig.world.delivered.len(), 1);
    // Completed by anyone: the claimer's session had it, and hears so.
    rig.world
        .files
        .insert(PathBuf::from("/beads/proj/list"), String::new());
    events(
        &mut rig,
        &[r#"{"type":"completed","id":"bd-1","mount":"proj"}"#],
    );
    assert_eq!(rig.world.delivered.len(), 2);
    assert_eq!(rig.world.delivered[1].0, "a1");
    assert!(rig.world.delivered[1].2.contains("completed elsewhere"));
}

/// A ready list as 9beads writes it (`-` for no dependencies and no
/// assignee) is announced; a truly malformed row is one warning naming the
/// file and the line, said once, and the other rows still count.
#[test]
fn dash_rows_are_ready_and_a_malformed_row_is_one_warning_with_file_and_line() {
    let mut rig = tracker_rig(false);
    rig.startup();
    rig.world.files.insert(
        PathBuf::from("/beads/proj/ready"),
        "bd-1\topen\t-\t-\t2026-11-30\tNo deps\nbd-2\topen\tmany\t-\t2026-11-30\tBad\n".into(),
    );
    for _ in 0..2 {
        events(
            &mut rig,
            &[r#"{"id":"bd-1","mount":"proj","type":"created"}"#],
        );
    }
    let got: Vec<&str> = rig
        .world
        .delivered
        .iter()
        .map(|(_, st, _)| st.as_str())
        .collect();
    assert_eq!(got, ["bd-1"]);
    let warnings: Vec<&Log> = rig
        .world
        .logs
        .iter()
        .filter(|l| l.message.contains("row skipped"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].file.as_deref(), Some("proj/ready"));
    assert_eq!(warnings[0].line, Some(2));
    assert!(warnings[0].message.starts_with("proj/ready: line 2: "));
}

/// The default claimer `9beads` maps to no session: nobody hears the
/// claim, and the session the task was announced to still has it.
#[test]
fn a_claim_by_the_default_claimer_wakes_nobody_and_the_task_stays_with_its_session() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-2", "-", "Docs")]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-2","mount":"proj"}"#],
    );
    rig.world.delivered.clear();
    set_ready(&mut rig, &[]);
    rig.world.files.insert(
        PathBuf::from("/beads/proj/list"),
        "bd-2\tin_progress\t-\t9beads\t2026-11-30\tDocs\n".into(),
    );
    events(
        &mut rig,
        &[r#"{"type":"claimed","id":"bd-2","mount":"proj"}"#],
    );
    assert!(rig.world.delivered.is_empty(), "{:?}", rig.world.delivered);
    assert!(rig
        .world
        .logs
        .iter()
        .any(|l| l.message.contains("claims by \"9beads\" are not announced")));
    events(
        &mut rig,
        &[r#"{"type":"completed","id":"bd-2","mount":"proj"}"#],
    );
    let got: Vec<&str> = rig
        .world
        .delivered
        .iter()
        .map(|(s, _, _)| s.as_str())
        .collect();
    assert_eq!(got, ["s1"]);
    // Unclaimed and back in the ready set later: announced again.
    set_ready(&mut rig, &[("bd-2", "-", "Docs")]);
    events(
        &mut rig,
        &[r#"{"type":"updated","id":"bd-x","mount":"proj"}"#],
    );
    assert_eq!(rig.world.delivered.len(), 2);
}

/// `events.resync_ms`: off, no deadline ever; on, every mount is read
/// again with no event, so a silent `undep` is seen.
#[test]
fn resync_reads_ready_lists_without_events_only_when_on() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-0","mount":"proj"}"#],
    );
    assert_eq!(rig.engine.poll_timeout(), None, "off: no wake-ups");

    let mut rig = tracker_rig(false);
    rig.engine.config.resync = Some(Duration::from_secs(30));
    rig.startup();
    set_ready(&mut rig, &[]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-0","mount":"proj"}"#],
    );
    let at = rig.engine.poll_timeout().expect("armed by the mount read");
    set_ready(&mut rig, &[("bd-3", "-", "Unblocked by undep")]);
    rig.now = at;
    rig.feed(Input::Tick);
    let got: Vec<&str> = rig
        .world
        .delivered
        .iter()
        .map(|(_, st, _)| st.as_str())
        .collect();
    assert_eq!(got, ["bd-3"]);
    assert!(rig.engine.poll_timeout().unwrap() > at, "re-armed");
    // Turned off by a reload: no deadline is left behind.
    let mut config = rig.engine.config().clone();
    config.resync = None;
    rig.engine.reconfigure(config);
    assert_eq!(rig.engine.poll_timeout(), None, "off after a reload");
}

#[test]
fn garbage_and_unknown_events_are_logged_and_skipped() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-1", "-", "Fix")]);
    events(
        &mut rig,
        &[
            "not json",
            r#"{"type":"teleported","id":"x"}"#,
            r#"{"type":"teleported","id":"y"}"#,
            r#"{"type":"completed"}"#,
            r#"{"type":"updated","id":"bd-1","mount":"proj"}"#,
        ],
    );
    assert_eq!(rig.world.delivered.len(), 1, "the good line still counts");
    let warn: Vec<&str> = rig.world.logs.iter().map(|l| l.message.as_str()).collect();
    assert!(warn.iter().any(|m| m.contains("offset 0")), "{warn:?}");
    assert_eq!(
        warn.iter().filter(|m| m.contains("teleported")).count(),
        1,
        "unknown type said once"
    );
    assert!(
        warn.iter().any(|m| m.contains("offset 300")),
        "wrong shape reported with its offset"
    );
}

#[test]
fn a_first_start_baselines_the_tracker_backlog() {
    let mut rig = tracker_rig(true);
    set_ready(&mut rig, &[("bd-1", "-", "Old backlog")]);
    rig.feed(Input::MountRead {
        fresh: false,
        mount: "proj".into(),
        read: FileRead::Bytes(ready_file(&[("bd-1", "-", "Old backlog")]).into_bytes()),
    });
    rig.startup();
    assert!(rig.world.delivered.is_empty());
    set_ready(
        &mut rig,
        &[("bd-1", "-", "Old backlog"), ("bd-2", "-", "New")],
    );
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-2","mount":"proj"}"#],
    );
    assert_eq!(rig.steps_delivered(), vec!["bd-2"]);
}

#[test]
fn beads_issues_are_announced_as_they_become_ready_and_deferrals_come_due() {
    let mut rig = tracker_rig(false);
    rig.startup();
    let v1 = concat!(
        r#"{"id":"b-1","title":"Base","status":"open","issue_type":"task"}"#,
        "\n",
        r#"{"id":"b-2","title":"Needs base","status":"open","issue_type":"task","dependencies":[{"issue_id":"b-2","depends_on_id":"b-1","type":"blocks"}]}"#,
        "\n",
        r#"{"id":"b-3","title":"Later","status":"open","issue_type":"task","defer_until":"2027-01-15T10:00:00Z"}"#,
        "\n",
    );
    rig.world
        .files
        .insert(PathBuf::from("/beads/issues.jsonl"), v1.into());
    rig.feed(Input::BeadsRead {
        read: FileRead::Bytes(v1.as_bytes().to_vec()),
        now_unix: rig.world.unix,
    });
    assert_eq!(rig.take_delivered(), vec!["b-1"]);
    let v2 = v1.replace(
        r#""id":"b-1","title":"Base","status":"open""#,
        r#""id":"b-1","title":"Base","status":"closed""#,
    );
    rig.world
        .files
        .insert(PathBuf::from("/beads/issues.jsonl"), v2.clone());
    rig.feed(Input::BeadsRead {
        read: FileRead::Bytes(v2.into_bytes()),
        now_unix: rig.world.unix,
    });
    assert_eq!(rig.take_delivered(), vec!["b-2"]);
    // The deferral comes due with no change to the file: a timer re-reads it.
    let due = rig.engine.poll_timeout().expect("a timer for the deferral");
    // The rig's clock (1_800_000_000) is 2027-01-15T08:00Z, two hours early.
    assert!(due.as_secs() > 3600, "due in about two hours, not {due:?}");
    rig.world.unix = 1_800_000_000 + due.as_secs() as i64 + 1;
    rig.now = due;
    rig.feed(Input::Tick);
    assert_eq!(rig.take_delivered(), vec!["b-3"]);
}

#[test]
fn a_fresh_read_of_a_rewrite_in_progress_announces_nothing_the_finished_file_would_not() {
    let mut rig = Rig::started();
    let path = PathBuf::from(PLAN_DIR).join(NAME);
    rig.write(NAME, &stock(&[true, false, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    // The close of that write brought a read; it lands after the next
    // in-place rewrite truncated the file and wrote half of it.
    let full = stock(&[true, true, false]);
    let half = &full[..full.find("- [x] Step 2").unwrap() + 9];
    rig.feed(Input::PlanRead {
        path: path.clone(),
        read: FileRead::Bytes(half.as_bytes().to_vec()),
        complete: true,
        fresh: true,
    });
    assert!(rig.world.delivered.is_empty(), "{:?}", rig.world.delivered);
    assert!(
        rig.engine
            .memory()
            .is_announced(&src("plan:20261130T101500_a1b2c3d4"), &Item::step("Step 2")),
        "a step missing from a fresh read is not forgotten"
    );
    // The finished file settles: read again, complete; s3 is announced once.
    rig.world.files.insert(path.clone(), full);
    rig.settle();
    assert_eq!(rig.take_delivered(), vec!["s3"]);
    // A stale read (not fresh) of a shortened file does forget.
    rig.feed(Input::PlanRead {
        path,
        read: FileRead::Bytes(b"# Ship it\n\n- [ ] Step 1\n".to_vec()),
        complete: true,
        fresh: false,
    });
    assert!(!rig
        .engine
        .memory()
        .is_announced(&src("plan:20261130T101500_a1b2c3d4"), &Item::step("Step 3")));
}

#[test]
fn a_fresh_ready_file_missing_a_task_is_read_again_before_the_task_is_forgotten() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-1", "-", "Fix the build")]);
    events(
        &mut rig,
        &[r#"{"type":"updated","id":"bd-1","mount":"proj"}"#],
    );
    assert_eq!(rig.take_delivered(), vec!["bd-1"]);
    // A read lands while the ready file is being rewritten in place: empty.
    rig.feed(Input::MountRead {
        mount: "proj".into(),
        read: FileRead::Bytes(Vec::new()),
        fresh: true,
    });
    assert!(rig
        .engine
        .memory()
        .is_announced(&src("mount:proj"), &Item::task("bd-1")));
    // Once settled, the whole file still lists it: nothing is announced again.
    rig.settle();
    assert!(rig.take_delivered().is_empty());
    assert!(rig
        .engine
        .memory()
        .is_announced(&src("mount:proj"), &Item::task("bd-1")));
    // A settled read without it does forget it.
    set_ready(&mut rig, &[]);
    rig.feed(Input::MountRead {
        mount: "proj".into(),
        read: FileRead::Bytes(Vec::new()),
        fresh: false,
    });
    assert!(!rig
        .engine
        .memory()
        .is_announced(&src("mount:proj"), &Item::task("bd-1")));
}

mod lanes;
mod mounts;
mod reminders;

mod fanout {
    use super::*;
    use crate::core::record::ChildState;
    use crate::core::session::AgentState;

    const PLAN: &str = "plan:20261130T101500_a1b2c3d4";

    /// Three parallel steps, then a join after all three.
    fn parallel(checked: [bool; 4]) -> String {
        let mark = |c: bool| if c { "x" } else { " " };
        format!(
            "# Fan\n\n- [{}] Alpha (after: none)\n- [{}] Beta (after: none)\n- [{}] Gamma (after: none)\n- [{}] Join (after: 1, 2, 3)\n",
            mark(checked[0]),
            mark(checked[1]),
            mark(checked[2]),
            mark(checked[3])
        )
    }

    fn rig(max_children: usize, max_total: usize) -> Rig {
        let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
        config.default_session = Some("p".into());
        config.fanout.max_children = max_children;
        config.fanout.max_total = max_total;
        let memory = Memory::started();
        let mut rig = Rig::new(config, Some(memory));
        rig.world.readers.insert("p".into(), true);
        rig.startup();
        rig
    }

    fn children(rig: &Rig) -> Vec<(String, String, ChildState)> {
        rig.engine
            .memory()
            .children
            .iter()
            .map(|(id, c)| (id.clone(), c.step.clone(), c.state))
            .collect()
    }

    /// A child exists and reads its prompts.
    /// A parallel plan with two children planned; the first exists and
    /// was told its step (s2). The rig and the children's ids.
    fn one_child_at_work() -> (Rig, Vec<String>) {
        let mut rig = rig(2, 8);
        rig.write(NAME, &parallel([false; 4]));
        let ids: Vec<String> = rig.world.spawned.iter().map(|s| s.child.clone()).collect();
        appear(&mut rig, &ids[0], AgentState::Idle);
        rig.settle();
        rig.take_delivered();
        (rig, ids)
    }

    fn appear(rig: &mut Rig, id: &str, state: AgentState) {
        rig.world.readers.insert(id.into(), true);
        rig.feed(Input::ChildSpawned {
            child: id.into(),
            outcome: Ok(1_800_000_000_000),
        });
        rig.feed(Input::Observed(Observation::state(
            id.into(),
            Some(state),
            Observer::Index,
            "gone",
        )));
    }

    #[test]
    fn parallel_steps_beyond_the_first_go_to_children_up_to_the_cap() {
        let mut rig = rig(2, 8);
        rig.write(NAME, &parallel([false; 4]));
        let spawned: Vec<String> = rig.world.spawned.iter().map(|s| s.child.clone()).collect();
        assert_eq!(spawned.len(), 2, "{:?}", rig.world.spawned);
        assert!(rig.world.spawned.iter().all(|s| s.parent == "p"));
        assert_eq!(
            children(&rig)
                .iter()
                .map(|c| c.1.clone())
                .collect::<Vec<_>>(),
            vec!["s2", "s3"]
        );
        // The parent got s1 at once; the children's prompts wait for them,
        // without a write tried at a session that is not there yet.
        assert_eq!(rig.take_delivered(), vec!["s1"]);
        rig.settle();
        let tried = rig
            .world
            .logs
            .iter()
            .any(|l| l.message.starts_with("cannot deliver"));
        assert!(!tried, "{:?}", rig.world.logs);
        for id in &spawned {
            appear(&mut rig, id, AgentState::Idle);
        }
        rig.settle();
        let texts: Vec<(String, String, String)> = rig.world.delivered.clone();
        assert_eq!(texts.len(), 2, "{texts:?}");
        for (session, step, text) in &texts {
            assert!(spawned.contains(session), "{session}");
            assert!(text.contains("sub-agent"), "{text}");
            assert!(text.contains("to `- [x] "), "{text}");
            assert!(!text.contains("task_complete"), "{text}");
            assert!(text.contains(&format!("{step}: ")), "{text}");
        }
        assert!(children(&rig).iter().all(|c| c.2 == ChildState::Working));
        // The same content again creates nobody.
        rig.write(NAME, &parallel([false; 4]));
        assert_eq!(rig.world.spawned.len(), 2);
    }

    #[test]
    fn the_parent_hears_of_each_child_completion_and_idle_children_are_reaped() {
        let mut rig = rig(2, 8);
        rig.write(NAME, &parallel([false; 4]));
        let ids: Vec<String> = rig.world.spawned.iter().map(|s| s.child.clone()).collect();
        for id in &ids {
            appear(&mut rig, id, AgentState::Busy("thinking".into()));
        }
        rig.settle();
        rig.take_delivered();
        rig.write(NAME, &parallel([false, true, false, false]));
        let told: Vec<(String, String, String)> = std::mem::take(&mut rig.world.delivered);
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0].0, "p");
        assert!(
            told[0]
                .2
                .contains(&format!("s2 was completed by child {}", ids[0])),
            "{}",
            told[0].2
        );
        // Busy: not killed yet; idle: killed, once.
        assert!(rig.world.reaped.is_empty());
        rig.feed(Input::Observed(Observation::state(
            ids[0].clone(),
            Some(AgentState::Idle),
            Observer::Index,
            "gone",
        )));
        assert_eq!(rig.world.reaped, vec![ids[0].clone()]);
        rig.feed(Input::Observed(Observation::state(
            ids[0].clone(),
            None,
            Observer::Index,
            "gone",
        )));
        rig.write(NAME, &parallel([true, true, true, false]));
        rig.feed(Input::Observed(Observation::state(
            ids[1].clone(),
            Some(AgentState::Idle),
            Observer::Index,
            "gone",
        )));
        assert_eq!(rig.world.reaped, ids);
        // The join step reaches the parent; nothing else creates a child.
        let last: Vec<(String, String)> = rig
            .world
            .delivered
            .iter()
            .map(|d| (d.0.clone(), d.1.clone()))
            .collect();
        assert!(last.contains(&("p".into(), "s4".into())), "{last:?}");
        assert!(last.contains(&("p".into(), "s3".into())), "{last:?}");
        assert_eq!(rig.world.spawned.len(), 2);
        assert!(children(&rig).is_empty(), "{:?}", children(&rig));
    }

    #[test]
    fn a_child_gone_before_its_step_is_checked_hands_it_back_to_the_parent_once() {
        let (mut rig, ids) = one_child_at_work();
        rig.feed(Input::Observed(Observation::state(
            ids[0].clone(),
            None,
            Observer::Index,
            "gone",
        )));
        assert_eq!(rig.take_delivered(), vec!["s2"]);
        let to_parent = rig
            .engine
            .memory()
            .plans
            .get(&src(PLAN))
            .unwrap()
            .values()
            .filter(|a| a.session.as_deref() == Some("p"))
            .count();
        assert_eq!(to_parent, 2, "s1 and the handed-back s2");
        // Reads again announce nothing more, and create no child for it.
        rig.write(NAME, &parallel([false; 4]));
        assert!(rig.take_delivered().is_empty());
        assert_eq!(rig.world.spawned.len(), 2);
        // A create that fails hands back the same way.
        rig.feed(Input::ChildSpawned {
            child: ids[1].clone(),
            outcome: Err("no s/new".into()),
        });
        assert_eq!(rig.take_delivered(), vec!["s3"]);
    }

    /// A child whose program stopped (an opencode server, a Codex
    /// app-server) keeps its step: it goes on when the program is back.
    /// Found gone then, it hands the step back.
    #[test]
    fn a_child_whose_program_is_unreachable_keeps_its_step_until_it_is_found_gone() {
        let (mut rig, ids) = one_child_at_work();
        rig.feed(Input::Observed(Observation::new(
            ids[0].clone(),
            Seen::Unreachable("down".into()),
            Observer::Program,
        )));
        rig.write(NAME, &parallel([false; 4]));
        assert!(rig.take_delivered().is_empty(), "nothing handed back");
        assert!(
            !rig.engine.sessions.observed().contains_key(&ids[0]),
            "nothing is known of it while its program is away"
        );
        appear(&mut rig, &ids[0], AgentState::Idle);
        assert!(rig.take_delivered().is_empty(), "its step is its own still");
        rig.feed(Input::Observed(Observation::new(
            ids[0].clone(),
            Seen::Unreachable("down".into()),
            Observer::Program,
        )));
        rig.feed(Input::Observed(Observation::state(
            ids[0].clone(),
            None,
            Observer::Index,
            "gone",
        )));
        assert_eq!(rig.take_delivered(), vec!["s2"], "gone: handed back");
    }

    #[test]
    fn a_create_refused_at_once_hands_the_step_back_and_the_journal_replays_to_the_same_memory() {
        let mut rig = rig(1, 8);
        rig.world.refuse_spawns = true;
        let start = rig.engine.memory().clone();
        rig.write(NAME, &parallel([false; 4]));
        // Each step once, to the parent (the one handed back after the
        // one that waited at the cap).
        let mut got = rig.take_delivered();
        got.sort();
        assert_eq!(got, vec!["s1", "s2", "s3"]);
        assert!(rig.engine.memory().outbox.keys().all(|s| s == "p"));
        // The journal, replayed after a crash, is the memory the engine
        // has: a refusal handled before the records queued after its
        // create would leave the child's announcement after its withdrawal.
        let mut replayed = start;
        for r in &rig.world.records {
            replayed.apply(r);
        }
        assert_eq!(&replayed, rig.engine.memory(), "{:#?}", rig.world.records);
    }

    #[test]
    fn a_child_recorded_but_not_confirmed_is_asked_for_again_with_the_same_id_after_a_crash() {
        let mut rig = rig(1, 8);
        rig.write(NAME, &parallel([false; 4]));
        assert_eq!(rig.world.spawned.len(), 1);
        let id = rig.world.spawned[0].child.clone();
        let memory = rig.engine.memory().clone();
        let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
        config.default_session = Some("p".into());
        config.fanout.max_children = 1;
        let mut again = Rig::new(config, Some(memory));
        again.world.files = rig.world.files.clone();
        again.startup();
        assert_eq!(again.world.spawned.len(), 1, "{:?}", again.world.spawned);
        assert_eq!(again.world.spawned[0].child, id);
        // s3 waited at the cap and went to the parent: no new child.
        assert_eq!(children(&again).len(), 1);
    }

    #[test]
    fn kept_children_are_not_killed_and_free_their_slot_when_done() {
        let mut rig = rig(1, 1);
        let mut config = rig.engine.config().clone();
        config.fanout.keep_children = true;
        rig.engine.reconfigure(config);
        rig.write(NAME, &parallel([false; 4]));
        let id = rig.world.spawned[0].child.clone();
        appear(&mut rig, &id, AgentState::Idle);
        rig.write(NAME, &parallel([false, true, false, false]));
        rig.feed(Input::Observed(Observation::state(
            id.clone(),
            Some(AgentState::Idle),
            Observer::Index,
            "gone",
        )));
        assert!(rig.world.reaped.is_empty());
        assert_eq!(
            children(&rig),
            vec![(id.clone(), "s2".into(), ChildState::Done)]
        );
        // A done child no longer counts against max_total = 1: another
        // plan's parallel step gets a child.
        rig.write(
            "20261130T101600_b1b2c3d4--other__todo.md",
            &parallel([false; 4]),
        );
        assert_eq!(rig.world.spawned.len(), 2, "{:?}", rig.world.spawned);
        // Gone (killed by a person): no longer followed, nothing handed back.
        rig.feed(Input::Observed(Observation::state(
            id.clone(),
            None,
            Observer::Index,
            "gone",
        )));
        assert!(!rig.engine.memory().children.contains_key(&id));
    }

    #[test]
    fn children_of_an_ended_plan_are_reaped_and_hand_nothing_back() {
        let mut rig = rig(2, 8);
        rig.write(NAME, &parallel([false; 4]));
        let ids: Vec<String> = rig.world.spawned.iter().map(|s| s.child.clone()).collect();
        appear(&mut rig, &ids[0], AgentState::Busy("thinking".into()));
        rig.take_delivered();
        rig.delete(NAME);
        rig.settle();
        assert!(
            children(&rig).iter().all(|c| c.2 == ChildState::Done),
            "{:?}",
            children(&rig)
        );
        rig.feed(Input::Observed(Observation::state(
            ids[0].clone(),
            Some(AgentState::Idle),
            Observer::Index,
            "gone",
        )));
        assert_eq!(rig.world.reaped, vec![ids[0].clone()]);
        assert!(
            rig.take_delivered().is_empty(),
            "nobody told of a deleted plan"
        );
        // Its slots are free: a new plan fans out again.
        rig.write(
            "20261130T101600_b1b2c3d4--other__todo.md",
            &parallel([false; 4]),
        );
        assert_eq!(rig.world.spawned.len(), 4);
    }

    #[test]
    fn session_checklists_never_fan_out() {
        let mut rig = rig(2, 8);
        let path = PathBuf::from(SESSIONS).join("p/plan");
        rig.world.files.insert(path.clone(), parallel([false; 4]));
        rig.feed(Input::Changed {
            path,
            change: Change::Closed,
        });
        assert!(rig.world.spawned.is_empty());
        assert_eq!(rig.take_delivered(), vec!["s1", "s2", "s3"]);
    }

    #[test]
    fn the_project_cap_holds_across_plans() {
        let mut rig = rig(2, 1);
        rig.write(NAME, &parallel([false; 4]));
        rig.write(
            "20261130T101600_b1b2c3d4--other__todo.md",
            &parallel([false; 4]),
        );
        assert_eq!(rig.world.spawned.len(), 1, "{:?}", rig.world.spawned);
        let to_parent = rig.world.delivered.iter().filter(|d| d.0 == "p").count();
        assert_eq!(to_parent, 5, "{:?}", rig.world.delivered);
    }
}
