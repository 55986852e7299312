//! The daemon's life around the loop: built (state, watcher, backends,
//! signal handlers), started (the reconcile, `READY=1`), kept (group
//! commit, compaction, rescans) and drained at the stop.

use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::{engine_config, Settings};
use crate::core::effect::Level;
use crate::core::engine::Engine;
use crate::core::input::Input;
use crate::shell::backend::Reports;
use crate::shell::checklists;
use crate::shell::logging;
use crate::shell::store::Store;
use crate::shell::tail::Tail;
use crate::shell::watch::{RootMode, Watch};

use super::agents::Agents;
use super::journal::Journal;
use super::service::Service;
use super::signals::hangup;
use super::tracker::Tracker;
use super::views::Views;
use super::watching::{add_roots, Watching};
use super::world::{beads_read, mount_read, mount_table_read};
use super::{Daemon, DaemonError, Wakers};

impl Daemon {
    /// Open the state, the watcher and the backends, and install the
    /// signal handlers: everything the loop needs, nothing read yet.
    pub(super) fn build(mut settings: Settings) -> Result<(Daemon, Wakers), DaemonError> {
        let checklists = checklists::apply(&mut settings);
        let project = settings.project.name.clone();
        let (store, memory, report) =
            Store::open(&settings.state.dir).map_err(DaemonError::Store)?;
        if report.torn_tail {
            tracing::warn!(project = %project, "the journal ended in a torn record (a crash mid-write); it was skipped");
        }
        if !report.bad_lines.is_empty() {
            tracing::error!(project = %project, "journal lines {:?} could not be read and were skipped", report.bad_lines);
        }
        let engine = Engine::new(engine_config(&settings, logging::engine_level()), memory);
        let mut watch = Watch::new(&settings.sessions.enqueue, settings.sessions.session_plans)
            .map_err(|e| DaemonError::Watch(e.to_string()))?;
        let events = watch
            .events()
            .map_err(|e| DaemonError::Watch(e.to_string()))?;
        add_roots(&mut watch, &settings);
        // Prime the poller so its first round reports changes, not everything.
        watch.poll();
        let started = Instant::now();
        let (reports_tx, reports) = mpsc::unbounded_channel::<Input>();
        let reports_tx = Reports::new(reports_tx, started.into_std());
        let (agents, tree) = Agents::new(&settings, reports_tx, checklists);
        let hangup = hangup()?;
        let tracker = Tracker {
            tail: settings
                .events
                .path
                .as_ref()
                .map(|p| Tail::new(p, engine.memory().cursor())),
            pipe: None,
        };
        let d = Daemon {
            settings,
            engine,
            journal: Journal::new(store),
            watching: Watching::new(watch),
            agents,
            views: Views::default(),
            tracker,
            service: Service::new(started),
        };
        let wakers = Wakers {
            events,
            reports,
            tree,
            hangup,
        };
        Ok((d, wakers))
    }

    /// The start-up reconcile: every plan, mount and issue is read and
    /// diffed against the memory (on a first start: recorded as the
    /// baseline); then `READY=1`.
    pub(super) fn start_up(&mut self) {
        let project = self.settings.project.name.clone();
        let first_start = self.engine.in_baseline();
        for (path, mode) in self.watching.watch.take_changes() {
            self.log_mode(&path, &mode);
        }
        self.scan();
        self.follow_tree();
        self.feed(Input::StartupDone);
        // The sessions with work: their states followed from now on, so
        // an idle one can be reminded though nothing new is delivered to
        // it (a kind that follows every session anyway, as the `idx`
        // worker does a directory's, does nothing for it).
        let mut sessions = self.engine.sessions_with_work();
        sessions.extend(self.settings.project.default_session.clone());
        for session in sessions {
            self.agents.backends.observe(&session);
        }
        if first_start {
            tracing::info!(project = %project, "first start: state directory {} created; it holds the baseline (a start without it takes a new one)", self.journal.store.dir().display());
        }
        self.compact();
        // `reveille reload` may signal this process from now on.
        self.answer_reload(crate::shell::reload_report::Outcome::Started);
        tracing::info!(project = %project, "ready: {}", self.summary());
        self.ready();
    }

    /// Finish deliveries already being written (briefly), then persist.
    pub(super) async fn drain(&mut self, reports: &mut mpsc::UnboundedReceiver<Input>) {
        let project = self.settings.project.name.clone();
        self.service.notifier.stopping();
        tracing::info!(project = %project, "stopping: draining and persisting state");
        let drain_until = Instant::now() + Duration::from_secs(2);
        while self.agents.background > 0 {
            match tokio::time::timeout_at(drain_until, reports.recv()).await {
                Ok(Some(input)) => self.on_report(input),
                _ => break,
            }
        }
        self.write_views();
        self.compact();
        if let Ok(file) = self.journal.store.sync_handle() {
            let _ = file.sync_data();
        }
        tracing::info!(project = %project, "stopped: {}", self.summary());
    }

    pub(super) fn sync(&mut self) {
        self.journal.sync(&self.settings, self.engine.memory());
    }

    pub(super) fn compact(&mut self) {
        self.journal.compact(&self.settings, self.engine.memory());
    }

    /// Say how a root is watched (the words are the watcher's).
    pub(super) fn log_mode(&self, path: &Path, mode: &RootMode) {
        let project = &self.settings.project.name;
        if matches!(mode, RootMode::Missing(_)) && self.settings.events.is_unchosen_log(path) {
            tracing::info!(project = %project, "no tracker yet: {} (the default [events] path) does not exist; it is read if it appears", path.display());
            return;
        }
        let file = path.display().to_string();
        match mode.said(path, self.settings.events.poll_interval) {
            (Level::Error, m) => tracing::error!(project = %project, file = %file, "{m}"),
            (Level::Warn, m) => tracing::warn!(project = %project, file = %file, "{m}"),
            (_, m) => tracing::info!(project = %project, file = %file, "{m}"),
        }
    }

    /// Read everything again: plans, tracker mounts, beads, the event log.
    pub(super) fn rescan(&mut self) {
        tracing::info!(project = %self.settings.project.name, "rescanning every root");
        self.scan();
    }

    pub(super) fn scan(&mut self) {
        // The tracker first: a prompt still pending from before may name a
        // 9beads mount that has a new name now, and the first read of the
        // project's mount writes it again before anything is delivered.
        let events = &self.settings.events;
        if events
            .path
            .as_ref()
            .is_some_and(|p| !events.is_unchosen_log(p) || p.exists())
        {
            // Named mounts are read as named; otherwise the mount table
            // says which are the project's, and the engine reads those.
            for mount in self.settings.events.mounts.clone() {
                let (read, fresh) = mount_read(&self.settings, &mount);
                self.feed(Input::MountRead { mount, read, fresh });
            }
            if self.settings.events.mounts.is_empty() {
                let table = mount_table_read(&self.settings);
                self.feed(Input::MountTable { table });
            }
        }
        let paths = self.watching.watch.list();
        self.feed(Input::Listed {
            paths,
            read_all: true,
        });
        if let Some((read, now_unix)) = beads_read(&self.settings) {
            self.feed(Input::BeadsRead { read, now_unix });
        }
        self.read_events();
    }
}
