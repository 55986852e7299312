//! What the live view waits for, all in one `poll(2)`: inotify on the
//! state directory and the plan directory (a directory that does not exist
//! yet is waited for through its nearest existing ancestor, as the daemon
//! does), the signals that end, resize or suspend it (a `signalfd`, so a
//! signal is one more readable descriptor, never a handler racing the
//! loop), and the keys typed on the terminal. Nothing is polled: between
//! two changes the process sleeps until its timeout (the once-a-second
//! tick the caller asks for).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

use reveille::shell::inotify::{Inotify, Kind, Mask, Wd};

/// One reason the loop woke up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// `q`, Ctrl-C, SIGTERM, SIGHUP: restore the terminal and end.
    Quit,
    /// Something under a watched directory changed.
    Changed,
    /// The terminal was resized, or Ctrl-L asked for a clean redraw.
    Redraw,
    /// Ctrl-Z (SIGTSTP): give the terminal back, stop, come back on SIGCONT.
    Suspend,
    /// SIGCONT: the shell may have reset the terminal; take it again.
    Continued,
}

/// Which signals are taken from their default action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signals {
    /// The full-screen view: also resize, suspend and continue, and
    /// SIGQUIT, whose default (a core dump) would leave the terminal raw.
    Terminal,
    /// The snapshot stream: only those that end it.
    Stream,
}

impl Signals {
    fn set(self) -> SigSet {
        let mut set = SigSet::empty();
        for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            set.add(sig);
        }
        if self == Signals::Terminal {
            for sig in [
                Signal::SIGQUIT,
                Signal::SIGWINCH,
                Signal::SIGTSTP,
                Signal::SIGCONT,
            ] {
                set.add(sig);
            }
        }
        set
    }
}

/// What a watch is for.
enum Watch {
    /// One of the directories shown: any event in it counts.
    Target,
    /// The nearest existing ancestor of targets that do not exist yet:
    /// only these names appearing (or going) in it count.
    Ancestor(BTreeSet<OsString>),
}

/// The descriptors the loop waits on.
pub struct Wakeups {
    signals: SignalFd,
    inotify: Inotify,
    targets: Vec<PathBuf>,
    watches: BTreeMap<Wd, Watch>,
    /// Whether a target could not be watched at all (no permission, the
    /// watch limit): the caller then reads again on every tick instead.
    blind: bool,
    /// Whether keys are read from standard input (a terminal).
    keys: bool,
}

impl Wakeups {
    /// Block `signals` (they arrive through the signalfd from now on) and
    /// watch `targets`; read keys from standard input when `keys`.
    pub fn new(targets: Vec<PathBuf>, signals: Signals, keys: bool) -> io::Result<Wakeups> {
        let set = signals.set();
        set.thread_block().map_err(io::Error::from)?;
        let signals = SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(io::Error::from)?;
        let mut w = Wakeups {
            signals,
            inotify: Inotify::new()?,
            targets,
            watches: BTreeMap::new(),
            blind: false,
            keys,
        };
        w.watch_all();
        Ok(w)
    }

    /// Whether some target is not watched: changes to it are not seen.
    pub fn blind(&self) -> bool {
        self.blind
    }

    /// (Re)establish a watch on each target, or on its nearest existing
    /// ancestor; watches no longer needed are dropped.
    fn watch_all(&mut self) {
        let mut wanted: BTreeMap<PathBuf, Option<BTreeSet<OsString>>> = BTreeMap::new();
        let mut blind = false;
        for target in &self.targets {
            match nearest(target) {
                Some((dir, None)) => {
                    wanted.insert(dir, None);
                }
                Some((dir, Some(name))) => {
                    if let Some(names) = wanted.entry(dir).or_insert_with(|| Some(BTreeSet::new()))
                    {
                        names.insert(name);
                    }
                }
                None => blind = true,
            }
        }
        let old = std::mem::take(&mut self.watches);
        for (dir, names) in wanted {
            let (mask, watch) = match names {
                None => (Mask::FILES, Watch::Target),
                Some(names) => (Mask::ANCESTOR, Watch::Ancestor(names)),
            };
            match self.inotify.add(&dir, mask) {
                Ok(wd) => {
                    self.watches.insert(wd, watch);
                }
                Err(_) => blind = true,
            }
        }
        self.blind = blind;
        for wd in old.keys().filter(|wd| !self.watches.contains_key(wd)) {
            self.inotify.remove(*wd);
        }
    }

