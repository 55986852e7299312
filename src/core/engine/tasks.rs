//! The tracker side of the engine: 9beads event lines and mount ready
//! files, and a beads `issues.jsonl`. Same rule as for plans —
//! `newly_ready = ready − announced` — with tasks instead of steps, plus the
//! two other triggers: a claim announced to the assignee's session, and a
//! completion told to the session the task was announced to.
//!
//! Here: the part's state, the events and what each one means. Beside it:
//! which mounts are the project's (`mounts.rs`), a mount's ready list
//! (`ready.rs`), pending prompts following a mount's new name
//! (`retell.rs`), the prompts' texts (`text.rs`), a task's notes
//! (`notes.rs`), what a reminder names of an open task (`open.rs`) and the
//! beads file (`beads_file.rs`).

use std::collections::{BTreeMap, BTreeSet};

use super::context::Cx;
use super::ledger::Wake;
use super::timers::Recheck;
use crate::core::effect::{Effect, Level, Log};
use crate::core::input::FileRead;
use crate::core::lines::quoted;
use crate::core::lines::LineError;
use crate::core::memory::TaskMemory;
use crate::core::record::{Cursor, Item, Note, Record};
use crate::core::source::Source;
use crate::core::tracker::{parse_event, parse_ready, EventError, TrackerEvent};
use mounts::{by_directory, Mounts};
use notes::{forget_held, forget_notes, hold, mark_claimed, prune_notes, unmark_claimed};
use text::Facts;

/// The tracker part: 9beads mounts and events, and the beads file.
#[derive(Debug, Default)]
pub(super) struct Tasks {
    /// Which mounts are the project's, under which source.
    mounts: Mounts,
    /// Mounts with tracker events since their ready file was last read.
    dirty_mounts: BTreeSet<String>,
    /// Mounts with no ready file: announced from their events alone.
    events_only: BTreeSet<String>,
    /// Things said once (unknown event types, unroutable assignees, …).
    said: BTreeSet<String>,
    /// Line errors of the current issues.jsonl, so a rewrite with the same
    /// broken line does not log it again.
    beads_errors: BTreeSet<String>,
    /// Mount ready files read fresh and waiting for a settled re-read (a
    /// FUSE file may always look fresh: counted).
    mount_rechecks: BTreeMap<String, Recheck>,
    /// Tracker task titles by source and id, for claim/completed prompts
    /// (read by the engine tests too: they bound it).
    pub(super) task_titles: BTreeMap<(Source, String), String>,
    /// The assignee of each ready task that has one, as its source last
    /// listed it: a task claimed by someone else's assignee is not open
    /// work of the session it was announced to (no reminder).
    task_assignees: BTreeMap<(Source, String), String>,
    /// Per mount, beads claimed by a current-shape `claimed` event (which
    /// names no assignee) whose claimer is still to be read from the
    /// mount's `list` file.
    unresolved_claims: BTreeMap<String, BTreeSet<String>>,
}

/// A task that is ready now, as a source reports it.
struct ReadyTask {
    id: String,
    title: String,
    assignee: Option<String>,
}

impl Tasks {
    /// The project's 9beads mount names now (for resyncs and refills).
    pub(super) fn mount_names(&self, config: &super::EngineConfig) -> Vec<String> {
        self.mounts.names(config)
    }

    /// The name `source`'s mount has now, if it is mounted: where its
    /// tasks are closed.
    pub(super) fn mount_of<'a>(&'a self, source: &'a Source) -> Option<&'a str> {
        self.mounts.name_of(source)
    }

    /// Say something once per `key` for the daemon's lifetime.
    fn say_once(&mut self, key: String, log: Log, cx: &mut Cx) {
        if self.said.insert(key) {
            cx.fx.push(Effect::Log(log));
        }
    }

    /// The session a task goes to: its assignee's, else the default.
    fn task_route(
        &mut self,
        source: &Source,
        assignee: Option<&str>,
        cx: &mut Cx,
    ) -> Option<String> {
        if let Some(s) = assignee.and_then(|a| cx.config.assignees.get(a)) {
            return Some(s.clone());
        }
        if let Some(s) = &cx.config.default_session {
            return Some(s.clone());
        }
        let who = assignee.unwrap_or("-");
        self.say_once(
            format!("route:{source}:{who}"),
            Log::new(
                Level::Warn,
                format!("tasks of {source} assigned to {who:?} have no session ([events.assignees] has no entry and no default_session): tracked, nobody woken"),
            ),
            cx,
        );
        None
    }

