//! Waiting, on the observer's thread, for whichever comes first: a
//! command (its waker), an inotify event, a session's process exiting
//! (its pidfd becomes readable: the kernel says so, nothing is polled).
//! No deadline: how long anything may take is the engine's to time
//! (`core::confirm`), and it asks by a command.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// The sending half: wakes the observer after a command was queued.
#[derive(Debug)]
pub struct Waker(UnixStream);

/// The observer's half, readable while a wake-up is pending.
#[derive(Debug)]
pub struct Wakeup(UnixStream);

/// A connected pair.
pub fn waker() -> io::Result<(Waker, Wakeup)> {
    let (a, b) = UnixStream::pair()?;
    a.set_nonblocking(true)?;
    b.set_nonblocking(true)?;
    Ok((Waker(a), Wakeup(b)))
}

impl Waker {
    /// One byte; a full buffer already holds a pending wake-up.
    pub fn wake(&self) {
        let _ = (&self.0).write(&[1]);
    }

    pub fn try_clone(&self) -> io::Result<Waker> {
        Ok(Waker(self.0.try_clone()?))
    }
}

impl Wakeup {
    /// Take every pending wake-up.
    pub fn drain(&self) {
        let mut buf = [0u8; 64];
        while matches!((&self.0).read(&mut buf), Ok(n) if n > 0) {}
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// A descriptor that becomes readable when process `pid` exits; `None`
/// where the kernel has no pidfds (before Linux 5.3) or the process is gone.
pub fn pidfd(pid: u32) -> Option<OwnedFd> {
    // SAFETY: a plain system call; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a fresh descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Wait until one of `fds` is readable; which are.
pub fn poll(fds: &[RawFd]) -> io::Result<Vec<bool>> {
    let mut set: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `set` is a valid array of `set.len()` pollfds.
    let n = unsafe { libc::poll(set.as_mut_ptr(), set.len() as libc::nfds_t, -1) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::Interrupted => Ok(vec![false; fds.len()]),
            _ => Err(e),
        };
    }
    Ok(set.iter().map(|p| p.revents != 0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_and_a_process_exit_end_the_wait() {
        let (waker, wakeup) = waker().unwrap();
        waker.wake();
        assert_eq!(poll(&[wakeup.fd()]).unwrap(), [true]);
        wakeup.drain();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let fd = pidfd(child.id()).expect("pidfd_open");
        assert_eq!(poll(&[wakeup.fd(), fd.as_raw_fd()]).unwrap(), [false, true]);
        child.wait().unwrap();
    }
}
