//! inotify, read on the event loop's own thread.
//!
//! One non-blocking inotify instance; the loop waits for it to be readable
//! (tokio's `AsyncFd` over a duplicate of the descriptor) and reads whole
//! batches of events straight into its own buffer. No thread, no channel,
//! no allocation per event: each wake-up of the loop is one `read(2)` of
//! everything the kernel queued, and each directory is watched with only
//! the events that mean something for it (see `Mask`), so a writer's open
//! of a plan, or the daemon's own reads, never wake anyone.
//!
//! What `notify` would add on top — a thread and a channel into the loop,
//! and a fixed mask that includes every open — was a third of the CPU of a
//! wake-up. Overflow is the kernel's own `IN_Q_OVERFLOW`; watch limits are
//! `ENOSPC` from `inotify_add_watch`, as before.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A watch descriptor, as the kernel numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Wd(i32);

/// Which events a directory is watched for (a set of `IN_*` bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mask(u32);

impl Mask {
    /// A directory of plan files or of one watched file: closes after
    /// writing, plain modifications (read after a settle), renames,
    /// creations and deletions, and the directory itself going away. Not
    /// opens: a writer's open, or the daemon's own read, means nothing.
    pub const FILES: Mask = Mask(
        libc::IN_CLOSE_WRITE
            | libc::IN_MODIFY
            | libc::IN_MOVED_FROM
            | libc::IN_MOVED_TO
            | libc::IN_CREATE
            | libc::IN_DELETE
            | libc::IN_DELETE_SELF
            | libc::IN_MOVE_SELF,
    );
    /// A session directory: its files as above, and opens, since the
    /// opening of its enqueue file is how a returning FIFO reader is seen.
    pub const SESSION: Mask = Mask(Mask::FILES.0 | libc::IN_OPEN);
    /// An ancestor of a root that does not exist yet: only names
    /// appearing in it, and it going away.
    pub const ANCESTOR: Mask = Mask(
        libc::IN_CREATE
            | libc::IN_MOVED_TO
            | libc::IN_MOVED_FROM
            | libc::IN_DELETE
            | libc::IN_DELETE_SELF
            | libc::IN_MOVE_SELF,
    );

    /// Every event of either.
    pub fn union(self, other: Mask) -> Mask {
        Mask(self.0 | other.0)
    }

    /// Whether every event of `other` is in this mask.
    pub fn covers(self, other: Mask) -> bool {
        self.0 & other.0 == other.0
    }
}

/// One event as the kernel reported it. The name borrows the read buffer.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    pub wd: Wd,
    pub kind: Kind,
    /// Whether the event is about a directory inside the watched one.
    pub is_dir: bool,
    /// The name inside the watched directory; `None` for events about the
    /// watched directory itself.
    pub name: Option<&'a OsStr>,
}

/// What happened, one kind per event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ClosedWrite,
    Modified,
    Opened,
    Created,
    Deleted,
    MovedFrom,
    MovedTo,
    /// The watched directory itself was deleted, moved, or its filesystem
    /// unmounted.
    SelfGone,
    /// The kernel removed the watch (after `SelfGone`, or on request).
    Ignored,
    /// The kernel's queue overflowed: events were lost.
    Overflow,
    /// A bit this module does not ask for.
    Other,
}

fn kind(mask: u32) -> Kind {
    // Overflow and ignored come alone or with bits that add nothing.
    if mask & libc::IN_Q_OVERFLOW != 0 {
        return Kind::Overflow;
    }
    if mask & libc::IN_IGNORED != 0 {
        return Kind::Ignored;
    }
    match mask & !libc::IN_ISDIR {
        libc::IN_CLOSE_WRITE => Kind::ClosedWrite,
        libc::IN_MODIFY => Kind::Modified,
        libc::IN_OPEN => Kind::Opened,
        libc::IN_CREATE => Kind::Created,
        libc::IN_DELETE => Kind::Deleted,
        libc::IN_MOVED_FROM => Kind::MovedFrom,
        libc::IN_MOVED_TO => Kind::MovedTo,
        libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_UNMOUNT => Kind::SelfGone,
        _ => Kind::Other,
    }
}

/// The size of one read: room for hundreds of events with short names.
const BUF: usize = 16 * 1024;
const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
/// An event with the longest name a directory entry can have.
const LARGEST_EVENT: usize = HEADER + 256;

/// One inotify instance and the buffer it is read into.
pub struct Inotify {
    fd: OwnedFd,
    buf: Box<[u8]>,
}

