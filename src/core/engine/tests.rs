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
    Change, Evidence, FileRead, Input, MountTable, Observation, Observer, ProjectMount, Reached,
    Seen, Undeliverable,
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
    /// Every look asked for (`Effect::Look`): session and seq. The test
    /// feeds what it found.
    looked: Vec<(String, u64)>,
    /// Every delivery and look handed out: its seq, when, and whether it
    /// was a look.
    handed_at: Vec<(u64, Duration, bool)>,
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
    fn look(&mut self, d: &Delivery) -> Option<Input> {
        self.looked.push((d.session.clone(), d.seq));
        self.handed_at.push((d.seq, self.now, true));
        None
    }
    fn deliver(&mut self, d: &Delivery) -> Option<Result<Reached, Undeliverable>> {
        self.handed.push((d.step.clone(), d.again));
        self.handed_at.push((d.seq, self.now, false));
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
                looked: Vec::new(),
                handed_at: Vec::new(),
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

mod doubts;
mod fanout;
mod hidden;
mod hidden_property;
mod lanes;
mod mounts;
mod plans;
mod properties;
mod reminders;
mod tracker;
mod windows;
mod windows_property;

// The tracker rig, shared with the reminder tests.
use tracker::{events, set_ready, tracker_rig};