    pub(super) fn on_tracker_lines(
        &mut self,
        lines: Vec<(u64, Vec<u8>)>,
        cursor: Cursor,
        cx: &mut Cx,
    ) {
        for (offset, line) in lines {
            match parse_event(&line) {
                Ok(event) => self.on_event(event, cx),
                Err(EventError::Empty) => {}
                Err(e) => cx.fx.push(Effect::Log(
                    Log::new(
                        Level::Warn,
                        format!("tracker event at byte offset {offset} skipped: {e}"),
                    )
                    .file("events"),
                )),
            }
        }
        if self.mounts.asked() {
            // The mount table is read first; its answer handles the events
            // that wait for it, reads and records the position.
            self.mounts.hold_cursor(cursor);
            return;
        }
        self.read_dirty(cx);
        // After the reads it causes: a crash before this record re-reads the
        // lines, which only repeats idempotent diffs.
        cx.ledger.record(Record::Cursor { cursor }, cx.fx);
    }

    /// Read the mounts that had events: each one's `list` first where a
    /// claim waits for its claimer, then its `ready`.
    fn read_dirty(&mut self, cx: &mut Cx) {
        for mount in std::mem::take(&mut self.dirty_mounts) {
            // A current-shape `claimed` names no assignee; 9beads keeps it
            // in the mount's `list`. The list is read first, so the claim is
            // told while the task is still announced to the session it
            // went to.
            if self.unresolved_claims.contains_key(&mount) {
                cx.fx.push(Effect::ReadMountList {
                    mount: mount.clone(),
                });
            }
            cx.fx.push(Effect::ReadMount { mount });
        }
    }

    fn on_event(&mut self, event: TrackerEvent, cx: &mut Cx) {
        let source = match event.mount() {
            Some(mount) => match self.mounts.source(cx.config, mount) {
                Some(source) => source,
                // Perhaps a mount the table being read will show as ours.
                None if self.mounts.asked() => return self.mounts.hold(event),
                None => return,
            },
            None => return self.on_mount_event(event, cx),
        };
        match event {
            TrackerEvent::Created { mount, .. } | TrackerEvent::Updated { mount, .. } => {
                // `updated`: a bead file written with front matter — its
                // status, blockers or title may have changed.
                self.dirty_mounts.insert(mount);
            }
            TrackerEvent::Failed { id, mount } => {
                self.on_closed(&source, &mount, id, "it failed", cx)
            }
            TrackerEvent::Deleted { id, mount } => {
                forget_notes(&source, &id, cx);
                self.on_closed(&source, &mount, id, "it was deleted", cx)
            }
            TrackerEvent::Completed { id, mount } => {
                self.tell_completed(&source, &id, cx);
                self.on_closed(&source, &mount, id, "it was completed", cx)
            }
            TrackerEvent::Claimed {
                id,
                mount,
                assignee,
            } => self.on_claimed(&source, id, mount, assignee, cx),
            TrackerEvent::Ready {
                id,
                mount,
                title,
                assignee,
            } => {
                let task = ReadyTask {
                    title: title.unwrap_or_else(|| id.clone()),
                    id,
                    assignee,
                };
                self.on_ready_event(&source, task, mount, cx)
            }
            TrackerEvent::Mount { .. }
            | TrackerEvent::Umount { .. }
            | TrackerEvent::Unknown { .. } => {}
        }
    }

