//! The one reader of session FIFOs, for the tests and the wake benchmark
//! alike (the benchmark includes this file as it is, by `#[path]`, so it
//! depends on nothing else of the harness).
//!
//! Why one reader and why this way: a test or a benchmark must see each
//! prompt exactly as the agent's side of the pipe would, and as soon as it
//! arrives. So every FIFO is opened `O_RDWR | O_NONBLOCK` — it always has
//! a reader (the daemon never sees ENXIO, and the reader never sees EOF
//! while the daemon opens and closes its writing end for each prompt), and
//! the open never blocks — and one thread blocks in `epoll_wait` over all
//! of a `Reader`'s FIFOs (a benchmark reads hundreds with one thread),
//! splits what arrives at NUL bytes (the `auto` framing on a named pipe)
//! and stamps each prompt with the instant its `read` returned.
//!
//! Every prompt is kept: as a queue (`next`, `try_next`, `drain`, `close`
//! take prompts in order) and as a history (`received`, `texts`, `count`,
//! `wait_for` see everything, taken or not). A test that restarts the
//! daemon can mark epochs (`mark_epoch`): prompts read after the mark carry
//! the new epoch, so it can tell which daemon wrote what.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One prompt as the reader received it.
#[derive(Debug, Clone)]
pub struct Receipt {
    /// Index of the FIFO it came from (in the order given to `open_all`).
    pub fifo: usize,
    /// When the `read` that completed it returned.
    pub at: Instant,
    /// The reader's epoch when it was read (see [`Reader::mark_epoch`]).
    pub epoch: u64,
    pub text: String,
}

