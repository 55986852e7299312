//! Session FIFOs and their reader: every FIFO is opened `O_RDWR` (so it
//! always has a reader and the daemon never sees ENXIO), and one thread
//! blocks in `epoll_wait` over all of them, reads what arrives, splits it at
//! NUL bytes (the default framing on a named pipe) and timestamps each
//! prompt the moment its read returns.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One prompt as the reader saw it.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// Index of the FIFO it came from.
    pub fifo: usize,
    /// When the `read` that completed it returned.
    pub at: Instant,
    pub text: String,
}

/// `mkfifo PATH` (mode 0600).
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
        "open {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
    // SAFETY: fresh fd.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// The reader thread over a set of FIFOs.
pub struct Readers {
    rx: Receiver<Prompt>,
    /// Writing a byte here stops the thread.
    stop: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

const STOP: u64 = u64::MAX;

impl Readers {
    /// Open every FIFO and start reading.
    pub fn open(paths: &[impl AsRef<Path>]) -> Readers {
        let fds: Vec<OwnedFd> = paths.iter().map(|p| open_rdwr(p.as_ref())).collect();
        let mut pipe = [0; 2];
        // SAFETY: a two-element array for pipe2.
        assert_eq!(
            unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) },
            0
        );
        // SAFETY: fresh fds from pipe2.
        let (stop_r, stop_w) =
            unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
        let (tx, rx) = channel();
        let thread = std::thread::Builder::new()
            .name("fifo-reader".into())
            .spawn(move || {
                // SAFETY: plain syscalls on fds this thread owns.
                let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
                assert!(ep >= 0);
                let ep = unsafe { OwnedFd::from_raw_fd(ep) };
                let add = |fd: i32, data: u64| {
                    let mut ev = libc::epoll_event {
                        events: libc::EPOLLIN as u32,
                        u64: data,
                    };
                    let rc = unsafe {
                        libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev)
                    };
                    assert_eq!(rc, 0, "epoll_ctl: {}", std::io::Error::last_os_error());
                };
                for (i, fd) in fds.iter().enumerate() {
                    add(fd.as_raw_fd(), i as u64);
                }
                add(stop_r.as_raw_fd(), STOP);
                let mut partial: Vec<Vec<u8>> = vec![Vec::new(); fds.len()];
                let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
                let mut buf = vec![0u8; 1 << 16];
                loop {
                    let n = unsafe {
                        libc::epoll_wait(
                            ep.as_raw_fd(),
                            events.as_mut_ptr(),
                            events.len() as i32,
                            -1,
                        )
                    };
                    if n < 0 {
                        if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                        {
                            continue;
                        }
                        panic!("epoll_wait: {}", std::io::Error::last_os_error());
                    }
                    for ev in &events[..n as usize] {
                        let i = ev.u64;
                        if i == STOP {
                            return;
                        }
                        let i = i as usize;
                        loop {
                            let r = unsafe {
                                libc::read(fds[i].as_raw_fd(), buf.as_mut_ptr().cast(), buf.len())
                            };
                            let at = Instant::now();
                            if r <= 0 {
                                break;
                            }
                            let got = &buf[..r as usize];
                            let mut start = 0;
                            for (k, &b) in got.iter().enumerate() {
                                if b == 0 {
                                    let mut whole = std::mem::take(&mut partial[i]);
                                    whole.extend_from_slice(&got[start..k]);
                                    let text = String::from_utf8_lossy(&whole).into_owned();
                                    if tx.send(Prompt { fifo: i, at, text }).is_err() {
                                        return;
                                    }
                                    start = k + 1;
                                }
                            }
                            partial[i].extend_from_slice(&got[start..]);
                        }
                    }
                }
            })
            .expect("spawn the FIFO reader");
        Readers {
            rx,
            stop: stop_w,
            thread: Some(thread),
        }
    }

    /// The next prompt, or `None` after `timeout`.
    pub fn next(&self, timeout: Duration) -> Option<Prompt> {
        match self.rx.recv_timeout(timeout) {
            Ok(p) => Some(p),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("the FIFO reader thread died"),
        }
    }

    /// Everything already received, without waiting.
    pub fn drain(&self) -> Vec<Prompt> {
        self.rx.try_iter().collect()
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        // SAFETY: writing one byte from a valid buffer to our pipe.
        unsafe { libc::write(self.stop.as_raw_fd(), b"x".as_ptr().cast(), 1) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
