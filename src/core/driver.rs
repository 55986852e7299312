//! The one loop over the engine: an input in, every effect carried out
//! through a [`World`], follow-up inputs fed back depth-first, and
//! deliveries pulled only once everything so far is carried out.
//!
//! The daemon, `reveille status` and the engine tests all drive the engine
//! through [`drive`], so the tests exercise the very order the daemon uses.
//! Like the engine, this loop performs no I/O itself: it only calls the
//! world.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use super::effect::{Delivery, Effect, Log, Notice, Spawn};
use super::engine::{Engine, EngineConfig, Now};
use super::input::{FileRead, Input, MountTable, Reached, Undeliverable};
use super::record::Record;

/// The world side of the engine: what carrying out an effect means.
pub trait World {
    /// Make the record durable (appended before anything emitted after it).
    fn record(&mut self, record: &Record);
    /// Say it (the journal, a test's list).
    fn log(&mut self, log: Log);
    /// Read a plan file; the flag says whether it is *fresh* (modified
    /// within `config.settle`, so perhaps mid-rewrite).
    fn read_plan(&mut self, path: &Path, config: &EngineConfig) -> (FileRead, bool);
    /// Every plan file present.
    fn list(&mut self) -> Vec<PathBuf>;
    /// A tracker mount's ready file, and whether it is fresh.
    fn read_mount(&mut self, mount: &str) -> (FileRead, bool);
    /// A tracker mount's `list` file (every bead not closed, with its
    /// assignee).
    fn read_mount_list(&mut self, mount: &str) -> FileRead;
    /// 9beads' mount table, its mounts judged against the project's
    /// directory (a file-system question: symlinks, `~`).
    fn read_mount_table(&mut self) -> MountTable;
    /// The beads `issues.jsonl` with the wall-clock second it was read at,
    /// or `None` when none is configured.
    fn read_beads(&mut self) -> Option<(FileRead, i64)>;
    /// Write a prompt: `Some(Ok)` written, `Some(Err)` not deliverable now,
    /// `None` finishing in the background (its outcome comes later, as an
    /// input of its own).
    fn deliver(&mut self, delivery: &Delivery) -> Option<Result<Reached, Undeliverable>>;
    /// Look for a prompt written already in the agent's own record
    /// (`Effect::Look`): `Some` with what it shows when known now, `None`
    /// when it comes later (an input of its own).
    fn look(&mut self, delivery: &Delivery) -> Option<Input>;
    /// Create a child session: `Some` with the `Input::ChildSpawned` when
    /// the outcome is known now, `None` when it comes later (an input of
    /// its own).
    fn spawn(&mut self, spawn: &Spawn) -> Option<Input>;
    /// Kill a child session.
    fn reap(&mut self, child: &str);
    /// Tell the person, in the background (`[notify]`).
    fn notify(&mut self, notice: &Notice);
}

/// Feed one input and carry out everything that follows from it.
///
/// Depth-first: what follows from an effect (the contents of a file it
/// asked to read) is handled before the effects queued after it. Only when
/// every effect so far is carried out — every record is in the journal —
/// is the engine asked for a delivery, whose outcome is the next input.
///
/// A child create answered at once (a kind that cannot create sessions)
/// is an outcome like any other: handled once every effect so far is
/// carried out, as if it had come later. Handled at once, it would journal
/// the child's hand-back before the child's own announcement queued after
/// the create, and a replay of the journal would give the step back to
/// the child.
pub fn drive(engine: &mut Engine, world: &mut impl World, now: Now, input: Input) {
    let mut queue: VecDeque<Effect> = engine.handle(now, input).into();
    let mut answers: VecDeque<Input> = VecDeque::new();
    loop {
        let follow = match queue.pop_front() {
            Some(Effect::Spawn(spawn)) => {
                answers.extend(world.spawn(&spawn));
                continue;
            }
            Some(effect) => carry_out(engine, world, effect),
            None => match answers
                .pop_front()
                .or_else(|| next_delivery(engine, world, now))
            {
                Some(input) => {
                    queue.extend(engine.handle(now, input));
                    continue;
                }
                None => return,
            },
        };
        if let Some(input) = follow {
            let more = engine.handle(now, input);
            for e in more.into_iter().rev() {
                queue.push_front(e);
            }
        }
    }
}

/// Carry out one effect; returns the input that answers it, if any.
fn carry_out(engine: &Engine, world: &mut impl World, effect: Effect) -> Option<Input> {
    match effect {
        Effect::Record(r) => {
            world.record(&r);
            None
        }
        Effect::Log(l) => {
            world.log(l);
            None
        }
        Effect::Read { path, complete } => {
            let (read, fresh) = world.read_plan(&path, engine.config());
            Some(Input::PlanRead {
                path,
                read,
                complete,
                fresh,
            })
        }
        Effect::List { read_all } => Some(Input::Listed {
            paths: world.list(),
            read_all,
        }),
        Effect::ReadMount { mount } => {
            let (read, fresh) = world.read_mount(&mount);
            Some(Input::MountRead { mount, read, fresh })
        }
        // `drive` carries creates out itself (their answers wait).
        Effect::Spawn(spawn) => world.spawn(&spawn),
        Effect::Reap { child } => {
            world.reap(&child);
            None
        }
        Effect::Look(d) => world.look(&d),
        Effect::Notify(notice) => {
            world.notify(&notice);
            None
        }
        Effect::ReadMountList { mount } => {
            let read = world.read_mount_list(&mount);
            Some(Input::MountListRead { mount, read })
        }
        Effect::ReadMountTable => Some(Input::MountTable {
            table: world.read_mount_table(),
        }),
        Effect::ReadBeads => world
            .read_beads()
            .map(|(read, now_unix)| Input::BeadsRead { read, now_unix }),
    }
}

/// Attempt the deliveries the engine offers until one has an outcome now.
fn next_delivery(engine: &mut Engine, world: &mut impl World, now: Now) -> Option<Input> {
    while let Some(d) = engine.poll_delivery(now) {
        match world.deliver(&d) {
            Some(Ok(reached)) => {
                return Some(Input::Delivered {
                    session: d.session,
                    seq: d.seq,
                    reached,
                })
            }
            Some(Err(why)) => {
                return Some(Input::Undeliverable {
                    session: d.session,
                    seq: d.seq,
                    why,
                })
            }
            None => {}
        }
    }
    None
}