    /// Wait at most `timeout` and say why it woke (empty: the timeout).
    pub fn wait(&mut self, timeout: Duration) -> io::Result<Vec<Wake>> {
        let ready = {
            let stdin = io::stdin();
            let mut fds = vec![
                PollFd::new(self.signals.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.inotify.as_fd(), PollFlags::POLLIN),
            ];
            if self.keys {
                fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLIN));
            }
            let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, timeout) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => return Ok(Vec::new()),
                Err(e) => return Err(e.into()),
            }
            let on = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
            fds.iter().map(on).collect::<Vec<bool>>()
        };
        let mut out = Vec::new();
        if ready[0] {
            self.read_signals(&mut out)?;
        }
        if ready[1] {
            self.read_changes(&mut out)?;
        }
        if ready.get(2) == Some(&true) {
            self.read_keys(&mut out);
        }
        Ok(out)
    }

    fn read_signals(&mut self, out: &mut Vec<Wake>) -> io::Result<()> {
        while let Some(info) = self.signals.read_signal().map_err(io::Error::from)? {
            let wake = match Signal::try_from(info.ssi_signo as i32) {
                Ok(Signal::SIGWINCH) => Wake::Redraw,
                Ok(Signal::SIGTSTP) => Wake::Suspend,
                Ok(Signal::SIGCONT) => Wake::Continued,
                _ => Wake::Quit,
            };
            out.push(wake);
        }
        Ok(())
    }

    fn read_changes(&mut self, out: &mut Vec<Wake>) -> io::Result<()> {
        let mut changed = false;
        let mut rewatch = false;
        let watches = &self.watches;
        while self.inotify.read(|e| {
            let counts = match (watches.get(&e.wd), e.kind) {
                (_, Kind::Overflow) => true,
                (None, _) => false,
                (Some(Watch::Target), _) => true,
                (Some(Watch::Ancestor(names)), kind) => {
                    matches!(kind, Kind::SelfGone | Kind::Ignored)
                        || e.name.is_some_and(|n| names.contains(n))
                }
            };
            let moved = matches!(e.kind, Kind::SelfGone | Kind::Ignored | Kind::Overflow);
            let ancestor = matches!(watches.get(&e.wd), Some(Watch::Ancestor(_)));
            changed |= counts;
            rewatch |= counts && (moved || ancestor);
        })? {}
        if rewatch {
            self.watch_all();
        }
        if changed {
            out.push(Wake::Changed);
        }
        Ok(())
    }

    fn read_keys(&mut self, out: &mut Vec<Wake>) {
        let mut buf = [0u8; 64];
        let stdin = io::stdin();
        let fd: BorrowedFd<'_> = stdin.as_fd();
        let n = match nix::unistd::read(fd.as_raw_fd(), &mut buf) {
            Ok(n) => n,
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => return,
            Err(_) => 0,
        };
        if n == 0 {
            // The terminal is gone (or stdin ended): no keys any more, and
            // nothing to poll for.
            self.keys = false;
            return;
        }
        for &b in &buf[..n] {
            match b {
                b'q' | b'Q' | 0x03 | 0x04 => out.push(Wake::Quit),
                0x0c => out.push(Wake::Redraw),
                0x1a => out.push(Wake::Suspend),
                _ => {}
            }
        }
    }
}

/// The directory to watch for `target`: itself when it exists (no
/// name), else its nearest existing ancestor and the name, right below
/// that ancestor, on the way to `target`.
fn nearest(target: &Path) -> Option<(PathBuf, Option<OsString>)> {
    if target.is_dir() {
        return Some((target.to_path_buf(), None));
    }
    let mut below = target;
    let mut up = target.parent();
    while let Some(dir) = up {
        if dir.is_dir() {
            return Some((dir.to_path_buf(), below.file_name().map(OsString::from)));
        }
        below = dir;
        up = dir.parent();
    }
    None
}
