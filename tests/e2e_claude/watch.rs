//! The moments a plan file was written, as inotify reports each writer's
//! close — when a step became ready because the agent ticked the one
//! before it — measured on a thread of its own, without polling. A test
//! may also act on each write at once (send the next step straight to the
//! session's socket: the agent's own fastest path; kill a program at the
//! very moment of a tick).

use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use reveille::shell::inotify::{Inotify, Kind, Mask};

/// One write of the file: when its writer closed it (also on the wall
/// clock, to set beside the daemon's log), and what it held then.
#[derive(Debug, Clone)]
pub struct Written {
    pub at: Instant,
    pub wall: SystemTime,
    pub text: String,
}

/// Follows one file's writes until dropped.
pub struct PlanWatch {
    seen: Arc<Mutex<Vec<Written>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PlanWatch {
    /// Follow `path` (which need not exist yet); `on_write` runs on the
    /// watching thread right after each close.
    pub fn start(path: &Path, on_write: impl FnMut(&Written) + Send + 'static) -> PlanWatch {
        let ino = Inotify::new().expect("inotify");
        ino.add(path.parent().expect("a directory"), Mask::FILES)
            .expect("watch the plan's directory");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, flag, file) = (seen.clone(), stop.clone(), path.to_path_buf());
        let thread = std::thread::spawn(move || follow(ino, file, s, flag, on_write));
        PlanWatch {
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// Every write so far.
    pub fn writes(&self) -> Vec<Written> {
        self.seen.lock().unwrap().clone()
    }

    /// When `- [x] <title>` first appeared in the file.
    pub fn ticked(&self, title: &str) -> Option<Instant> {
        self.tick(title).map(|w| w.at)
    }

    /// The write that first held `- [x] <title>`.
    pub fn tick(&self, title: &str) -> Option<Written> {
        let line = format!("- [x] {title}");
        self.writes().into_iter().find(|w| w.text.contains(&line))
    }
}

impl Drop for PlanWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn follow(
    mut ino: Inotify,
    file: PathBuf,
    seen: Arc<Mutex<Vec<Written>>>,
    stop: Arc<AtomicBool>,
    mut on_write: impl FnMut(&Written),
) {
    let name = file.file_name().map(|n| n.to_os_string());
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [libc::pollfd {
            fd: ino.as_fd().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: one valid pollfd for a descriptor this thread owns. The
        // timeout only bounds how long a drop waits for the thread.
        if unsafe { libc::poll(fds.as_mut_ptr(), 1, 50) } <= 0 {
            continue;
        }
        let mut closed = false;
        while let Ok(true) = ino.read(|e| {
            closed |= e.kind == Kind::ClosedWrite && e.name == name.as_deref();
        }) {}
        if !closed {
            continue;
        }
        let (at, wall) = (Instant::now(), SystemTime::now());
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let w = Written { at, wall, text };
        on_write(&w);
        seen.lock().unwrap().push(w);
    }
}
