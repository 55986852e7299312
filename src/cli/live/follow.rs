//! Following a project's status: read it again when something under the
//! state or plan directory changed — at most once per `PACE`, so a burst
//! of journal appends costs one read — and tick once a second on the
//! wall clock's second, for the "… ago" times and the clock, and to see a
//! daemon start or stop: a `kill -9` leaves no trace in any file, and a
//! released lock changes none.

use std::io;
use std::time::{Duration, Instant, SystemTime};

use reveille::config::Settings;
use reveille::shell::status;

use super::layout::Shown;
use super::wakeups::{Signals, Wake, Wakeups};

/// The least time between two reads of the status.
const PACE: Duration = Duration::from_millis(100);

/// What happened, for the view to act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The status was read again (it may or may not differ).
    Changed,
    /// A second passed: the times shown moved on.
    Tick,
    /// Redraw the whole screen (a resize, Ctrl-L).
    Redraw,
    /// Ctrl-Z.
    Suspend,
    /// SIGCONT.
    Continued,
    /// The end: `q`, Ctrl-C, SIGTERM, SIGHUP.
    Quit,
}

/// The status of one project, kept current.
pub struct Follow<'a> {
    settings: &'a Settings,
    wakeups: Wakeups,
    shown: Shown,
    /// The daemon's pid when the status was last read.
    running: Option<u32>,
    gathered: Instant,
    /// Something changed since the last read.
    dirty: bool,
    tick_at: Instant,
}

impl<'a> Follow<'a> {
    /// Watch the project's state and plan directories and read its status.
    pub fn new(settings: &'a Settings, signals: Signals, keys: bool) -> io::Result<Follow<'a>> {
        let dirs = vec![
            settings.state.dir.clone(),
            settings.project.plan_dir.clone(),
        ];
        let wakeups = Wakeups::new(dirs, signals, keys)?;
        let now = Instant::now();
        let mut f = Follow {
            settings,
            wakeups,
            shown: Err(String::new()),
            running: None,
            gathered: now,
            dirty: false,
            tick_at: next_second(now),
        };
        f.gather();
        Ok(f)
    }

    /// The status as last read.
    pub fn shown(&self) -> &Shown {
        &self.shown
    }

    fn gather(&mut self) {
        self.shown = status::gather(self.settings);
        self.running = match &self.shown {
            Ok(s) => s.running,
            Err(_) => status::running_pid(&self.settings.state.dir),
        };
        self.gathered = Instant::now();
        self.dirty = false;
    }

    /// Wait for the next thing the view must act on.
    pub fn next(&mut self) -> io::Result<Next> {
        loop {
            let now = Instant::now();
            if self.dirty && now >= self.gathered + PACE {
                self.gather();
                return Ok(Next::Changed);
            }
            if now >= self.tick_at {
                self.tick_at = next_second(now);
                let daemon = status::running_pid(&self.settings.state.dir);
                if self.wakeups.blind() || daemon != self.running {
                    self.gather();
                    return Ok(Next::Changed);
                }
                return Ok(Next::Tick);
            }
            let mut until = self.tick_at;
            if self.dirty {
                until = until.min(self.gathered + PACE);
            }
            let mut other = None;
            for wake in self.wakeups.wait(until - now)? {
                match wake {
                    Wake::Quit => return Ok(Next::Quit),
                    Wake::Changed => self.dirty = true,
                    Wake::Suspend => other = Some(Next::Suspend),
                    Wake::Redraw => other = other.or(Some(Next::Redraw)),
                    Wake::Continued => other = other.or(Some(Next::Continued)),
                }
            }
            if let Some(next) = other {
                return Ok(next);
            }
        }
    }
}

/// The instant the wall clock next turns a whole second.
fn next_second(now: Instant) -> Instant {
    let into = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_millis());
    now + Duration::from_millis(u64::from(1000 - into))
}
