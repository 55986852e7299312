//! A listing of every plan file: plans gone from it are removed (their
//! pending prompts withdrawn, their children's work ended), persisted
//! announcements of plans deleted while the daemon was down are dropped,
//! and new or moved files are read.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::Plans;
use crate::core::effect::{Effect, Level, Log};
use crate::core::engine::children;
use crate::core::engine::context::Cx;
use crate::core::engine::timers::Timer;
use crate::core::record::Record;
use crate::core::source::Source;

impl Plans {
    pub(in crate::core::engine) fn on_listed(
        &mut self,
        paths: Vec<PathBuf>,
        read_all: bool,
        cx: &mut Cx,
    ) {
        self.listing = false;
        let mut present: BTreeMap<Source, PathBuf> = BTreeMap::new();
        for path in paths {
            if let Some(pp) = Self::plan_path(cx.config, &path) {
                // Two files of one identity (a copy before a delete): the
                // one already tracked wins, so the plan does not flap.
                let keep_existing = self.plans.get(&pp.source).is_some_and(|p| p.path == path);
                if keep_existing || !present.contains_key(&pp.source) {
                    present.insert(pp.source, path);
                }
            }
        }
        let gone: Vec<Source> = self
            .plans
            .keys()
            .filter(|s| !present.contains_key(*s))
            .cloned()
            .collect();
        for source in gone {
            self.remove_plan(&source, cx);
        }
        // Persisted announcements of plans that no longer exist at all
        // (deleted while the daemon was down).
        if read_all {
            let plans = cx.ledger.plans().sources();
            let stale: Vec<Source> = plans
                .filter(|s| !present.contains_key(*s))
                .cloned()
                .collect();
            for source in stale {
                cx.ledger
                    .withdraw_source(&source, "its plan was deleted", cx.fx);
                children::plan_ended(cx, &source, "its plan was deleted");
                cx.ledger.record(Record::DropSource { source }, cx.fx);
            }
        }
        for (source, path) in present {
            cx.timers.cancel(&Timer::Vanished(source.clone()));
            let known = self.plans.get(&source).is_some_and(|p| p.path == path);
            if read_all || !known {
                cx.fx.push(Effect::Read {
                    path,
                    complete: true,
                });
            }
        }
    }

    pub(in crate::core::engine) fn remove_plan(&mut self, source: &Source, cx: &mut Cx) {
        cx.timers.cancel(&Timer::Vanished(source.clone()));
        self.recent.forget(source);
        let Some(state) = self.plans.remove(source) else {
            return;
        };
        if state.error.is_some() {
            self.invalid -= 1;
        }
        if state.lifecycle.is_live() {
            cx.fx.push(Effect::Log(
                Log::new(
                    Level::Info,
                    format!(
                        "plan {}: abandon, {:?} → Abandoned (file deleted)",
                        state.path.display(),
                        state.lifecycle
                    ),
                )
                .plan(source)
                .plan_file(&state.path),
            ));
        }
        cx.ledger
            .withdraw_source(source, "its plan was deleted", cx.fx);
        children::plan_ended(cx, source, "its plan was deleted");
        if cx.ledger.plans().has(source) {
            cx.ledger.record(
                Record::DropSource {
                    source: source.clone(),
                },
                cx.fx,
            );
        }
    }
}
