//! The tracker side of the engine: 9beads event lines and mount ready
//! files, and a beads `issues.jsonl`. Same rule as for plans —
//! `newly_ready = ready − announced` — with tasks instead of steps, plus the
//! two other triggers: a claim announced to the assignee's session, and a
//! completion told to the session the task was announced to.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{Engine, Now};
use crate::core::beads;
use crate::core::effect::{Effect, Level, Log};
use crate::core::input::FileRead;
use crate::core::lines::quoted;
use crate::core::prompt;
use crate::core::record::{Announced, Cursor, Item, Record};
use crate::core::tracker::{parse_event, parse_ready, EventError, TrackerEvent};

/// Claim and completion notes kept per source for de-duplication when a
/// truncated log is read again; beyond this the oldest ids are forgotten.
const MAX_NOTES: usize = 4096;

/// Longest title a `Held` note keeps, in bytes.
const MAX_HELD_TITLE: usize = 512;

/// The source key of a 9beads mount.
pub fn mount_source(mount: &str) -> String {
    format!("mount:{mount}")
}

/// The source key of the beads `issues.jsonl`.
pub const BEADS_SOURCE: &str = "beads";

/// A task that is ready now, as a source reports it.
struct ReadyTask {
    id: String,
    title: String,
    assignee: Option<String>,
}

impl Engine {
    /// Say something once per `key` for the daemon's lifetime.
    fn say_once(&mut self, key: String, log: Log, fx: &mut Vec<Effect>) {
        if self.said.insert(key) {
            fx.push(Effect::Log(log));
        }
    }

    /// The session a task goes to: its assignee's, else the default.
    fn task_route(
        &mut self,
        source: &str,
        assignee: Option<&str>,
        fx: &mut Vec<Effect>,
    ) -> Option<String> {
        if let Some(s) = assignee.and_then(|a| self.config.assignees.get(a)) {
            return Some(s.clone());
        }
        if let Some(s) = &self.config.default_session {
            return Some(s.clone());
        }
        let who = assignee.unwrap_or("-");
        self.say_once(
            format!("route:{source}:{who}"),
            Log::new(
                Level::Warn,
                format!("tasks of {source} assigned to {who:?} have no session ([events.assignees] has no entry and no default_session): tracked, nobody woken"),
            ),
            fx,
        );
        None
    }

    pub(super) fn on_tracker_lines(
        &mut self,
        lines: Vec<(u64, Vec<u8>)>,
        cursor: Cursor,
        fx: &mut Vec<Effect>,
    ) {
        for (offset, line) in lines {
            match parse_event(&line) {
                Ok(event) => self.on_event(event, fx),
                Err(EventError::Empty) => {}
                Err(e) => fx.push(Effect::Log(
                    Log::new(
                        Level::Warn,
                        format!("tracker event at byte offset {offset} skipped: {e}"),
                    )
                    .file("events"),
                )),
            }
        }
        for mount in std::mem::take(&mut self.dirty_mounts) {
            // A current-shape `claimed` names no assignee; 9beads keeps it
            // only in the mount's `list` (the bead is `in_progress` now, out
            // of `ready`). The list is read first, so the claim is told
            // while the task is still announced to the session it went to.
            if self.unresolved_claims.contains_key(&mount) {
                fx.push(Effect::ReadMountList {
                    mount: mount.clone(),
                });
            }
            fx.push(Effect::ReadMount { mount });
        }
        // After the reads it causes: a crash before this record re-reads the
        // lines, which only repeats idempotent diffs.
        self.record(Record::Cursor { cursor }, fx);
    }

    fn ours(&self, mount: &str) -> bool {
        self.config.mounts.iter().any(|m| m == mount)
    }

