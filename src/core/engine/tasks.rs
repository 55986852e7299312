//! The tracker side of the engine: 9beads event lines and mount ready
//! files, and a beads `issues.jsonl`. Same rule as for plans —
//! `newly_ready = ready − announced` — with tasks instead of steps, plus the
//! two other triggers: a claim announced to the assignee's session, and a
//! completion told to the session the task was announced to.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::config::{EngineConfig, Now};
use super::context::Cx;
use super::ledger::Wake;
use super::timers::{Recheck, Timer};
use crate::core::beads;
use crate::core::close::Close;
use crate::core::effect::{Effect, Level, Log};
use crate::core::input::FileRead;
use crate::core::lines::quoted;
use crate::core::lines::LineError;
use crate::core::prompt;
use crate::core::record::{Cursor, Item, Memory, Record};
use crate::core::source::Source;
use crate::core::tracker::{parse_event, parse_ready, EventError, TrackerEvent};
use notes::{forget_held, forget_notes, hold, holder, mark_claimed, prune_notes, unmark_claimed};

/// The source of a 9beads mount.
fn mount_source(mount: &str) -> Source {
    Source::Mount(mount.to_string())
}

/// The tracker part: 9beads mounts and events, and the beads file.
#[derive(Debug, Default)]
pub(super) struct Tasks {
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
    /// Tracker task titles by source and id, for claim/completed prompts.
    pub(super) task_titles: BTreeMap<(Source, String), String>,
    /// The assignee of each ready task that has one, as its source last
    /// listed it: a task claimed by someone else's assignee is not open
    /// work of the session it was announced to (no reminder).
    pub(super) task_assignees: BTreeMap<(Source, String), String>,
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
    /// A mount's re-read came due: ask for it; its answer resets or
    /// re-arms it.
    pub(super) fn recheck_due(&mut self, mount: String) -> Effect {
        self.mount_rechecks.entry(mount.clone()).or_default().asked = true;
        Effect::ReadMount { mount }
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
        for mount in std::mem::take(&mut self.dirty_mounts) {
            // A current-shape `claimed` names no assignee; 9beads keeps it
            // only in the mount's `list` (the bead is `in_progress` now, out
            // of `ready`). The list is read first, so the claim is told
            // while the task is still announced to the session it went to.
            if self.unresolved_claims.contains_key(&mount) {
                cx.fx.push(Effect::ReadMountList {
                    mount: mount.clone(),
                });
            }
            cx.fx.push(Effect::ReadMount { mount });
        }
        // After the reads it causes: a crash before this record re-reads the
        // lines, which only repeats idempotent diffs.
        cx.ledger.record(Record::Cursor { cursor }, cx.fx);
    }

    fn ours(config: &EngineConfig, mount: &str) -> bool {
        config.mounts.iter().any(|m| m == mount)
    }

