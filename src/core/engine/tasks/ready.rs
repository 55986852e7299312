//! A 9beads mount's ready list, diffed against what was announced: tasks
//! that left leave (held by the session that had them), tasks that came are
//! announced. Claimed beads are in the list too — 9beads asks for ready
//! work with no filter, `open` or `in_progress` — but someone has them:
//! they are never new work.

use std::collections::BTreeSet;

use super::mounts::by_directory;
use super::notes::{forget_notes, hold, prune_notes};
use super::text::{self, Facts};
use super::{ReadyTask, Tasks};
use crate::core::effect::{Effect, Level, Log};
use crate::core::engine::config::Now;
use crate::core::engine::context::Cx;
use crate::core::engine::ledger::Wake;
use crate::core::engine::plans::MAX_RECHECKS;
use crate::core::engine::timers::{Recheck, Timer};
use crate::core::input::FileRead;
use crate::core::record::{Item, Work};
use crate::core::source::Source;
use crate::core::tracker::{parse_ready, ReadyRow};

impl Tasks {
    /// A mount's re-read came due: ask for it; its answer resets or
    /// re-arms it.
    pub(in crate::core::engine) fn recheck_due(&mut self, mount: String) -> Effect {
        self.mount_rechecks.entry(mount.clone()).or_default().asked = true;
        Effect::ReadMount { mount }
    }

    pub(in crate::core::engine) fn on_mount_read(
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
        // Not (or no longer) the project's: a read asked before the mount
        // table changed.
        let Some(source) = self.mounts.source(cx.config, mount) else {
            return;
        };
        let Some(text) = self.ready_text(mount, read, cx) else {
            return;
        };
        let (rows, errors) = parse_ready(&text);
        self.report_row_errors(mount, "ready", errors, cx);
        self.prune_titles(&source, cx.ledger.tasks());
        let tasks = self.ready_tasks(&source, rows);
        // Leave: announced tasks no longer in the ready set (claimed,
        // blocked again, closed): they are announced again if they return.
        let present: BTreeSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        let leaving = cx.ledger.tasks().items_where(
            &source,
            |i| matches!(i, Item::Work(Work::Task(id)) if !present.contains(id.as_str())),
        );
        if fresh && rechecked < MAX_RECHECKS && !leaving.is_empty() {
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
            self.leave(&source, leaving, cx);
        }
        arm_resync(now, cx);
        if self.mounts.retell.remove(&source) {
            self.retell(&source, mount, &tasks, cx);
        }
        self.announce_tasks(&source, tasks, Some(mount), cx);
    }

    /// The text of a ready file, or `None` (said) when there is none. A
    /// mount with no ready file keeps what was announced — one that is
    /// briefly away must not come back as a storm of repeats — and, found
    /// by directory, has the mount table read again: its files vanish
    /// when it is unmounted or 9beads stops, and the table says where the
    /// project is mounted now.
    fn ready_text(&mut self, mount: &str, read: FileRead, cx: &mut Cx) -> Option<String> {
        match read {
            FileRead::Bytes(b) => {
                self.events_only.remove(mount);
                Some(String::from_utf8_lossy(&b).into_owned())
            }
            FileRead::Missing => {
                if self.events_only.insert(mount.to_string()) {
                    let what = if by_directory(cx.config) {
                        "looking it up in the mount table again"
                    } else {
                        "announcing from BeadReady events only"
                    };
                    let log = Log::new(
                        Level::Warn,
                        format!("mount {mount} has no ready file; {what}"),
                    );
                    cx.fx.push(Effect::Log(log.mount(mount)));
                }
                self.mounts.ask(cx.config, cx.fx);
                None
            }
            failed => {
                let e = failed.failure().unwrap_or_default();
                let log = Log::new(
                    Level::Error,
                    format!("cannot read the ready file of mount {mount}: {e}"),
                );
                cx.fx.push(Effect::Log(log.mount(mount)));
                None
            }
        }
    }

    /// The new work among a ready list's rows. Every row's title is kept
    /// (until a later read finds it neither listed nor announced): claim
    /// and completion prompts, and prompts written again for a new mount
    /// name, name claimed beads too.
    fn ready_tasks(&mut self, source: &Source, rows: Vec<ReadyRow>) -> Vec<ReadyTask> {
        let mut tasks = Vec::new();
        for r in rows {
            let key = (source.clone(), r.id.clone());
            self.task_titles.insert(key, r.title.clone());
            // Someone has an `in_progress` bead; a closed one is done.
            if r.status == "closed" || r.status == "in_progress" {
                continue;
            }
            tasks.push(ReadyTask {
                id: r.id,
                title: r.title,
                assignee: r.assignee,
            });
        }
        tasks
    }

    /// Tasks that left the ready set leave the announced set; the session
    /// each was announced to keeps holding it.
    fn leave(&mut self, source: &Source, leaving: Vec<Item>, cx: &mut Cx) {
        if cx.config.notify_completed && !leaving.is_empty() {
            // Once per read, not per task: it scans every note.
            prune_notes(source, cx);
        }
        for item in leaving {
            self.hold_leaving(source, &item, cx);
            cx.ledger
                .unannounce(source, item, "it left the ready set", cx.fx);
        }
    }

    /// Announce (or, on a first start, record as baseline) the tasks not
    /// announced yet, in the order given.
    pub(super) fn announce_tasks(
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
            if cx.ledger.tasks().is_task_announced(source, &task.id) {
                continue;
            }
            let item = Item::task(&task.id);
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
            let name = source.to_string();
            let facts = Facts {
                id: &task.id,
                title: &task.title,
                mount: mount.unwrap_or("-"),
                assignee: task.assignee.as_deref(),
                session: &session,
                source: &name,
            };
            let text = text::render(cx.config, &cx.config.templates.task, &facts);
            let wake = Wake {
                item,
                session: &session,
                label: task.id,
                plan: name,
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
        let Item::Work(Work::Task(id)) = item else {
            return;
        };
        let tasks = cx.ledger.tasks();
        if !cx.config.notify_completed || tasks.holder(source, id).is_some() {
            return;
        }
        let session = tasks.task_announced_to(source, id).map(str::to_string);
        if let Some(session) = session {
            let title = self.title_of(source, id);
            hold(source, id, &title, &session, cx);
        }
    }
}

/// `events.resync_ms`: the first mount read arms the timer, so a daemon
/// with no tracker (or with resync off) never wakes for it.
fn arm_resync(now: Now, cx: &mut Cx) {
    if let Some(every) = cx.config.resync {
        cx.timers.set_once(Timer::Resync, now + every);
    }
}
