//! A beads `issues.jsonl`, read whole after each rewrite and judged by
//! `bd ready`'s rule (`core::beads`): issues closed or gone leave, ready
//! ones are announced, and a deferral coming due is a timer.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{ReadyTask, Tasks};
use crate::core::beads;
use crate::core::effect::{Effect, Level, Log};
use crate::core::engine::config::Now;
use crate::core::engine::context::Cx;
use crate::core::engine::timers::Timer;
use crate::core::input::FileRead;
use crate::core::record::{Item, Work};
use crate::core::source::Source;

impl Tasks {
    pub(in crate::core::engine) fn on_beads_read(
        &mut self,
        now: Now,
        read: FileRead,
        now_unix: i64,
        cx: &mut Cx,
    ) {
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
            failed => {
                let e = failed.failure().unwrap_or_default();
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
        let leaving = cx.ledger.tasks().items_where(&Source::Beads, |i| {
            matches!(i, Item::Work(Work::Task(id)) if by_id
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
        self.prune_titles(&Source::Beads, cx.ledger.tasks());
        self.announce_tasks(&Source::Beads, tasks, None, cx);
    }
}
