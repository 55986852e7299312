//! When a plan file changed, as the test sees it: a thread reading
//! inotify for the plan directory (reveille's own `shell::inotify`, the
//! way the daemon sees it) stamps every close-after-write and rename of a
//! plan with the moment it was read and the text the file then held. A
//! step "became ready" the instant its dependency was first seen ticked —
//! the agent's own edit, made by its shell tool.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use reveille::shell::inotify::{Inotify, Kind, Mask};

/// One version of one file.
#[derive(Debug, Clone)]
pub struct Version {
    pub at: Instant,
    pub path: PathBuf,
    pub text: String,
}

/// The watcher; stops (and joins its thread) when dropped.
pub struct PlanWatch {
    versions: Arc<Mutex<Vec<Version>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PlanWatch {
    /// Watch `dir` from now on.
    pub fn start(dir: &Path) -> PlanWatch {
        let inotify = Inotify::new().expect("inotify");
        inotify
            .add(dir, Mask::FILES)
            .expect("watch the plan directory");
        let versions = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (v, s, dir) = (versions.clone(), stop.clone(), dir.to_path_buf());
        let thread = std::thread::spawn(move || watch(inotify, &dir, &v, &s));
        PlanWatch {
            versions,
            stop,
            thread: Some(thread),
        }
    }

    /// When `path` was first seen with the step titled `title` ticked.
    pub fn ticked_at(&self, path: &Path, title: &str) -> Option<Instant> {
        self.versions
            .lock()
            .unwrap()
            .iter()
            .find(|v| v.path == path && ticked(&v.text, title))
            .map(|v| v.at)
    }
}

/// Whether plan text `text` has the step titled `title` ticked: its line
/// `- [x] <title>`, with or without a dependency annotation.
pub fn ticked(text: &str, title: &str) -> bool {
    let line = format!("- [x] {title}");
    text.lines().map(str::trim).any(|l| {
        l == line
            || l.strip_prefix(&line)
                .is_some_and(|rest| rest.starts_with(" (after:"))
    })
}

fn watch(mut inotify: Inotify, dir: &Path, versions: &Mutex<Vec<Version>>, stop: &AtomicBool) {
    let fd = inotify.try_clone_fd().expect("inotify fd");
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: one valid pollfd, for a descriptor this thread owns.
        if unsafe { libc::poll(fds.as_mut_ptr(), 1, 20) } <= 0 {
            continue;
        }
        let at = Instant::now();
        let mut names = Vec::new();
        while let Ok(true) = inotify.read(|e| {
            if matches!(e.kind, Kind::ClosedWrite | Kind::MovedTo) {
                names.extend(e.name.map(|n| dir.join(n)));
            }
        }) {}
        for path in names {
            if let Ok(text) = std::fs::read_to_string(&path) {
                versions.lock().unwrap().push(Version { at, path, text });
            }
        }
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
