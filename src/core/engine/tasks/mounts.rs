//! Which 9beads mounts are the project's, and the source each one's beads
//! are remembered under.
//!
//! Named in `[events] mounts`: those names, each its own source
//! (`Source::Mount`), as always. Not named (the default): the mounts that
//! 9beads' `mtab` shows for the project's directory, each remembered by
//! that directory (`Source::NineBeads`). 9beads names a mount at random at
//! every mount and forgets every mount when it restarts, so the directory
//! is the only thing that stays: a re-mount under a new name is the same
//! source, and nothing it shows is announced again. The table is read
//! again whenever it may have changed — a `mount` or `umount` event, a
//! tracker restart, a mount whose files are gone — and events that arrive
//! meanwhile for a mount not known yet wait for its answer.

use std::collections::{BTreeMap, BTreeSet};

use super::Tasks;
use crate::core::effect::{Effect, Level, Log};
use crate::core::engine::config::EngineConfig;
use crate::core::engine::context::Cx;
use crate::core::input::{MountTable, ProjectMount};
use crate::core::lines::LineError;
use crate::core::record::{Cursor, Record};
use crate::core::source::Source;
use crate::core::tracker::TrackerEvent;

/// The project's 9beads mounts.
#[derive(Debug, Default)]
pub(super) struct Mounts {
    /// The mounts `mtab` showed for the project's directory: name → source.
    found: BTreeMap<String, Source>,
    /// The last name each 9beads source was mounted under (kept after it
    /// is gone, to say what it was when it comes back).
    last: BTreeMap<Source, String>,
    /// Sources whose pending prompts may name an older mount: written
    /// again for the current one at their next ready read.
    pub(super) retell: BTreeSet<Source>,
    /// An `mtab` read is asked for and not answered yet.
    asked: bool,
    /// Events of mounts not known yet, waiting for that answer.
    held: Vec<TrackerEvent>,
    /// The log position to record once the held events are handled.
    held_cursor: Option<Cursor>,
}

/// Whether the project's mounts are found by its directory.
pub(super) fn by_directory(config: &EngineConfig) -> bool {
    config.mounts.is_empty()
}

impl Mounts {
    /// The source of mount `name`, if it is the project's.
    pub(super) fn source(&self, config: &EngineConfig, name: &str) -> Option<Source> {
        if by_directory(config) {
            self.found.get(name).cloned()
        } else {
            let named = config.mounts.iter().any(|m| m == name);
            named.then(|| Source::Mount(name.to_string()))
        }
    }

    /// The project's mount names now.
    pub(super) fn names(&self, config: &EngineConfig) -> Vec<String> {
        if by_directory(config) {
            self.found.keys().cloned().collect()
        } else {
            config.mounts.clone()
        }
    }

    /// The name `source` is mounted under now, if it is mounted.
    pub(super) fn name_of<'a>(&'a self, source: &'a Source) -> Option<&'a str> {
        match source {
            Source::Mount(name) => Some(name),
            Source::NineBeads(_) => self
                .last
                .get(source)
                .filter(|name| self.found.contains_key(*name))
                .map(String::as_str),
            _ => None,
        }
    }

    /// Ask for the table, once until it is answered.
    pub(super) fn ask(&mut self, config: &EngineConfig, fx: &mut Vec<Effect>) {
        if by_directory(config) && !std::mem::replace(&mut self.asked, true) {
            fx.push(Effect::ReadMountTable);
        }
    }

    /// Whether the table is asked for: events of unknown mounts wait.
    pub(super) fn asked(&self) -> bool {
        self.asked
    }

    /// Keep an event of a mount not known yet until the table is read.
    pub(super) fn hold(&mut self, event: TrackerEvent) {
        self.held.push(event);
    }

    /// Record the log position only once the held events are handled: a
    /// crash before would otherwise lose them.
    pub(super) fn hold_cursor(&mut self, cursor: Cursor) {
        self.held_cursor = Some(cursor);
    }

    /// The table is answered: what waited for it.
    fn answered(&mut self) -> (Vec<TrackerEvent>, Option<Cursor>) {
        self.asked = false;
        (std::mem::take(&mut self.held), self.held_cursor.take())
    }
}

impl Tasks {
    /// The answer to `ReadMountTable`: follow the project's mounts, then
    /// handle the events that waited for it and record their position.
    pub(in crate::core::engine) fn on_mount_table(&mut self, table: MountTable, cx: &mut Cx) {
        let (held, cursor) = self.mounts.answered();
        if by_directory(cx.config) {
            match table {
                MountTable::Read {
                    ours,
                    others,
                    errors,
                } => {
                    self.said.remove("mtab-missing");
                    self.report_table_errors(errors, cx);
                    self.follow(ours, others, cx);
                }
                MountTable::Missing => {
                    self.say_table_missing(cx);
                    self.follow(Vec::new(), 0, cx);
                }
                MountTable::Failed(e) => cx.fx.push(Effect::Log(
                    Log::new(
                        Level::Error,
                        format!("cannot read the 9beads mount table: {e}"),
                    )
                    .file("mtab"),
                )),
            }
        }
        for event in held {
            let ours = event
                .mount()
                .is_some_and(|m| self.mounts.source(cx.config, m).is_some());
            if ours {
                self.on_event(event, cx);
            }
        }
        self.read_dirty(cx);
        if let Some(cursor) = cursor {
            cx.ledger.record(Record::Cursor { cursor }, cx.fx);
        }
    }