    fn on_event(&mut self, event: TrackerEvent, cx: &mut Cx) {
        match event {
            TrackerEvent::Created { mount, .. } | TrackerEvent::Updated { mount, .. } => {
                if Self::ours(cx.config, &mount) {
                    self.dirty_mounts.insert(mount);
                }
            }
            TrackerEvent::Failed { id, mount } => self.on_closed(&mount, id, "it failed", cx),
            TrackerEvent::Deleted { id, mount } => {
                if Self::ours(cx.config, &mount) {
                    forget_notes(&mount_source(&mount), &id, cx);
                }
                self.on_closed(&mount, id, "it was deleted", cx)
            }
            TrackerEvent::Completed { id, mount } => {
                if Self::ours(cx.config, &mount) {
                    self.tell_completed(&mount_source(&mount), &id, cx);
                }
                self.on_closed(&mount, id, "it was completed", cx)
            }
            TrackerEvent::Claimed {
                id,
                mount,
                assignee,
            } => self.on_claimed(id, mount, assignee, cx),
            TrackerEvent::Ready {
                id,
                mount,
                title,
                assignee,
            } => self.on_ready_event(
                ReadyTask {
                    title: title.unwrap_or_else(|| id.clone()),
                    id,
                    assignee,
                },
                mount,
                cx,
            ),
            TrackerEvent::Mount { name, cwd } => {
                if Self::ours(cx.config, &name) {
                    cx.fx.push(Effect::Log(
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
                if Self::ours(cx.config, &name) {
                    cx.fx.push(Effect::Log(
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
                cx,
            ),
        }
    }

    /// A claim: one with its assignee (the older `BeadClaimed` carries it
    /// in `data`) is announced at once; one without waits for the mount's
    /// `list` row, read before its ready file.
    fn on_claimed(&mut self, id: String, mount: String, assignee: Option<String>, cx: &mut Cx) {
        if !Self::ours(cx.config, &mount) {
            return;
        }
        self.dirty_mounts.insert(mount.clone());
        match assignee {
            Some(assignee) => self.announce_claim(&mount, &id, &assignee, None, cx),
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
        mount: &str,
        id: &str,
        assignee: &str,
        title: Option<&str>,
        cx: &mut Cx,
    ) {
        let source = mount_source(mount);
        let item = Item::Claim(id.to_string(), assignee.to_string());
        if cx.ledger.memory.is_announced(&source, &item) {
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
        let title = title.map_or_else(|| self.title_of(&source, id), str::to_string);
        let name = source.to_string();
        let close = closing(&source, id, cx.config).to_string();
        let text = prompt::render(
            &cx.config.templates.claim,
            &task_vars(id, &title, mount, Some(assignee), &session, &name, &close),
        );
        prune_notes(&source, cx);
        let wake = Wake {
            item,
            session: &session,
            label: id.to_string(),
            plan: name,
            text,
        };
        if !cx
            .ledger
            .announce(cx.config.outbox_cap, &source, wake, cx.fx)
        {
            return;
        }
        mark_claimed(&source, id, &session, cx);
        if cx.config.notify_completed {
            hold(&source, id, &title, &session, cx);
        }
    }

    /// The answer to `ReadMountList`: the claimers of the beads claimed
    /// with no assignee in the event, from their `list` rows.
    pub(super) fn on_mount_list_read(&mut self, mount: &str, read: FileRead, cx: &mut Cx) {
        let claimed = self.unresolved_claims.remove(mount).unwrap_or_default();
        let text = match read {
            FileRead::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
            FileRead::Missing | FileRead::Failed(_) => {
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
                self.announce_claim(mount, &row.id, assignee, title, cx);
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
    fn on_closed(&mut self, mount: &str, id: String, why: &str, cx: &mut Cx) {
        if !Self::ours(cx.config, mount) {
            return;
        }
        let source = mount_source(mount);
        forget_held(&source, &id, cx);
        unmark_claimed(&source, &id, cx);
        cx.ledger.unannounce(&source, Item::Task(id), why, cx.fx);
        self.dirty_mounts.insert(mount.to_string());
    }

    /// A legacy ready event: the news itself for a mount with no ready file
    /// (`events_only`), else a reason to read the ready file.
    fn on_ready_event(&mut self, task: ReadyTask, mount: String, cx: &mut Cx) {
        if !Self::ours(cx.config, &mount) {
            return;
        }
        if self.events_only(&mount) {
            self.announce_tasks(&mount_source(&mount), vec![task], Some(&mount), cx);
        } else {
            self.dirty_mounts.insert(mount);
        }
    }

    fn events_only(&self, mount: &str) -> bool {
        self.events_only.contains(mount)
    }

    /// Keep the titles of a source's tasks that are still announced
    /// (claim and completion prompts name them); `announce_tasks` adds the
    /// ready ones back. Without this the map held every task ever seen (a
    /// slow, unbounded growth found by the soak test in tests/reliability).
    fn prune_titles(&mut self, source: &Source, memory: &Memory) {
        let announced: BTreeSet<&str> = memory
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
        let announced = cx
            .ledger
            .memory
            .announced
            .get(source)
            .and_then(|items| items.get(&Item::Task(id.to_string())))
            .filter(|a| !a.baseline)
            .and_then(|a| a.session.clone())
            .map(|s| (s, self.title_of(source, id)));
        let Some((session, title)) = announced.or_else(|| holder(&cx.ledger.memory, source, id))
        else {
            return;
        };
        let item = Item::Completed(id.to_string());
        if cx.ledger.memory.is_announced(source, &item) {
            return;
        }
        let name = source.to_string();
        let mount = source.mount().unwrap_or(&name);
        let close = closing(source, id, cx.config).to_string();
        let text = prompt::render(
            &cx.config.templates.completed,
            &task_vars(id, &title, mount, None, &session, &name, &close),
        );
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

    pub(super) fn on_mount_read(
        &mut self,
        now: Now,
        mount: &str,
        read: FileRead,
        fresh: bool,
        cx: &mut Cx,
    ) {
        // This read answers any pending re-read of the mount.
        cx.timers.cancel(&Timer::MountRecheck(mount.to_string()));
        let rechecked = self.mount_rechecks.remove(mount).map_or(0, |r| r.count);
        let source = mount_source(mount);
        let text = match read {
            FileRead::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
            FileRead::Missing => {
                // Keep what was announced: a mount that is briefly away must
                // not turn into a storm of repeats when it comes back.
                if self.events_only.insert(mount.to_string()) {
                    cx.fx.push(Effect::Log(
                        Log::new(
                            Level::Warn,
                            format!("mount {mount} has no ready file; announcing from BeadReady events only"),
                        )
                        .mount(mount),
                    ));
                }
                return;
            }
            FileRead::Failed(e) => {
                cx.fx.push(Effect::Log(
                    Log::new(
                        Level::Error,
                        format!("cannot read the ready file of mount {mount}: {e}"),
                    )
                    .mount(mount),
                ));
                return;
            }
        };
        self.events_only.remove(mount);
        let (rows, errors) = parse_ready(&text);
        self.report_row_errors(mount, "ready", errors, cx);
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
        let leaving = cx.ledger.memory.announced_where(
            &source,
            |i| matches!(i, Item::Task(id) if !present.contains(id.as_str())),
        );
        if fresh && rechecked < super::plans::MAX_RECHECKS && !leaving.is_empty() {
            // Perhaps only half written (a local file rewritten in place):
            // absence proves nothing yet; judged again once it settles.
            let recheck = Recheck {
                count: rechecked + 1,
                asked: false,
            };
            self.mount_rechecks.insert(mount.to_string(), recheck);
            cx.timers.set(
                Timer::MountRecheck(mount.to_string()),
                now + cx.config.settle,
            );
        } else {
            if cx.config.notify_completed && !leaving.is_empty() {
                // Once per read, not per task: it scans every note.
                prune_notes(&source, cx);
            }
            for item in leaving {
                self.hold_leaving(&source, &item, cx);
                cx.ledger
                    .unannounce(&source, item, "it left the ready set", cx.fx);
            }
        }
        arm_resync(now, cx);
        self.prune_titles(&source, &cx.ledger.memory);
        self.announce_tasks(&source, tasks, Some(mount), cx);
    }

    /// Announce (or, on a first start, record as baseline) the tasks not
    /// announced yet, in the order given.
    fn announce_tasks(
        &mut self,
        source: &Source,
        tasks: Vec<ReadyTask>,
        mount: Option<&str>,
        cx: &mut Cx,
    ) {
        for task in tasks {
            self.task_titles
                .insert((source.clone(), task.id.clone()), task.title.clone());
            let key = (source.clone(), task.id.clone());
            match &task.assignee {
                Some(who) => self.task_assignees.insert(key, who.clone()),
                None => self.task_assignees.remove(&key),
            };
            let item = Item::Task(task.id.clone());
            if cx.ledger.memory.is_announced(source, &item) {
                continue;
            }
            if cx.baseline {
                cx.ledger.mark(source, item, None, cx.fx);
                continue;
            }
            let Some(session) = self.task_route(source, task.assignee.as_deref(), cx) else {
                continue;
            };
            // Back in the ready set (unclaimed, reopened, unblocked): the
            // claims and completion told about its last round are history.
            forget_notes(source, &task.id, cx);
            let close = closing(source, &task.id, cx.config).to_string();
            let text = prompt::render(
                &cx.config.templates.task,
                &task_vars(
                    &task.id,
                    &task.title,
                    mount.unwrap_or("-"),
                    task.assignee.as_deref(),
                    &session,
                    &source.to_string(),
                    &close,
                ),
            );
            let wake = Wake {
                item,
                session: &session,
                label: task.id,
                plan: source.to_string(),
                text,
            };
            if !cx
                .ledger
                .announce(cx.config.outbox_cap, source, wake, cx.fx)
            {
                return;
            }
        }
    }

    /// A task announced to a session leaves the ready set: unless a claim
    /// already named its holder or it was told completed, the session it
    /// was announced to keeps holding it, so a later `completed` (which
    /// names no one) reaches the session that had the task. Only kept while
    /// `notify_completed` is on: nothing else reads it.
    fn hold_leaving(&self, source: &Source, item: &Item, cx: &mut Cx) {
        let Item::Task(id) = item else {
            return;
        };
        if !cx.config.notify_completed || holder(&cx.ledger.memory, source, id).is_some() {
            return;
        }
        let session = cx
            .ledger
            .memory
            .announced
            .get(source)
            .and_then(|items| items.get(item))
            .filter(|a| !a.baseline)
            .and_then(|a| a.session.clone());
        if let Some(session) = session {
            let title = self.title_of(source, id);
            hold(source, id, &title, &session, cx);
        }
    }

    pub(super) fn on_beads_read(&mut self, now: Now, read: FileRead, now_unix: i64, cx: &mut Cx) {
        let file = cx.config.beads_file.clone().unwrap_or_default();
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
                    cx,
                );
                return;
            }
            FileRead::Failed(e) => {
                cx.fx.push(Effect::Log(
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
            cx.fx.push(Effect::Log(
                Log::new(Level::Warn, format!("{file}: {e}")).file(&file),
            ));
        }
        self.beads_errors = errors;
        let ready = beads::ready(&issues, now_unix);
        let by_id: BTreeMap<&str, &beads::Issue> =
            issues.iter().map(|i| (i.id.as_str(), i)).collect();
        // Leave: closed or gone (SPEC §3); an issue that is only blocked
        // again stays announced, so it does not wake anyone twice.
        let leaving = cx.ledger.memory.announced_where(&Source::Beads, |i| {
            matches!(i, Item::Task(id) if by_id
                .get(id.as_str())
                .is_none_or(|i| i.status.is_gone()))
        });
        for item in leaving {
            cx.ledger
                .unannounce(&Source::Beads, item, "it was closed", cx.fx);
        }
        // A deferred issue comes due without the file changing.
        let due = issues
            .iter()
            .filter(|i| i.status == beads::BeadStatus::Open)
            .filter_map(|i| i.defer_until)
            .filter(|&t| t > now_unix)
            .min()
            .map(|t| now + Duration::from_secs((t - now_unix) as u64));
        match due {
            Some(at) => cx.timers.set(Timer::BeadsDue, at),
            None => cx.timers.cancel(&Timer::BeadsDue),
        }
        let tasks = ready
            .into_iter()
            .map(|i| ReadyTask {
                id: issues[i].id.clone(),
                title: issues[i].title.clone(),
                assignee: issues[i].assignee.clone(),
            })
            .collect();
        self.prune_titles(&Source::Beads, &cx.ledger.memory);
        self.announce_tasks(&Source::Beads, tasks, None, cx);
    }
}

/// `events.resync_ms`: the first mount read arms the timer, so a daemon
/// with no tracker (or with resync off) never wakes for it.
fn arm_resync(now: Now, cx: &mut Cx) {
    if let Some(every) = cx.config.resync {
        cx.timers.set_once(Timer::Resync, now + every);
    }
}

fn task_vars<'a>(
    id: &'a str,
    title: &'a str,
    mount: &'a str,
    assignee: Option<&'a str>,
    session: &'a str,
    source: &'a str,
    close: &'a str,
) -> [(&'static str, &'a str); 7] {
    [
        ("id", id),
        ("title", title),
        ("mount", mount),
        ("assignee", assignee.unwrap_or("-")),
        ("session", session),
        ("source", source),
        ("close", close),
    ]
}

/// How task `id` of `source` is closed: 9beads' `complete` file of its
/// mount, or `bd close`.
pub(super) fn closing<'a>(source: &'a Source, id: &'a str, config: &'a EngineConfig) -> Close<'a> {
    match source {
        Source::Mount(mount) => Close::NineBeads {
            id,
            root: &config.beads_root,
            mount,
        },
        _ => Close::Beads { id },
    }
}

mod notes;
