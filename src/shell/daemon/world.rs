//! The daemon's side of the driver: what carrying out an engine effect
//! means here — the journal, plan and tracker files, delivery, child
//! sessions — and the journal entries the engine's logs become.

use std::path::{Path, PathBuf};

use crate::config::Settings;
use crate::core::driver::World;
use crate::core::effect::{Delivery, Level, Log, Notice, Spawn};
use crate::core::engine::EngineConfig;
use crate::core::input::{FileRead, Input, MountTable, Reached, Undeliverable};
use crate::core::record::Record;
use crate::core::session::check_name;
use crate::core::source::Source;
use crate::shell::logging;
use crate::shell::notices::Notices;
use crate::shell::read::{read_capped, read_fresh};

use super::agents::Agents;
use super::journal::Journal;
use super::watching::Watching;

/// Tracker files (ready lists, issues.jsonl) larger than this are refused.
const TRACKER_FILE_CAP: usize = 256 << 20;

/// Emit an engine log entry as a tracing event with structured fields.
/// `PLAN=` carries the bare plan identity (`<stamp>_<uid>`) for markdown
/// plans, so `journalctl PLAN=20261130T101500_a1b2c3d4` works.
pub(super) fn emit(settings: &Settings, l: &Log) {
    let project = &settings.project.name;
    let plan = l.plan.as_ref().map(Source::journal_name);
    let (file, plan_name) =
        logging::journal_file(l, &settings.project.plan_dir, &settings.sessions.dir);
    macro_rules! ev {
        ($lvl:expr) => {
            tracing::event!(
                $lvl,
                project = %project,
                plan = plan.as_deref(),
                step = l.step.as_deref(),
                session = l.session.as_deref(),
                parent = l.parent.as_deref(),
                mount = l.mount.as_deref(),
                file = file.as_deref(),
                plan_name = plan_name.as_deref(),
                line = l.line.map(|n| n as u64),
                reminder = l.reminder,
                waiting = l.waiting,
                "{}",
                l.message
            )
        };
    }
    match l.level() {
        Level::Debug => ev!(tracing::Level::DEBUG),
        Level::Info => ev!(tracing::Level::INFO),
        Level::Warn => ev!(tracing::Level::WARN),
        Level::Error => ev!(tracing::Level::ERROR),
    }
}

/// `<beads_root>/<mount>/ready`. Mount names come from configuration or
/// from events, where they were validated as one path component.
pub(super) fn mount_read(settings: &Settings, mount: &str) -> (FileRead, bool) {
    match check_name(mount) {
        Ok(()) => read_fresh(
            &settings.events.beads_root.join(mount).join("ready"),
            TRACKER_FILE_CAP,
            settings.project.settle,
        ),
        Err(why) => (FileRead::Failed(format!("mount name {why}")), false),
    }
}

/// `<beads_root>/<mount>/list`, where 9beads keeps a claimed bead's
/// assignee. Read whole at once: a synthetic file has no half-written
/// state, and a claim is told from it at most once.
pub(super) fn mount_list_read(settings: &Settings, mount: &str) -> FileRead {
    match check_name(mount) {
        Ok(()) => read_capped(
            &settings.events.beads_root.join(mount).join("list"),
            TRACKER_FILE_CAP,
        ),
        Err(why) => FileRead::Failed(format!("mount name {why}")),
    }
}

/// `<beads_root>/mtab`, its mounts judged against `project.dir`.
pub(super) fn mount_table_read(settings: &Settings) -> MountTable {
    crate::shell::mtab::read_mount_table(&settings.events.beads_root, &settings.project.dir)
}

pub(super) fn beads_read(settings: &Settings) -> Option<(FileRead, i64)> {
    let path = settings.beads.issues_jsonl.as_ref()?;
    Some((
        read_capped(path, TRACKER_FILE_CAP),
        crate::shell::wall::unix_s(),
    ))
}

/// The daemon's side of the driver: the journal, the files, the FIFOs.
/// It borrows the daemon's parts beside the engine, so the engine and the
/// world it drives are two disjoint borrows.
pub(super) struct Carry<'a> {
    pub(super) settings: &'a Settings,
    pub(super) journal: &'a mut Journal,
    pub(super) watching: &'a mut Watching,
    pub(super) agents: &'a mut Agents,
    pub(super) notices: &'a mut Notices,
    /// Whether a prompt was written here and now (a pipe, a file): its
    /// outcome never comes back as an input, yet `sessions.json` shows it.
    pub(super) told: bool,
}

impl World for Carry<'_> {
    fn record(&mut self, record: &Record) {
        self.persist(record);
        // A session of an agent program given work is followed from now
        // on: one that waits to be seen idle (opencode) gets nothing
        // before, and an idle one is reminded only if it is followed.
        if let Record::Announce {
            session: Some(session),
            pending: Some(_),
            ..
        } = record
        {
            self.agents.backends.observe(session);
        }
    }

    fn log(&mut self, log: Log) {
        emit(self.settings, &log);
    }

    fn read_plan(&mut self, path: &Path, config: &EngineConfig) -> (FileRead, bool) {
        // A session checklist on the tree, just read by the `idx` worker:
        // not read again from a mount that may hang (a synthetic file,
        // never modified "just now" by its mtime).
        if let Some(bytes) = self.agents.tree.checklists().and_then(|c| c.take(path)) {
            let cap = config.max_plan_bytes;
            if bytes.len() > cap {
                let size = bytes.len() as u64;
                return (FileRead::Oversized { size, cap }, false);
            }
            return (FileRead::Bytes(bytes), false);
        }
        self.watching
            .plan_files
            .read(path, config.max_plan_bytes, config.settle)
    }

    fn list(&mut self) -> Vec<PathBuf> {
        self.watching.watch.list()
    }

    fn read_mount(&mut self, mount: &str) -> (FileRead, bool) {
        mount_read(self.settings, mount)
    }

    fn read_mount_list(&mut self, mount: &str) -> FileRead {
        mount_list_read(self.settings, mount)
    }

    fn read_mount_table(&mut self) -> MountTable {
        mount_table_read(self.settings)
    }

    fn read_beads(&mut self) -> Option<(FileRead, i64)> {
        beads_read(self.settings)
    }

    fn notify(&mut self, notice: &Notice) {
        self.notices.tell(self.settings, notice);
    }

    fn spawn(&mut self, spawn: &Spawn) -> Option<Input> {
        self.agents.backends.spawn(spawn)
    }

    fn reap(&mut self, child: &str) {
        self.agents.backends.reap(child);
    }

    /// A look is part of its delivery, still counted in the background.
    fn look(&mut self, d: &Delivery) -> Option<Input> {
        self.agents.backends.look(d)
    }

    fn deliver(&mut self, d: &Delivery) -> Option<Result<Reached, Undeliverable>> {
        // Every record so far is written before the prompt is.
        self.flush();
        let outcome = self.agents.backends.deliver(d);
        if outcome.is_none() {
            self.agents.background += 1;
        }
        // In flight, or told: either is shown.
        self.told = true;
        outcome
    }
}

impl Carry<'_> {
    pub(super) fn persist(&mut self, record: &Record) {
        self.journal.persist(self.settings, record);
    }

    /// Write the staged records (one `write(2)`): before every delivery and
    /// at the end of every input.
    pub(super) fn flush(&mut self) {
        self.journal.flush(self.settings);
    }
}
