//! The tracker's event stream: the event log tailed by byte offset, or a
//! named pipe read as a stream — whichever `[events] path` turns out to
//! be — fed to the engine as `TrackerLines`.

use crate::core::input::Input;
use crate::shell::tail::{PipeTail, Tail};

use super::Daemon;

/// The tracker's event stream as it is read: one of the two.
#[derive(Default)]
pub(super) struct Tracker {
    /// The tracker's event log, when `[events] path` is a file.
    pub(super) tail: Option<Tail>,
    /// The tracker's event stream, when `[events] path` is a named pipe.
    pub(super) pipe: Option<PipeTail>,
}

impl Daemon {
    /// Read what the event log gained and feed it to the engine.
    pub(super) fn read_events(&mut self) {
        self.open_pipe();
        loop {
            let Some(tail) = self.tracker.tail.as_mut() else {
                return;
            };
            match tail.read() {
                Ok(Some(r)) => {
                    if let Some(why) = r.restarted {
                        self.feed(Input::TrackerRestarted { why });
                    }
                    let more = r.more;
                    if !r.lines.is_empty() || Some(r.cursor) != self.engine.memory().cursor() {
                        self.feed(Input::TrackerLines {
                            lines: r.lines,
                            cursor: r.cursor,
                        });
                    }
                    if !more {
                        return;
                    }
                }
                Ok(None) => {
                    if tail.first_missing() && self.settings.events.path_set {
                        tracing::warn!(project = %self.settings.project.name, "tracker event log {} does not exist (yet); waiting for it", tail.path().display());
                    }
                    return;
                }
                Err(e) => {
                    tracing::error!(project = %self.settings.project.name, "cannot read the tracker event log {}: {e}", tail.path().display());
                    return;
                }
            }
        }
    }

    /// On a polled (FUSE/9P) event log, each poll reads what it gained from
    /// the file held open (`Tail::peek`): its size as stat reports it may
    /// be a second old, which would hold a claim back that long.
    pub(super) fn peek_events(&mut self) {
        let polled = self
            .settings
            .events
            .path
            .as_deref()
            .is_some_and(|p| self.watching.watch.is_polled(p));
        if !polled {
            return;
        }
        loop {
            let Some(tail) = self.tracker.tail.as_mut() else {
                return;
            };
            match tail.peek() {
                Ok(Some(r)) => {
                    let more = r.more;
                    if !r.lines.is_empty() {
                        self.feed(Input::TrackerLines {
                            lines: r.lines,
                            cursor: r.cursor,
                        });
                    }
                    if !more {
                        return;
                    }
                }
                // Not opened yet, or the read failed: the fingerprint
                // poll's full read (`read_events`) opens it and says why.
                Ok(None) | Err(_) => return,
            }
        }
    }

    /// Switch to stream mode if the event path is (now) a named pipe.
    pub(super) fn open_pipe(&mut self) {
        let Some(path) = self.settings.events.path.clone() else {
            return;
        };
        if self.tracker.pipe.is_some() {
            return;
        }
        match PipeTail::open(&path) {
            Ok(Some(pipe)) => {
                tracing::info!(project = %self.settings.project.name, "tracker events: reading the named pipe {} as a stream", path.display());
                self.tracker.pipe = Some(pipe);
                self.tracker.tail = None;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::error!(project = %self.settings.project.name, "cannot open the tracker event pipe {}: {e}", path.display());
            }
        }
    }

    /// Drain the tracker's named pipe.
    pub(super) fn read_pipe(&mut self) {
        let Some(pipe) = self.tracker.pipe.as_mut() else {
            return;
        };
        match pipe.read() {
            Ok(lines) if !lines.is_empty() => {
                let cursor = self.engine.memory().cursor().unwrap_or_default();
                self.feed(Input::TrackerLines { lines, cursor });
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(project = %self.settings.project.name, "cannot read the tracker event pipe {}: {e}", pipe.path().display());
            }
        }
    }

    pub(super) fn on_pipe_ready(&mut self, ready: std::io::Result<()>) {
        match ready {
            Ok(()) => self.read_pipe(),
            Err(e) => {
                tracing::error!(project = %self.settings.project.name, "tracker event pipe: {e}; no longer reading it");
                self.tracker.pipe = None;
            }
        }
    }
}