    fn on_event(&mut self, event: TrackerEvent, fx: &mut Vec<Effect>) {
        match event {
            TrackerEvent::Created { mount, .. } | TrackerEvent::Updated { mount, .. } => {
                if self.ours(&mount) {
                    self.dirty_mounts.insert(mount);
                }
            }
            TrackerEvent::Failed { id, mount } => self.on_closed(&mount, id, "it failed", fx),
            TrackerEvent::Deleted { id, mount } => {
                if self.ours(&mount) {
                    self.forget_notes(&mount_source(&mount), &id, fx);
                }
                self.on_closed(&mount, id, "it was deleted", fx)
            }
            TrackerEvent::Completed { id, mount } => {
                if self.ours(&mount) {
                    self.tell_completed(&mount_source(&mount), &id, fx);
                }
                self.on_closed(&mount, id, "it was completed", fx)
            }
            TrackerEvent::Claimed {
                id,
                mount,
                assignee,
            } => {
                if !self.ours(&mount) {
                    return;
                }
                self.dirty_mounts.insert(mount.clone());
                match assignee {
                    // The older `BeadClaimed` carries it in `data`.
                    Some(assignee) => self.announce_claim(&mount, &id, &assignee, None, fx),
                    None => {
                        self.unresolved_claims.entry(mount).or_default().insert(id);
                    }
                }
            }
            TrackerEvent::Ready {
                id,
                mount,
                title,
                assignee,
            } => {
                if !self.ours(&mount) {
                    return;
                }
                if self.events_only(&mount) {
                    // No ready file to read: the legacy event is the news.
                    let task = ReadyTask {
                        title: title.unwrap_or_else(|| id.clone()),
                        id,
                        assignee,
                    };
                    self.announce_tasks(&mount_source(&mount), vec![task], Some(&mount), fx);
                } else {
                    self.dirty_mounts.insert(mount);
                }
            }
            TrackerEvent::Mount { name, cwd } => {
                if self.ours(&name) {
                    fx.push(Effect::Log(
                        Log::new(
                            Level::Info,
                            format!("tracker mounted {name} ({})", cwd.as_deref().unwrap_or("-")),
                        )
                        .mount(&name),
                    ));
                    self.dirty_mounts.insert(name);
                }
            }
            TrackerEvent::Umount { name } => {
                if self.ours(&name) {
                    fx.push(Effect::Log(
                        Log::new(Level::Info, format!("tracker unmounted {name}")).mount(&name),
                    ));
                }
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
                fx,
            ),
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
        mount: &str,
        id: &str,
        assignee: &str,
        title: Option<&str>,
        fx: &mut Vec<Effect>,
    ) {
        let source = mount_source(mount);
        let item = Item::Claim(id.to_string(), assignee.to_string());
        if self.memory.is_announced(&source, &item) {
            return;
        }
        let Some(session) = self.config.assignees.get(assignee).cloned() else {
            self.say_once(
                format!("claim-route:{assignee}"),
                Log::new(
                    Level::Info,
                    format!("claims by {assignee:?} are not announced: no [events.assignees] entry maps it to a session"),
                )
                .mount(mount),
                fx,
            );
            return;
        };
        let title = title.map_or_else(|| self.title_of(&source, id), str::to_string);
        let text = prompt::render(
            &self.config.templates.claim,
            &task_vars(id, &title, mount, Some(assignee), &session, &source),
        );
        self.prune_notes(&source, fx);
        if self.announce(
            &source,
            item,
            &session,
            id.to_string(),
            source.clone(),
            text,
            fx,
        ) && self.config.notify_completed
        {
            self.hold(&source, id, &title, &session, fx);
        }
    }

    /// The answer to `ReadMountList`: the claimers of the beads claimed
    /// with no assignee in the event, from their `list` rows.
    pub(super) fn on_mount_list_read(&mut self, mount: &str, read: FileRead, fx: &mut Vec<Effect>) {
        let claimed = self.unresolved_claims.remove(mount).unwrap_or_default();
        let text = match read {
            FileRead::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
            FileRead::Missing | FileRead::Failed(_) => {
                fx.push(Effect::Log(
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
        self.report_row_errors(mount, "list", errors, fx);
        for row in rows.into_iter().filter(|r| claimed.contains(&r.id)) {
            // Unclaimed again, or closed, since the event: nothing to tell.
            if row.status != "in_progress" {
                continue;
            }
            if let Some(assignee) = &row.assignee {
                let title = (!row.title.is_empty()).then_some(row.title.as_str());
                self.announce_claim(mount, &row.id, assignee, title, fx);
            }
        }
    }

    /// Record who holds task `id` now (see `Item::Held`). The title is cut
    /// to [`MAX_HELD_TITLE`] bytes: it is part of a key in the state file.
    fn hold(&mut self, source: &str, id: &str, title: &str, session: &str, fx: &mut Vec<Effect>) {
        self.forget_held(source, id, fx);
        let mut cut = title.len().min(MAX_HELD_TITLE);
        while !title.is_char_boundary(cut) {
            cut -= 1;
        }
        let title = &title[..cut];
        self.record(
            Record::Announce {
                source: source.to_string(),
                item: Item::Held(id.to_string(), title.to_string()),
                session: Some(session.to_string()),
                baseline: false,
                pending: None,
            },
            fx,
        );
    }

    /// The `Held` note of task `id`, if any: found by a range lookup (the
    /// notes of one id sort together), not a scan of every announced item.
    fn held_item(&self, source: &str, id: &str) -> Option<(&Item, &Announced)> {
        let items = self.memory.announced.get(source)?;
        let from = Item::Held(id.to_string(), String::new());
        items
            .range(from..)
            .next()
            .filter(|(item, _)| matches!(item, Item::Held(c, _) if c == id))
    }

    /// Who holds task `id`: (session, title), if anyone.
    fn holder(&self, source: &str, id: &str) -> Option<(String, String)> {
        match self.held_item(source, id)? {
            (Item::Held(_, title), a) => Some((a.session.clone()?, title.clone())),
            _ => None,
        }
    }

    fn forget_held(&mut self, source: &str, id: &str, fx: &mut Vec<Effect>) {
        if let Some((item, _)) = self.held_item(source, id) {
            let item = item.clone();
            self.forget_item(source, item, fx);
        }
    }

    fn forget_item(&mut self, source: &str, item: Item, fx: &mut Vec<Effect>) {
        if self.memory.is_announced(source, &item) {
            self.record(
                Record::Forget {
                    source: source.to_string(),
                    item,
                },
                fx,
            );
        }
    }

    /// Malformed rows of a mount's list file: one warning per row, naming
    /// the file and the line, said once.
    fn report_row_errors(
        &mut self,
        mount: &str,
        file: &str,
        errors: Vec<crate::core::lines::LineError>,
        fx: &mut Vec<Effect>,
    ) {
        for e in errors {
            self.say_once(
                format!("rowerr:{mount}/{file}:{e}"),
                Log::new(Level::Warn, format!("{mount}/{file}: {e}; row skipped"))
                    .mount(mount)
                    .file(&format!("{mount}/{file}"))
                    .line(e.line),
                fx,
            );
        }
    }

    /// A closed or deleted bead leaves at once (9beads appends the event
    /// after the change, so its lists already agree): a prompt still
    /// pending for it is withdrawn, and it is not mistaken for a task
    /// someone still holds when the ready list shows it gone.
    fn on_closed(&mut self, mount: &str, id: String, why: &str, fx: &mut Vec<Effect>) {
        if !self.ours(mount) {
            return;
        }
        let source = mount_source(mount);
        self.forget_held(&source, &id, fx);
        self.unannounce(&source, Item::Task(id), why, fx);
        self.dirty_mounts.insert(mount.to_string());
    }

    fn events_only(&self, mount: &str) -> bool {
        self.said.contains(&format!("noready:{mount}"))
    }

    /// Keep the titles of a source's tasks that are still announced
    /// (claim and completion prompts name them); `announce_tasks` adds the
    /// ready ones back. Without this the map held every task ever seen (a
    /// slow, unbounded growth found by the soak test in tests/reliability).
    fn prune_titles(&mut self, source: &str) {
        let announced: BTreeSet<&str> = self
            .memory
            .announced
            .get(source)
            .map(|items| {
                items
                    .keys()
                    // A held task carries its own title.
                    .filter(|i| !matches!(i, Item::Held(..)))
                    .map(Item::label)
                    .collect()
            })
            .unwrap_or_default();
        self.task_titles
            .retain(|(s, id), _| s != source || announced.contains(id.as_str()));
    }

    fn title_of(&self, source: &str, id: &str) -> String {
        self.task_titles
            .get(&(source.to_string(), id.to_string()))
            .cloned()
            .unwrap_or_else(|| id.to_string())
    }

    /// `notify_completed`: tell the session a task was announced to that it
    /// was completed elsewhere.
    fn tell_completed(&mut self, source: &str, id: &str, fx: &mut Vec<Effect>) {
        if !self.config.notify_completed {
            return;
        }
        // The session that had the task: it is still announced there, or
        // it left the ready set (claimed, blocked) and is held there.
        let announced = self
            .memory
            .announced
            .get(source)
            .and_then(|items| items.get(&Item::Task(id.to_string())))
            .filter(|a| !a.baseline)
            .and_then(|a| a.session.clone())
            .map(|s| (s, self.title_of(source, id)));
        let Some((session, title)) = announced.or_else(|| self.holder(source, id)) else {
            return;
        };
        let item = Item::Completed(id.to_string());
        if self.memory.is_announced(source, &item) {
            return;
        }
        let mount = source.strip_prefix("mount:").unwrap_or(source);
        let text = prompt::render(
            &self.config.templates.completed,
            &task_vars(id, &title, mount, None, &session, source),
        );
        self.prune_notes(source, fx);
        self.announce(
            source,
            item,
            &session,
            id.to_string(),
            source.to_string(),
            text,
            fx,
        );
    }

    /// Forget the claim and completion notes of a task.
    fn forget_notes(&mut self, source: &str, id: &str, fx: &mut Vec<Effect>) {
        let notes = self.memory.announced_where(source, |i| match i {
            Item::Claim(c, _) | Item::Completed(c) | Item::Held(c, _) => c == id,
            _ => false,
        });
        for item in notes {
            self.record(
                Record::Forget {
                    source: source.to_string(),
                    item,
                },
                fx,
            );
        }
    }

    /// Keep the notes of one source bounded.
    fn prune_notes(&mut self, source: &str, fx: &mut Vec<Effect>) {
        let notes = self.memory.announced_where(source, |i| {
            matches!(i, Item::Claim(..) | Item::Completed(_) | Item::Held(..))
        });
        if notes.len() < MAX_NOTES {
            return;
        }
        for item in notes.into_iter().take(MAX_NOTES / 4) {
            self.record(
                Record::Forget {
                    source: source.to_string(),
                    item,
                },
                fx,
            );
        }
    }

    pub(super) fn on_mount_read(
        &mut self,
        now: Now,
        mount: &str,
        read: FileRead,
        fresh: bool,
        fx: &mut Vec<Effect>,
    ) {
        // This read answers any pending re-read of the mount.
        let rechecked = self.mount_rechecks.remove(mount).map_or(0, |(_, n)| n);
        let source = mount_source(mount);
        let text = match read {
            FileRead::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
            FileRead::Missing => {
                // Keep what was announced: a mount that is briefly away must
                // not turn into a storm of repeats when it comes back.
                self.say_once(
                    format!("noready:{mount}"),
                    Log::new(
                        Level::Warn,
                        format!("mount {mount} has no ready file; announcing from BeadReady events only"),
                    )
                    .mount(mount),
                    fx,
                );
                return;
            }
            FileRead::Failed(e) => {
                fx.push(Effect::Log(
                    Log::new(
                        Level::Error,
                        format!("cannot read the ready file of mount {mount}: {e}"),
                    )
                    .mount(mount),
                ));
                return;
            }
        };
        self.said.remove(&format!("noready:{mount}"));
        let (rows, errors) = parse_ready(&text);
        self.report_row_errors(mount, "ready", errors, fx);
        let tasks: Vec<ReadyTask> = rows
            .into_iter()
            // Someone has an `in_progress` bead; a closed one is done.
            .filter(|r| r.status != "closed" && r.status != "in_progress")
            .map(|r| ReadyTask {
                id: r.id,
                title: r.title,
                assignee: r.assignee,
            })
            .collect();
        // Leave: announced tasks no longer in the ready set (claimed,
        // blocked again, closed): they are announced again if they return.
        let present: BTreeSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        let leaving = self.memory.announced_where(
            &source,
            |i| matches!(i, Item::Task(id) if !present.contains(id.as_str())),
        );
        if fresh && rechecked < super::plans::MAX_RECHECKS && !leaving.is_empty() {
            // Perhaps only half written (a local file rewritten in place):
            // absence proves nothing yet; judged again once it settles.
            self.mount_rechecks
                .insert(mount.to_string(), (now + self.config.settle, rechecked + 1));
        } else {
            if self.config.notify_completed && !leaving.is_empty() {
                // Once per read, not per task: it scans every note.
                self.prune_notes(&source, fx);
            }
            for item in leaving {
                self.hold_leaving(&source, &item, fx);
                self.unannounce(&source, item, "it left the ready set", fx);
            }
        }
        self.arm_resync(now);
        self.prune_titles(&source);
        self.announce_tasks(&source, tasks, Some(mount), fx);
    }

    /// Announce (or, on a first start, record as baseline) the tasks not
    /// announced yet, in the order given.
    fn announce_tasks(
        &mut self,
        source: &str,
        tasks: Vec<ReadyTask>,
        mount: Option<&str>,
        fx: &mut Vec<Effect>,
    ) {
        for task in tasks {
            self.task_titles
                .insert((source.to_string(), task.id.clone()), task.title.clone());
            let item = Item::Task(task.id.clone());
            if self.memory.is_announced(source, &item) {
                continue;
            }
            if self.baseline {
                self.record(
                    Record::Announce {
                        source: source.to_string(),
                        item,
                        session: None,
                        baseline: true,
                        pending: None,
                    },
                    fx,
                );
                continue;
            }
            let Some(session) = self.task_route(source, task.assignee.as_deref(), fx) else {
                continue;
            };
            // Back in the ready set (unclaimed, reopened, unblocked): the
            // claims and completion told about its last round are history.
            self.forget_notes(source, &task.id, fx);
            let text = prompt::render(
                &self.config.templates.task,
                &task_vars(
                    &task.id,
                    &task.title,
                    mount.unwrap_or("-"),
                    task.assignee.as_deref(),
                    &session,
                    source,
                ),
            );
            if !self.announce(
                source,
                item,
                &session,
                task.id,
                source.to_string(),
                text,
                fx,
            ) {
                return;
            }
        }
    }

    /// A task announced to a session leaves the ready set: unless a claim
    /// already named its holder or it was told completed, the session it
    /// was announced to keeps holding it, so a later `completed` (which
    /// names no one) reaches the session that had the task. Only kept while
    /// `notify_completed` is on: nothing else reads it.
    fn hold_leaving(&mut self, source: &str, item: &Item, fx: &mut Vec<Effect>) {
        let Item::Task(id) = item else {
            return;
        };
        if !self.config.notify_completed || self.holder(source, id).is_some() {
            return;
        }
        let session = self
            .memory
            .announced
            .get(source)
            .and_then(|items| items.get(item))
            .filter(|a| !a.baseline)
            .and_then(|a| a.session.clone());
        if let Some(session) = session {
            let title = self.title_of(source, id);
            self.hold(source, id, &title, &session, fx);
        }
    }

    /// `events.resync_ms`: the first mount read arms the timer, so a daemon
    /// with no tracker (or with resync off) never wakes for it.
    fn arm_resync(&mut self, now: Now) {
        if let (Some(every), None) = (self.config.resync, self.resync_at) {
            self.resync_at = Some(now + every);
        }
    }

    /// Due: read every mount's ready list (9beads writes no event for
    /// `unclaim`, `open`, `reopen`, `defer`, `dep`, `undep`, `update`).
    pub(super) fn run_resync(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Some(every) = self.config.resync else {
            // Turned off by a reload: no deadline left behind to spin on.
            self.resync_at = None;
            return;
        };
        let Some(at) = self.resync_at else {
            return;
        };
        if at > now {
            return;
        }
        self.resync_at = Some(now + every);
        for mount in self.config.mounts.clone() {
            fx.push(Effect::ReadMount { mount });
        }
    }

    pub(super) fn on_beads_read(
        &mut self,
        now: Now,
        read: FileRead,
        now_unix: i64,
        fx: &mut Vec<Effect>,
    ) {
        let file = self.config.beads_file.clone().unwrap_or_default();
        let text = match read {
            FileRead::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
            FileRead::Missing => {
                self.say_once(
                    "beads-missing".into(),
                    Log::new(
                        Level::Warn,
                        "beads issues.jsonl does not exist (yet); waiting for it",
                    )
                    .file(&file),
                    fx,
                );
                return;
            }
            FileRead::Failed(e) => {
                fx.push(Effect::Log(
                    Log::new(Level::Error, format!("cannot read beads issues.jsonl: {e}"))
                        .file(&file),
                ));
                return;
            }
        };
        self.said.remove("beads-missing");
        let (issues, errors) = beads::parse_issues(&text);
        let errors: BTreeSet<String> = errors.iter().map(|e| e.to_string()).collect();
        for e in errors.difference(&self.beads_errors) {
            fx.push(Effect::Log(
                Log::new(Level::Warn, format!("{file}: {e}")).file(&file),
            ));
        }
        self.beads_errors = errors;
        let ready = beads::ready(&issues, now_unix);
        let by_id: BTreeMap<&str, &beads::Issue> =
            issues.iter().map(|i| (i.id.as_str(), i)).collect();
        // Leave: closed or gone (SPEC §3); an issue that is only blocked
        // again stays announced, so it does not wake anyone twice.
        let leaving = self.memory.announced_where(BEADS_SOURCE, |i| {
            matches!(i, Item::Task(id) if by_id
                .get(id.as_str())
                .is_none_or(|i| i.status == "closed" || i.status == "tombstone"))
        });
        for item in leaving {
            self.unannounce(BEADS_SOURCE, item, "it was closed", fx);
        }
        // A deferred issue comes due without the file changing.
        self.beads_due = issues
            .iter()
            .filter(|i| i.status == "open")
            .filter_map(|i| i.defer_until)
            .filter(|&t| t > now_unix)
            .min()
            .map(|t| now + Duration::from_secs((t - now_unix) as u64));
        let tasks = ready
            .into_iter()
            .map(|i| ReadyTask {
                id: issues[i].id.clone(),
                title: issues[i].title.clone(),
                assignee: issues[i].assignee.clone(),
            })
            .collect();
        self.prune_titles(BEADS_SOURCE);
        self.announce_tasks(BEADS_SOURCE, tasks, None, fx);
    }
}

fn task_vars<'a>(
    id: &'a str,
    title: &'a str,
    mount: &'a str,
    assignee: Option<&'a str>,
    session: &'a str,
    source: &'a str,
) -> [(&'static str, &'a str); 6] {
    [
        ("id", id),
        ("title", title),
        ("mount", mount),
        ("assignee", assignee.unwrap_or("-")),
        ("session", session),
        ("source", source),
    ]
}