/// `mkfifo PATH` (mode 0600); panics on failure.
pub fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert!(
        rc == 0,
        "mkfifo {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

fn open_rdwr(path: &Path) -> OwnedFd {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string; the fd is owned right away.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    assert!(
        fd >= 0,
        "open {} for reading: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
    // SAFETY: a fresh fd.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

#[derive(Default)]
struct State {
    got: Vec<Receipt>,
    /// How many of `got` were taken as a queue.
    taken: usize,
    /// Per FIFO, the bytes after its last NUL.
    partial: Vec<Vec<u8>>,
    epoch: u64,
    want_epoch: u64,
    stop: bool,
    /// Set when the reader thread failed (it has ended).
    error: Option<String>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Notified on every prompt, epoch change and failure.
    changed: Condvar,
}

impl Shared {
    /// The state, even after a panic elsewhere (a failing test must not
    /// abort in the reader's drop).
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A reader over one or many session FIFOs, until dropped or `close`d.
pub struct Reader {
    paths: Vec<PathBuf>,
    shared: Arc<Shared>,
    /// A byte written here makes the thread look at `want_epoch` and `stop`.
    wake: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

const WAKE: u64 = u64::MAX;

impl Reader {
    /// Open `fifo` and start reading (the open has happened when this
    /// returns).
    pub fn open(fifo: &Path) -> Reader {
        Reader::open_all(&[fifo])
    }

    /// Open every FIFO and read them all with one thread.
    pub fn open_all(paths: &[impl AsRef<Path>]) -> Reader {
        let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        let fds: Vec<OwnedFd> = paths.iter().map(|p| open_rdwr(p)).collect();
        let mut pipe = [0; 2];
        // SAFETY: a two-element array for pipe2.
        let rc = unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
        assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
        // SAFETY: fresh fds from pipe2.
        let (wake_r, wake_w) =
            unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
        let shared = Arc::new(Shared::default());
        shared.lock().partial = vec![Vec::new(); fds.len()];
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("fifo-reader".into())
                .spawn(move || {
                    if let Err(e) = read_loop(&fds, &wake_r, &shared) {
                        shared.lock().error = Some(e);
                        shared.changed.notify_all();
                    }
                })
                .expect("spawn the FIFO reader")
        };
        Reader {
            paths,
            shared,
            wake: wake_w,
            thread: Some(thread),
        }
    }

    /// The FIFOs, in the order `Receipt::fifo` counts them.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// Wait (at most `timeout`) until `done` holds of the state.
    fn wait(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&State) -> bool,
    ) -> MutexGuard<'_, State> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            if done(&state) {
                return state;
            }
            if let Some(e) = state.error.clone() {
                drop(state);
                panic!("the reader of {:?} failed: {e}", self.paths);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return state;
            }
            state = match self.shared.changed.wait_timeout(state, left) {
                Ok((s, _)) => s,
                Err(e) => e.into_inner().0,
            };
        }
    }

    /// The next prompt not taken yet, or `None` after `timeout`.
    pub fn try_next_receipt(&self, timeout: Duration) -> Option<Receipt> {
        let mut state = self.wait(timeout, |s| s.got.len() > s.taken);
        let r = state.got.get(state.taken).cloned()?;
        state.taken += 1;
        Some(r)
    }

    /// The next prompt's text, or `None` after `timeout`.
    pub fn try_next(&self, timeout: Duration) -> Option<String> {
        self.try_next_receipt(timeout).map(|r| r.text)
    }

    /// The next prompt's text; panics if none arrives within `timeout`.
    pub fn next(&self, timeout: Duration) -> String {
        self.try_next(timeout).unwrap_or_else(|| {
            panic!(
                "no prompt arrived on {} within {timeout:?}",
                self.describe()
            )
        })
    }

    /// Every prompt received and not taken yet, taken now, without waiting.
    pub fn drain_receipts(&self) -> Vec<Receipt> {
        let mut state = self.lock();
        let out = state.got[state.taken..].to_vec();
        state.taken = state.got.len();
        out
    }

    /// [`Reader::drain_receipts`]' texts.
    pub fn drain(&self) -> Vec<String> {
        self.drain_receipts().into_iter().map(|r| r.text).collect()
    }

    /// Every prompt received so far, taken or not.
    pub fn received(&self) -> Vec<Receipt> {
        self.lock().got.clone()
    }

    /// [`Reader::received`]' texts.
    pub fn texts(&self) -> Vec<String> {
        self.lock().got.iter().map(|r| r.text.clone()).collect()
    }

    /// How many prompts were received so far.
    pub fn count(&self) -> usize {
        self.lock().got.len()
    }

    /// Wait for a prompt (among all received, taken or not) containing
    /// `needle`; panics with what did arrive after `timeout`.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        let find = |s: &State| s.got.iter().find(|r| r.text.contains(needle)).cloned();
        let state = self.wait(timeout, |s| find(s).is_some());
        if let Some(r) = find(&state) {
            return r.text;
        }
        let got: Vec<String> = state.got.iter().map(|r| r.text.clone()).collect();
        drop(state);
        panic!(
            "timed out after {timeout:?} waiting for a prompt containing {needle:?} on {}; \
             received:\n{}",
            self.describe(),
            got.join("\n----\n")
        )
    }

    /// Everything read and not taken, as the bytes came: each untaken
    /// prompt followed by its NUL, then whatever follows the last NUL (for
    /// "nothing else arrived").
    pub fn rest(&self) -> String {
        let state = self.lock();
        let mut out = String::new();
        for r in &state.got[state.taken..] {
            out.push_str(&r.text);
            out.push('\0');
        }
        for p in &state.partial {
            out.push_str(&String::from_utf8_lossy(p));
        }
        out
    }

    /// Start epoch `n` once everything now in the FIFOs has been read. Call
    /// it while no daemon runs: prompts tagged `n` were then written by a
    /// daemon started after this call. Panics if a prompt was cut in the
    /// middle (a daemon wrote part of one).
    pub fn mark_epoch(&self, n: u64) {
        self.lock().want_epoch = n;
        self.poke();
        let reached = self.wait(Duration::from_secs(10), |s| s.epoch >= n).epoch >= n;
        assert!(reached, "the reader did not drain its FIFOs");
    }

    fn poke(&self) {
        // SAFETY: one byte from a valid buffer to our own pipe (a full
        // pipe already wakes the thread).
        unsafe { libc::write(self.wake.as_raw_fd(), b"x".as_ptr().cast(), 1) };
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        names.join(", ")
    }

    fn shutdown(&mut self) {
        self.lock().stop = true;
        self.poke();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Read what is left in the FIFOs, then close them: from now on the
    /// sessions have no reader. Returns the prompts not taken yet.
    pub fn close(mut self) -> Vec<Receipt> {
        self.shutdown();
        self.drain_receipts()
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Read every FIFO that has data until it would block, recording prompts.
fn read_ready(fd: &OwnedFd, i: usize, buf: &mut [u8], shared: &Shared) -> Result<(), String> {
    loop {
        // SAFETY: reading into a valid buffer from an fd we own.
        let r = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        let at = Instant::now();
        if r < 0 {
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::WouldBlock => return Ok(()),
                std::io::ErrorKind::Interrupted => continue,
                _ => return Err(format!("reading FIFO {i}: {e}")),
            }
        }
        if r == 0 {
            return Ok(());
        }
        let mut state = shared.lock();
        let epoch = state.epoch;
        let mut start = 0;
        let got = &buf[..r as usize];
        for (k, &b) in got.iter().enumerate() {
            if b == 0 {
                let mut whole = std::mem::take(&mut state.partial[i]);
                whole.extend_from_slice(&got[start..k]);
                let text = String::from_utf8_lossy(&whole).into_owned();
                state.got.push(Receipt {
                    fifo: i,
                    at,
                    epoch,
                    text,
                });
                start = k + 1;
            }
        }
        state.partial[i].extend_from_slice(&got[start..]);
        drop(state);
        shared.changed.notify_all();
    }
}

fn read_loop(fds: &[OwnedFd], wake: &OwnedFd, shared: &Shared) -> Result<(), String> {
    let os = |what: &str| format!("{what}: {}", std::io::Error::last_os_error());
    // SAFETY: plain syscalls on fds this thread owns.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(os("epoll_create1"));
    }
    // SAFETY: a fresh fd.
    let ep = unsafe { OwnedFd::from_raw_fd(ep) };
    let add = |fd: i32, data: u64| {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: data,
        };
        // SAFETY: a valid event for fds we own.
        let rc = unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc == 0 {
            Ok(())
        } else {
            Err(os("epoll_ctl"))
        }
    };
    for (i, fd) in fds.iter().enumerate() {
        add(fd.as_raw_fd(), i as u64)?;
    }
    add(wake.as_raw_fd(), WAKE)?;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut buf = vec![0u8; 1 << 16];
    loop {
        // SAFETY: a valid buffer of `events.len()` events.
        let n = unsafe {
            libc::epoll_wait(ep.as_raw_fd(), events.as_mut_ptr(), events.len() as i32, -1)
        };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(os("epoll_wait"));
        }
        for ev in &events[..n as usize] {
            let i = ev.u64;
            if i != WAKE {
                read_ready(&fds[i as usize], i as usize, &mut buf, shared)?;
                continue;
            }
            let mut sink = [0u8; 64];
            // SAFETY: reading into a valid buffer from our own pipe.
            while unsafe { libc::read(wake.as_raw_fd(), sink.as_mut_ptr().cast(), sink.len()) } > 0
            {
            }
            // Whatever is in the FIFOs now was written before the request.
            for (k, fd) in fds.iter().enumerate() {
                read_ready(fd, k, &mut buf, shared)?;
            }
            let mut state = shared.lock();
            if state.want_epoch > state.epoch {
                if state.partial.iter().any(|p| !p.is_empty()) {
                    return Err("a prompt was cut in the middle at an epoch mark".into());
                }
                state.epoch = state.want_epoch;
                drop(state);
                shared.changed.notify_all();
                state = shared.lock();
            }
            if state.stop {
                return Ok(());
            }
        }
    }
}
