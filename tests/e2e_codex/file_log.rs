//! Every version of the files in a directory as their writers closed them,
//! with when: the moment a plan step became ready is the moment the agent
//! closed the plan file with the step before it ticked (or the plan was
//! written), seen through inotify exactly as reveille sees it — so the
//! latency a test measures is the agent's, not a poll interval's.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// One closed version of a file.
#[derive(Debug, Clone)]
pub struct Version {
    /// When inotify reported the close (or the rename into place).
    pub at: Instant,
    pub path: PathBuf,
    /// What the file held then (read right after the event).
    pub text: String,
}

/// A watch on one directory, recording every close-after-write and
/// rename-into-place; stopped on drop.
pub struct FileLog {
    versions: Arc<Mutex<Vec<Version>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FileLog {
    /// Watch `dir` from now on.
    pub fn watch(dir: &Path) -> FileLog {
        // SAFETY: plain syscalls; the fd is owned at once.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(
            fd >= 0,
            "inotify_init1: {}",
            std::io::Error::last_os_error()
        );
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let c = CString::new(dir.as_os_str().as_bytes()).unwrap();
        let mask = libc::IN_CLOSE_WRITE | libc::IN_MOVED_TO;
        // SAFETY: a valid fd and a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), mask) };
        assert!(wd >= 0, "inotify_add_watch {}", dir.display());
        let versions = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (v, s, dir) = (versions.clone(), stop.clone(), dir.to_path_buf());
        let thread = std::thread::spawn(move || record(fd, &dir, &v, &s));
        FileLog {
            versions,
            stop,
            thread: Some(thread),
        }
    }

    /// Every version of `path` so far, oldest first.
    pub fn of(&self, path: &Path) -> Vec<Version> {
        let all = self.versions.lock().unwrap();
        all.iter().filter(|v| v.path == path).cloned().collect()
    }

    /// When `path` was first closed holding text that `holds` accepts.
    pub fn first(&self, path: &Path, holds: impl Fn(&str) -> bool) -> Option<Instant> {
        self.of(path)
            .into_iter()
            .find(|v| holds(&v.text))
            .map(|v| v.at)
    }
}

impl Drop for FileLog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The watch's thread: wait for events (20 ms at a time, to see `stop`),
/// and record each named file's content at once.
fn record(fd: OwnedFd, dir: &Path, versions: &Mutex<Vec<Version>>, stop: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::SeqCst) {
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, 20) } <= 0 {
            continue;
        }
        let at = Instant::now();
        // SAFETY: reading into a buffer we own, of its length.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            continue;
        }
        for name in names(&buf[..n as usize]) {
            let path = dir.join(name);
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            versions.lock().unwrap().push(Version { at, path, text });
        }
    }
}

/// The file names of a buffer of `struct inotify_event`s.
fn names(mut buf: &[u8]) -> Vec<&OsStr> {
    const HEAD: usize = std::mem::size_of::<libc::inotify_event>();
    let mut out = Vec::new();
    while buf.len() >= HEAD {
        let len = u32::from_ne_bytes(buf[12..16].try_into().unwrap()) as usize;
        let name = &buf[HEAD..HEAD + len];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(len)];
        if !name.is_empty() {
            out.push(OsStr::from_bytes(name));
        }
        buf = &buf[HEAD + len..];
    }
    out
}
