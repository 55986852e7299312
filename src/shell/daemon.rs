//! `reveille run`: the event loop that drives the engine — and nothing
//! else: the loop's parts live beside it (`life` builds, starts and drains
//! the daemon; `world` carries out the engine's effects; `route` says what
//! a watched path is about; `tree` follows the ollie-9p session tree;
//! `tracker` reads the event stream; `clock` keeps the loop's deadlines;
//! `reload`, `signals`, `status_line`).
//!
//! One task, one thread, that only selects and feeds: whatever may block
//! on a mount (the session tree's `idx`, a delivery) runs on a worker
//! that reports back as inputs. It selects over inotify events, the
//! workers' reports, one timer for every deadline, and signals — so an
//! idle daemon on inotify roots sleeps in `epoll_wait` until something
//! happens. Effects are applied in order, depth-first: a record is in the
//! journal before the prompt that depends on it is written.

mod agents;
mod clock;
mod journal;
mod life;
mod reload;
mod route;
mod service;
mod signals;
mod status_line;
mod tracker;
mod tree;
mod views;
mod watching;
mod world;

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::{ConfigErrors, Settings};
use crate::core::driver::drive;
use crate::core::engine::Engine;
use crate::core::input::{Evidence, Input};
use crate::shell::agents::ollie::poll::TreeNews;
use crate::shell::store::StoreError;
use crate::shell::watch::WatchEvents;

use agents::Agents;
use clock::Clock;
use journal::Journal;
use service::Service;
pub use signals::terminated;
use tracker::Tracker;
use views::Views;
use watching::Watching;
use world::Carry;