    /// `mount`, `umount` and unknown types. Found by directory, the mount
    /// table says what a mount event means for the project (an event in a
    /// log read again may be long out of date); named, a mount event of
    /// one of the names is followed by a read of its ready file.
    fn on_mount_event(&mut self, event: TrackerEvent, cx: &mut Cx) {
        let by_dir = by_directory(cx.config);
        let named = |name: &str| !by_dir && cx.config.mounts.iter().any(|m| m == name);
        match event {
            TrackerEvent::Mount { name, cwd } if by_dir => {
                let cwd = cwd.as_deref().unwrap_or("-");
                let log = Log::new(Level::Debug, format!("tracker mount event: {name} ({cwd})"));
                cx.fx.push(Effect::Log(log.mount(&name)));
                self.mounts.ask(cx.config, cx.fx);
            }
            TrackerEvent::Umount { name } if by_dir => {
                let log = Log::new(Level::Debug, format!("tracker umount event: {name}"));
                cx.fx.push(Effect::Log(log.mount(&name)));
                self.mounts.ask(cx.config, cx.fx);
            }
            TrackerEvent::Mount { name, cwd } if named(&name) => {
                let cwd = cwd.as_deref().unwrap_or("-");
                let log = Log::new(Level::Info, format!("tracker mounted {name} ({cwd})"));
                cx.fx.push(Effect::Log(log.mount(&name)));
                self.dirty_mounts.insert(name);
            }
            TrackerEvent::Umount { name } if named(&name) => {
                let log = Log::new(Level::Info, format!("tracker unmounted {name}"));
                cx.fx.push(Effect::Log(log.mount(&name)));
            }
            TrackerEvent::Unknown { type_name } => self.say_once(
                format!("type:{type_name}"),
                Log::new(
                    Level::Info,
                    format!(
                        "tracker event type {} is not one reveille acts on; skipped (said once)",
                        quoted(&type_name)
                    ),
                )
                .file("events"),
                cx,
            ),
            _ => {}
        }
    }

    /// A claim: one with its assignee (the older `BeadClaimed` carries it
    /// in `data`) is announced at once; one without waits for the mount's
    /// `list` row, read before its ready file.
    fn on_claimed(
        &mut self,
        source: &Source,
        id: String,
        mount: String,
        assignee: Option<String>,
        cx: &mut Cx,
    ) {
        self.dirty_mounts.insert(mount.clone());
        match assignee {
            Some(assignee) => self.announce_claim(source, &mount, &id, &assignee, None, cx),
            None => {
                self.unresolved_claims.entry(mount).or_default().insert(id);
            }
        }
    }

    /// Announce that `assignee` claimed bead `id` to the session the
    /// assignee maps to, once per (bead, assignee); that session holds the
    /// task from now on (a later `completed` is told there, when
    /// `notify_completed` is on: nothing else reads it). An assignee
    /// with no `[events.assignees]` entry — 9beads' default claimer, the
    /// literal `9beads`, included — is said once and wakes nobody.
    fn announce_claim(
        &mut self,
        source: &Source,
        mount: &str,
        id: &str,
        assignee: &str,
        title: Option<&str>,
        cx: &mut Cx,
    ) {
        let item = Note::Claim(id.to_string(), assignee.to_string()).into();
        if cx.ledger.tasks().contains(source, &item) {
            return;
        }
        let Some(session) = cx.config.assignees.get(assignee).cloned() else {
            self.say_once(
                format!("claim-route:{assignee}"),
                Log::new(
                    Level::Info,
                    format!("claims by {assignee:?} are not announced: no [events.assignees] entry maps it to a session"),
                )
                .mount(mount),
                cx,
            );
            return;
        };
        let title = title.map_or_else(|| self.title_of(source, id), str::to_string);
        let name = source.to_string();
        let facts = Facts {
            id,
            title: &title,
            mount,
            assignee: Some(assignee),
            session: &session,
            source: &name,
        };
        let text = text::render(cx.config, &cx.config.templates.claim, &facts);
        prune_notes(source, cx);
        let wake = Wake {
            item,
            session: &session,
            label: id.to_string(),
            plan: name,
            text,
        };
        if !cx
            .ledger
            .announce(cx.config.outbox_cap, source, wake, cx.fx)
        {
            return;
        }
        mark_claimed(source, id, &session, cx);
        if cx.config.notify_completed {
            hold(source, id, &title, &session, cx);
        }
    }