impl Inotify {
    pub fn new() -> io::Result<Inotify> {
        // SAFETY: a plain system call; the result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Inotify {
            // SAFETY: `fd` is a fresh descriptor that nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            buf: vec![0; BUF].into_boxed_slice(),
        })
    }

    /// A second descriptor of the same instance, for the loop to wait on.
    pub fn try_clone_fd(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    /// Watch `dir` for `mask` (replacing the mask it had). `ENOSPC` is the
    /// watch limit.
    pub fn add(&self, dir: &Path, mask: Mask) -> io::Result<Wd> {
        let c = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let flags = mask.0 | libc::IN_ONLYDIR | libc::IN_EXCL_UNLINK;
        // SAFETY: a valid descriptor and C string; the result is checked.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), flags) };
        if wd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Wd(wd))
    }

    pub fn remove(&self, wd: Wd) {
        // SAFETY: a plain system call; a stale `wd` only fails with EINVAL.
        unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd.0) };
    }

    /// One `read(2)` of what is queued, each event passed to `f`. Returns
    /// false when the queue is drained: nothing was queued, or the read
    /// left room for another event of any size — the kernel fills the
    /// buffer with every whole event that fits, so a short read took them
    /// all, and no second `read(2)` is needed to see `EAGAIN`.
    pub fn read(&mut self, mut f: impl FnMut(Event<'_>)) -> io::Result<bool> {
        let n = loop {
            // SAFETY: the buffer is ours and `BUF` bytes long.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                )
            };
            if n >= 0 {
                break n as usize;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(false),
                _ => return Err(e),
            }
        };
        let mut off = 0;
        while off + HEADER <= n {
            // SAFETY: the kernel writes whole events; the byte buffer has
            // no alignment, hence the unaligned read.
            let ev: libc::inotify_event =
                unsafe { std::ptr::read_unaligned(self.buf.as_ptr().add(off).cast()) };
            let name_at = off + HEADER;
            let end = (name_at + ev.len as usize).min(n);
            let raw = &self.buf[name_at..end];
            // The name is NUL-padded to an alignment boundary.
            let name = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
            f(Event {
                wd: Wd(ev.wd),
                kind: kind(ev.mask),
                is_dir: ev.mask & libc::IN_ISDIR != 0,
                name: (!name.is_empty()).then(|| OsStr::from_bytes(name)),
            });
            off = end;
        }
        Ok(n + LARGEST_EVENT > self.buf.len())
    }
}

impl AsFd for Inotify {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(ino: &mut Inotify) -> Vec<(Kind, Option<String>, bool)> {
        let mut out = Vec::new();
        while ino
            .read(|e| {
                out.push((
                    e.kind,
                    e.name.map(|n| n.to_string_lossy().into_owned()),
                    e.is_dir,
                ))
            })
            .unwrap()
        {}
        out
    }

    /// Events are queued by the system call that causes them, so they can
    /// be read right after it: no waiting.
    #[test]
    fn a_rewrite_in_place_is_a_modify_and_a_close_and_nothing_of_its_open() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ino = Inotify::new().unwrap();
        ino.add(tmp.path(), Mask::FILES).unwrap();
        let f = tmp.path().join("a.md");
        std::fs::write(&f, "one").unwrap();
        std::fs::read(&f).unwrap();
        let seen = drain(&mut ino);
        let kinds: Vec<Kind> = seen.iter().map(|s| s.0).collect();
        assert_eq!(
            kinds,
            vec![Kind::Created, Kind::Modified, Kind::ClosedWrite],
            "{seen:?}"
        );
        assert!(seen.iter().all(|s| s.1.as_deref() == Some("a.md")));
        assert!(!ino.read(|_| {}).unwrap(), "drained");
    }

    #[test]
    fn session_directories_report_opens_and_the_directory_itself_going() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s1");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("fifo.in"), "").unwrap();
        let mut ino = Inotify::new().unwrap();
        ino.add(&dir, Mask::SESSION).unwrap();
        ino.add(tmp.path(), Mask::ANCESTOR).unwrap();
        std::fs::File::open(dir.join("fifo.in")).unwrap();
        std::fs::create_dir(tmp.path().join("s2")).unwrap();
        std::fs::remove_file(dir.join("fifo.in")).unwrap();
        std::fs::remove_dir(&dir).unwrap();
        let seen = drain(&mut ino);
        let expect = [
            (Kind::Opened, Some("fifo.in"), false),
            (Kind::Created, Some("s2"), true),
            (Kind::Deleted, Some("fifo.in"), false),
            (Kind::SelfGone, None, false),
            (Kind::Ignored, None, false),
            (Kind::Deleted, Some("s1"), true),
        ];
        let got: Vec<(Kind, Option<&str>, bool)> =
            seen.iter().map(|s| (s.0, s.1.as_deref(), s.2)).collect();
        assert_eq!(got, expect);
    }

    #[test]
    fn a_file_is_not_a_directory_to_watch() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("f");
        std::fs::write(&f, "").unwrap();
        let ino = Inotify::new().unwrap();
        let e = ino.add(&f, Mask::FILES).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR));
    }
}