    /// The event log started over: 9beads restarted and forgot its mounts,
    /// so the project's mount names are looked up again.
    pub(in crate::core::engine) fn on_tracker_restarted(&mut self, why: &str, cx: &mut Cx) {
        cx.fx.push(Effect::Log(Log::new(
            Level::Warn,
            format!("tracker event log {why}: reading it again from the start"),
        )));
        self.mounts.ask(cx.config, cx.fx);
    }

    /// Make `ours` the project's mounts: say which went and which came,
    /// and read each that came (what became ready while it was away is
    /// announced; nothing it shows again is).
    fn follow(&mut self, ours: Vec<ProjectMount>, others: usize, cx: &mut Cx) {
        let now: BTreeMap<String, Source> = ours
            .into_iter()
            .map(|m| (m.name, Source::NineBeads(m.cwd)))
            .collect();
        let before = std::mem::replace(&mut self.mounts.found, now.clone());
        for (name, source) in before.iter().filter(|(n, _)| !now.contains_key(*n)) {
            let log = Log::new(
                Level::Info,
                format!("tracker unmounted {name} ({})", dir(source)),
            );
            cx.fx.push(Effect::Log(log.mount(name)));
        }
        for (name, source) in now.iter().filter(|(n, _)| !before.contains_key(*n)) {
            self.adopt_named(source, cx);
            let was = self.mounts.last.insert(source.clone(), name.clone());
            if was.as_deref() != Some(name.as_str()) {
                self.mounts.retell.insert(source.clone());
            }
            let was = was
                .filter(|w| w != name)
                .map(|w| format!("; it was {w}"))
                .unwrap_or_default();
            let log = Log::new(
                Level::Info,
                format!(
                    "tracker mounted {name} ({}): the project's 9beads mount{was}",
                    dir(source)
                ),
            );
            cx.fx.push(Effect::Log(log.mount(name)));
            self.dirty_mounts.insert(name.clone());
        }
        if !now.is_empty() {
            self.said.remove("mtab-none");
        } else if others > 0 {
            let log = Log::new(
                Level::Info,
                format!("none of the {others} 9beads mounts in mtab is this project's directory ([project] dir); waiting for its mount"),
            );
            self.say_once("mtab-none".into(), log.file("mtab"), cx);
        }
    }

    /// What a name-following run of this project remembered under
    /// `mount:<name>` (version 1's default followed the mount named like
    /// the project) is adopted by the project's 9beads source, so a bead it
    /// announced is not announced again. A directory-following run makes
    /// no such sources: any in memory are from before.
    fn adopt_named(&mut self, to: &Source, cx: &mut Cx) {
        let announced = cx.ledger.tasks().sources();
        let pending = cx.ledger.outbox().prompts().map(|p| &p.source);
        let named: BTreeSet<Source> = announced
            .chain(pending)
            .filter(|s| matches!(s, Source::Mount(_)))
            .cloned()
            .collect();
        for from in named {
            cx.fx.push(Effect::Log(Log::new(
                Level::Info,
                format!("what was remembered of {from} (a mount followed by name) is {to}'s now"),
            )));
            cx.ledger.record(
                Record::Adopt {
                    from,
                    to: to.clone(),
                },
                cx.fx,
            );
            self.mounts.retell.insert(to.clone());
        }
    }

    fn say_table_missing(&mut self, cx: &mut Cx) {
        let log = Log::new(
            Level::Warn,
            format!(
                "no 9beads mount table at {}/mtab (9beads is not running, or too old to have one; name the mounts in [events] mounts then): no mount is followed until it appears",
                cx.config.beads_root
            ),
        );
        self.say_once("mtab-missing".into(), log.file("mtab"), cx);
    }

    fn report_table_errors(&mut self, errors: Vec<LineError>, cx: &mut Cx) {
        for e in errors {
            let log = Log::new(Level::Warn, format!("mtab: {e}; line skipped"))
                .file("mtab")
                .line(e.line);
            self.say_once(format!("mtab:{e}"), log, cx);
        }
    }
}

/// The directory of a 9beads source, for the journal.
fn dir(source: &Source) -> &str {
    match source {
        Source::NineBeads(cwd) => cwd,
        _ => "-",
    }
}