    /// The answer to `ReadMountList`: the claimers of the beads claimed
    /// with no assignee in the event, from their `list` rows.
    pub(super) fn on_mount_list_read(&mut self, mount: &str, read: FileRead, cx: &mut Cx) {
        let claimed = self.unresolved_claims.remove(mount).unwrap_or_default();
        let Some(source) = self.mounts.source(cx.config, mount) else {
            return;
        };
        let text = match read {
            FileRead::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
            FileRead::Missing | FileRead::Failed(_) | FileRead::Oversized { .. } => {
                cx.fx.push(Effect::Log(
                    Log::new(
                        Level::Warn,
                        format!(
                            "cannot read {mount}/list to learn who claimed {}: claim not announced",
                            claimed.iter().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    )
                    .mount(mount),
                ));
                return;
            }
        };
        let (rows, errors) = parse_ready(&text);
        self.report_row_errors(mount, "list", errors, cx);
        for row in rows.into_iter().filter(|r| claimed.contains(&r.id)) {
            // Unclaimed again, or closed, since the event: nothing to tell.
            if row.status != "in_progress" {
                continue;
            }
            if let Some(assignee) = &row.assignee {
                let title = (!row.title.is_empty()).then_some(row.title.as_str());
                self.announce_claim(&source, mount, &row.id, assignee, title, cx);
            }
        }
    }

    /// Malformed rows of a mount's `ready` or `list` file: one warning per
    /// row, naming the file and the line, said once.
    fn report_row_errors(&mut self, mount: &str, file: &str, errors: Vec<LineError>, cx: &mut Cx) {
        for e in errors {
            self.say_once(
                format!("rowerr:{mount}/{file}:{e}"),
                Log::new(Level::Warn, format!("{mount}/{file}: {e}; row skipped"))
                    .mount(mount)
                    .file(&format!("{mount}/{file}"))
                    .line(e.line),
                cx,
            );
        }
    }

    /// A closed or deleted bead leaves at once (9beads appends the event
    /// after the change, so its lists already agree): a prompt still
    /// pending for it is withdrawn, and it is not mistaken for a task
    /// someone still holds when the ready list shows it gone.
    fn on_closed(&mut self, source: &Source, mount: &str, id: String, why: &str, cx: &mut Cx) {
        forget_held(source, &id, cx);
        unmark_claimed(source, &id, cx);
        cx.ledger.unannounce(source, Item::task(id), why, cx.fx);
        self.dirty_mounts.insert(mount.to_string());
    }

    /// A legacy ready event: the news itself for a mount with no ready file
    /// (`events_only`), else a reason to read the ready file.
    fn on_ready_event(&mut self, source: &Source, task: ReadyTask, mount: String, cx: &mut Cx) {
        if self.events_only.contains(&mount) {
            self.announce_tasks(source, vec![task], Some(&mount), cx);
        } else {
            self.dirty_mounts.insert(mount);
        }
    }

    /// Keep the titles of a source's tasks that are still announced
    /// (claim and completion prompts name them); `announce_tasks` adds the
    /// ready ones back. Without this the map held every task ever seen (a
    /// slow, unbounded growth found by the soak test in tests/reliability).
    fn prune_titles(&mut self, source: &Source, memory: &TaskMemory) {
        // A held task carries its own title.
        let announced: BTreeSet<&str> = memory.ids(source).collect();
        self.task_titles
            .retain(|(s, id), _| s != source || announced.contains(id.as_str()));
        self.task_assignees
            .retain(|(s, id), _| s != source || announced.contains(id.as_str()));
    }

    fn title_of(&self, source: &Source, id: &str) -> String {
        self.task_titles
            .get(&(source.clone(), id.to_string()))
            .cloned()
            .unwrap_or_else(|| id.to_string())
    }

    /// `notify_completed`: tell the session a task was announced to that it
    /// was completed elsewhere.
    fn tell_completed(&mut self, source: &Source, id: &str, cx: &mut Cx) {
        if !cx.config.notify_completed {
            return;
        }
        // The session that had the task: it is still announced there, or
        // it left the ready set (claimed, blocked) and is held there.
        let tasks = cx.ledger.tasks();
        let announced = tasks
            .task_announced_to(source, id)
            .map(|s| (s.to_string(), self.title_of(source, id)));
        let Some((session, title)) = announced.or_else(|| tasks.holder(source, id)) else {
            return;
        };
        let item = Note::Completed(id.to_string()).into();
        if tasks.contains(source, &item) {
            return;
        }
        let name = source.to_string();
        let facts = Facts {
            id,
            title: &title,
            mount: self.mounts.name_of(source).unwrap_or("-"),
            assignee: None,
            session: &session,
            source: &name,
        };
        let text = text::render(cx.config, &cx.config.templates.completed, &facts);
        prune_notes(source, cx);
        let wake = Wake {
            item,
            session: &session,
            label: id.to_string(),
            plan: name,
            text,
        };
        cx.ledger
            .announce(cx.config.outbox_cap, source, wake, cx.fx);
    }
}

mod beads_file;
mod mounts;
mod notes;
mod open;
mod ready;
mod retell;
mod text;