/// Why the daemon could not start or had to stop.
#[derive(Debug)]
pub enum DaemonError {
    Store(StoreError),
    Watch(String),
    Runtime(String),
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DaemonError::Store(e) => write!(f, "state directory: {e}"),
            DaemonError::Watch(e) => write!(f, "cannot watch: {e}"),
            DaemonError::Runtime(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for DaemonError {}

/// Watcher events handled per loop turn before signals and timers are
/// looked at again.
const DRAIN_BATCH: usize = 1024;

/// The running daemon: the engine, and the parts that own the rest of its
/// state (at most eight fields: `tests/structure.rs` checks).
struct Daemon {
    settings: Settings,
    engine: Engine,
    /// The journal, its group commit, a failing state directory.
    journal: Journal,
    /// The roots watched, inotify's buffer, the plan files held open.
    watching: Watching,
    /// Every kind's backend, the `idx` worker, background deliveries.
    agents: Agents,
    /// `sessions.json` and `reminders.json`, as last written.
    views: Views,
    /// The tracker's event log or pipe.
    tracker: Tracker,
    /// systemd, the person's notices, reloads, the clock origin.
    service: Service,
}

/// What the event loop waits on besides the daemon itself.
struct Wakers {
    events: WatchEvents,
    /// What the backends' workers learnt: delivery outcomes, turn starts,
    /// session states, child creates.
    reports: mpsc::UnboundedReceiver<Input>,
    /// What the session tree's worker said besides its looks.
    tree: mpsc::UnboundedReceiver<TreeNews>,
    /// SIGHUP: reload.
    hangup: tokio::signal::unix::Signal,
}

/// Run the daemon until `shutdown` completes (the binary passes
/// [`terminated`]: SIGTERM or SIGINT), then drain and persist. `load`
/// re-reads the configuration on SIGHUP.
pub async fn run(
    settings: Settings,
    load: Box<dyn Fn() -> Result<Settings, ConfigErrors>>,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), DaemonError> {
    let (mut d, mut wakers) = Daemon::build(settings)?;
    d.start_up();
    tokio::pin!(shutdown);
    d.serve(&mut wakers, &*load, shutdown).await?;
    d.drain(&mut wakers.reports).await;
    Ok(())
}

impl Daemon {
    fn now(&self) -> Duration {
        self.service.started.elapsed()
    }

    /// Feed one input and carry out everything that follows from it.
    fn feed(&mut self, input: Input) {
        crate::shell::ignored::report(
            &self.settings.project.plan_dir,
            &self.settings.project.name,
            &input,
        );
        if views::shows(&input) {
            self.views_changed();
        }
        let now = self.now();
        let mut world = Carry {
            settings: &self.settings,
            journal: &mut self.journal,
            watching: &mut self.watching,
            agents: &mut self.agents,
            notices: &mut self.service.notices,
            told: false,
        };
        drive(&mut self.engine, &mut world, now, input);
        world.flush();
        if world.told {
            self.views_changed();
        }
    }

    /// The event loop, until SIGTERM or SIGINT.
    async fn serve(
        &mut self,
        w: &mut Wakers,
        load: &dyn Fn() -> Result<Settings, ConfigErrors>,
        mut shutdown: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    ) -> Result<(), DaemonError> {
        let mut clock = Clock::new(
            self.service.notifier.watchdog_interval(),
            self.settings.events.poll_interval,
        );
        // One timer for every deadline, moved only when the earliest one
        // moves: a fresh timer per deadline per turn of the loop cost a
        // registration and a removal in tokio's timer wheel each.
        let mut timer = Box::pin(tokio::time::sleep(Duration::ZERO));
        let mut timer_at = None;
        loop {
            // A reload that moved the roots brings a new watcher's receiver.
            let mut replaced = None;
            // Whether the sessions root is a polled mount may have changed.
            self.want_tree();
            let next = clock.next(self);
            if next != timer_at {
                if let Some(at) = next {
                    timer.as_mut().reset(at);
                }
                timer_at = next;
            }
            tokio::select! {
                biased;
                () = &mut shutdown => return Ok(()),
                _ = w.hangup.recv() => replaced = self.reload(load),
                // Before the watcher: a flood keeps it ready turn after
                // turn, and the watchdog must still be fed from the loop.
                () = timer.as_mut(), if timer_at.is_some() => {
                    timer_at = None;
                    clock.fire(self, Instant::now());
                }
                ready = w.events.fd.readable() => {
                    let mut ready = ready.map_err(|e| DaemonError::Watch(e.to_string()))?;
                    if !self.read_watch()? {
                        ready.clear_ready();
                    }
                }
                Some(input) = w.reports.recv() => self.on_report(input),
                Some(news) = w.tree.recv() => self.on_tree_news(news),
                ready = async {
                    match &self.tracker.pipe {
                        Some(pipe) => pipe.readable().await,
                        None => std::future::pending().await,
                    }
                }, if self.tracker.pipe.is_some() => self.on_pipe_ready(ready),
            }
            if let Some(new) = replaced {
                w.events = new;
            }
            self.update_status();
        }
    }

    /// Read and handle what inotify queued, a bounded batch, so signals
    /// and timers are looked at between batches of a flood. Returns false
    /// once the queue is drained.
    fn read_watch(&mut self) -> Result<bool, DaemonError> {
        let mut seen = std::mem::take(&mut self.watching.seen);
        let mut more = true;
        while more && seen.len() < DRAIN_BATCH {
            more = self
                .watching
                .watch
                .read(&mut seen)
                .map_err(|e| DaemonError::Watch(format!("reading inotify: {e}")))?;
        }
        for s in seen.drain(..) {
            self.on_seen(s);
        }
        self.watching.seen = seen;
        Ok(more)
    }

    /// What a backend's worker reported; a delivery's outcome ends one
    /// background write (a prompt only sent into the agent, its record
    /// awaited, has its outcome still to come).
    fn on_report(&mut self, input: Input) {
        let sent = matches!(
            input,
            Input::Evidence {
                evidence: Evidence::Sent,
                ..
            }
        );
        let outcome = matches!(
            input,
            Input::Delivered { .. } | Input::Undeliverable { .. } | Input::Evidence { .. }
        );
        if outcome && !sent {
            self.agents.background = self.agents.background.saturating_sub(1);
        }
        self.feed(input);
    }
}
