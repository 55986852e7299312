//! Reading the files the engine asks for: plans, ready lists,
//! `issues.jsonl`. Capped (an oversized file is recognised without reading
//! it all), non-blocking and regular files only (a FIFO named like a plan
//! cannot hang the loop), and whole in one `read(2)` where it can be.
//!
//! Plan files are read through [`PlanFiles`], which keeps the last few
//! open: `task_complete` rewrites a plan in place (same inode), so the next
//! read is a `stat` of the path and one `pread` on the fd already held — no
//! `open` and no `close`, and so no `IN_OPEN` echo waking the inotify
//! thread for the daemon's own read.

use std::fs::{File, Metadata};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::core::input::FileRead;

/// Read a plan file, at most `cap + 1` bytes (so an oversized file is
/// refused, with its size, without reading all of it). Opened non-blocking and checked to be
/// a regular file, so a FIFO named like a plan cannot hang the loop.
pub fn read_capped(path: &Path, cap: usize) -> FileRead {
    read_fresh(path, cap, Duration::ZERO).0
}

/// `read_capped`, and whether the file was modified less than `window` ago
/// (by the wall clock, against its mtime): a writer may be rewriting it
/// right now, so what was read may be the start of the next version.
pub fn read_fresh(path: &Path, cap: usize, window: Duration) -> (FileRead, bool) {
    match open(path) {
        Ok((file, meta)) => read_open(&file, &meta, cap, window, synthetic(&file)),
        Err(failed) => (failed, false),
    }
}

/// Plan files held open between reads: at most this many.
const KEEP_OPEN: usize = 32;

/// The plan files read last, kept open (least recently read first out).
///
/// A held fd is used only while the path still names the same file
/// (`dev`, `ino` of a `stat` of the path): a file renamed over it or
/// deleted and recreated is opened afresh. The inode of a held file cannot
/// be reused while it is held, so the identity check cannot be fooled. A
/// deleted plan's space is given back when its entry is evicted or its path
/// is read again.
///
/// Only files on local filesystems are held: on FUSE/9P the kernel may
/// serve a held fd from its page cache, which only a new `open` refreshes
/// (a test against a FUSE file with a fixed size and mtime read the old
/// content through a held fd), and such a server's sizes and mtimes need
/// not move with the content.
#[derive(Default)]
pub struct PlanFiles {
    /// Most recently read last.
    open: Vec<Held>,
    /// Per device seen, whether it is local (asked of `fstatfs` once).
    local: Vec<(u64, bool)>,
}

struct Held {
    path: PathBuf,
    dev: u64,
    ino: u64,
    file: File,
}

impl PlanFiles {
    /// `read_fresh` of a plan file, through a held fd when there is one.
    pub fn read(&mut self, path: &Path, cap: usize, window: Duration) -> (FileRead, bool) {
        // Byte equality, not `Path`'s component by component walk: the
        // daemon names a file the same way each time, and a miss only costs
        // an `open`.
        let same = |h: &Held| h.path.as_os_str() == path.as_os_str();
        if let Some(i) = self.open.iter().position(same) {
            let held = self.open.remove(i);
            match std::fs::metadata(path) {
                Ok(meta) if meta.dev() == held.dev && meta.ino() == held.ino && meta.is_file() => {
                    // Only local files are held.
                    let read = read_open(&held.file, &meta, cap, window, false);
                    self.open.push(held);
                    return read;
                }
                // Replaced, deleted or no longer a regular file: the held
                // fd is dropped, and the path opened (and judged) afresh.
                _ => drop(held),
            }
        }
        let (file, meta) = match open(path) {
            Ok(opened) => opened,
            Err(failed) => return (failed, false),
        };
        // Asked of the device once, not of the file at every read.
        let local = self.is_local(&file, meta.dev());
        let read = read_open(&file, &meta, cap, window, !local);
        if !local {
            return read;
        }
        if self.open.len() == KEEP_OPEN {
            self.open.remove(0);
        }
        self.open.push(Held {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
            file,
        });
        read
    }
}

impl PlanFiles {
    /// How many plan files are held open now.
    pub fn held(&self) -> usize {
        self.open.len()
    }

    fn is_local(&mut self, file: &File, dev: u64) -> bool {
        if let Some(&(_, local)) = self.local.iter().find(|(d, _)| *d == dev) {
            return local;
        }
        let local = nix::sys::statfs::fstatfs(file)
            .is_ok_and(|st| crate::shell::watch::remote_fs_kind(&st).is_none());
        self.local.push((dev, local));
        local
    }
}

/// Open non-blocking, and only a regular file.
fn open(path: &Path) -> Result<(File, Metadata), FileRead> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(FileRead::Missing),
        Err(e) => return Err(FileRead::Failed(e.to_string())),
    };
    match file.metadata() {
        Ok(m) if m.is_file() => Ok((file, m)),
        Ok(m) if m.file_type().is_fifo() => {
            Err(FileRead::Failed("is a named pipe, not a plan file".into()))
        }
        Ok(_) => Err(FileRead::Failed("is not a regular file".into())),
        Err(e) => Err(FileRead::Failed(e.to_string())),
    }
}

/// Read an open regular file whole from offset 0; `meta` is its state just
/// before, `remote` whether it is on a FUSE/9P mount (`synthetic`).
fn read_open(
    file: &File,
    meta: &Metadata,
    cap: usize,
    window: Duration,
    remote: bool,
) -> (FileRead, bool) {
    let fresh = !window.is_zero()
        && meta
            .modified()
            .ok()
            .and_then(|m| std::time::SystemTime::now().duration_since(m).ok())
            .is_none_or(|age| age < window);
    let mut size = meta.len();
    // A FUSE/9P file's reported size need not match its content (and the
    // kernel may cache it for a second): it is read to the end of file.
    // The whole file in one read(2), and its size checked afterwards: a
    // plan rewritten in place (truncate, write) between two reads of it is
    // seen cut short, and a prefix whose steps are all checked sent an
    // early all-done nudge (steps missing from it were forgotten and
    // announced again). `read_to_end` on a `Take` reads 32 bytes first and
    // then doubles: six read(2)s for a 400-byte plan (found by the soak test
    // in tests/reliability). A file that changed during the read is read
    // again. Once the bytes the metadata promised are in, no read(2) is
    // spent just to see the end of the file: the first read asks for one
    // byte more than promised, so a file that grew fills it and is read on.
    let mut attempt = 0;
    loop {
        let expect = usize::try_from(size).unwrap_or(cap).min(cap);
        let mut bytes = vec![0u8; expect + 1];
        let mut filled = 0;
        // A read(2) that returned less than it had room for: the end of
        // file was where it stopped, when it ran.
        let mut short = false;
        loop {
            if !remote && filled == expect && filled as u64 == size {
                break;
            }
            if filled == bytes.len() {
                if filled > cap {
                    break;
                }
                bytes.resize((filled * 2).min(cap + 1), 0);
            }
            let room = bytes.len() - filled;
            match file.read_at(&mut bytes[filled..], filled as u64) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    short = n < room;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return (FileRead::Failed(e.to_string()), false),
            }
        }
        bytes.truncate(filled);
        // The size the stat promised, and the read itself stopped short
        // there (it had room for one byte more): the file ended there while
        // it was read, so no `fstat` is spent to see that again. A file
        // that grows after this read is a later change, with its own
        // event; one cut short or grown during it is stat'ed and read
        // again.
        let ended_as_promised = short && filled as u64 == size;
        if filled > cap {
            // Its size as the file says it now, so the error gives it
            // (the read stopped one byte past the cap).
            let size = file.metadata().map_or(size, |m| m.len()).max(filled as u64);
            return (FileRead::Oversized { size, cap }, fresh);
        }
        if ended_as_promised || remote {
            return (FileRead::Bytes(bytes), fresh);
        }
        let now = file.metadata().map_or(size, |m| m.len());
        attempt += 1;
        if now == filled as u64 || attempt == 4 {
            return (FileRead::Bytes(bytes), fresh);
        }
        size = now;
    }
}

/// A file on a FUSE/9P mount: its reported size need not match its
/// content (a synthetic file of a 9P server), so a size that differs from
/// what was read to the end proves no concurrent rewrite.
fn synthetic(file: &std::fs::File) -> bool {
    nix::sys::statfs::fstatfs(file)
        .ok()
        .and_then(|st| crate::shell::watch::remote_fs_kind(&st))
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_capped_reads_whole_files_and_says_the_size_of_one_over_the_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("p.md");
        for len in [0usize, 1, 31, 32, 33, 400, 4096, 4097, 5000] {
            let text = "x".repeat(len);
            std::fs::write(&path, &text).unwrap();
            match read_capped(&path, 4096) {
                FileRead::Bytes(b) if len <= 4096 => assert_eq!(b.len(), len, "len {len}"),
                FileRead::Oversized { size, cap } if len > 4096 => {
                    assert_eq!((size, cap), (len as u64, 4096), "len {len}")
                }
                other => panic!("len {len}: {other:?}"),
            }
        }
        assert!(matches!(
            read_capped(&tmp.path().join("missing"), 10),
            FileRead::Missing
        ));
    }

    fn bytes(r: (FileRead, bool)) -> Vec<u8> {
        match r.0 {
            FileRead::Bytes(b) => b,
            other => panic!("{other:?}"),
        }
    }

    /// The stat taken before a read can be stale by the time it runs: a
    /// file that grew since is read whole (the read's spare byte fills),
    /// one rewritten shorter is stat'ed again and read as it is now.
    #[test]
    fn a_file_changed_between_its_stat_and_its_read_is_read_as_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("p.md");
        std::fs::write(&path, "# G\n- [ ] a\n").unwrap();
        let (file, stale) = open(&path).unwrap();
        std::fs::write(&path, "# G\n- [ ] a\n- [ ] b\n").unwrap();
        let read = read_open(&file, &stale, 4096, Duration::ZERO, false);
        assert_eq!(bytes(read), b"# G\n- [ ] a\n- [ ] b\n");
        let (file, stale) = open(&path).unwrap();
        std::fs::write(&path, "# G\n").unwrap();
        let read = read_open(&file, &stale, 4096, Duration::ZERO, false);
        assert_eq!(bytes(read), b"# G\n");
        let read = read_open(
            &file,
            &file.metadata().unwrap(),
            4096,
            Duration::ZERO,
            false,
        );
        assert_eq!(bytes(read), b"# G\n", "and as promised");
    }

    /// A held fd serves in-place rewrites (what `task_complete` does), and
    /// is never used for a different file at the same path.
    #[test]
    fn held_plan_files_follow_rewrites_renames_and_deletions() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("p.md");
        let mut files = PlanFiles::default();
        let read = |files: &mut PlanFiles| files.read(&path, 4096, Duration::ZERO);
        std::fs::write(&path, "one\n").unwrap();
        assert_eq!(bytes(read(&mut files)), b"one\n");
        // In place: truncate and write, same inode.
        std::fs::write(&path, "two, longer\n").unwrap();
        assert_eq!(bytes(read(&mut files)), b"two, longer\n");
        std::fs::write(&path, "").unwrap();
        assert_eq!(bytes(read(&mut files)), b"");
        // Replaced by a rename: the new file, not the held one.
        let other = tmp.path().join("p.md.tmp");
        std::fs::write(&other, "three\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(bytes(read(&mut files)), b"three\n");
        // Deleted: missing, though an fd on the old file was held.
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(read(&mut files).0, FileRead::Missing));
        // Replaced by a FIFO: refused, not opened.
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read(&mut files).0, FileRead::Failed(_)));
    }

    #[test]
    fn at_most_keep_open_files_are_held() {
        let tmp = tempfile::tempdir().unwrap();
        let mut files = PlanFiles::default();
        for i in 0..KEEP_OPEN + 5 {
            let path = tmp.path().join(format!("{i}.md"));
            std::fs::write(&path, format!("{i}\n")).unwrap();
            assert_eq!(
                bytes(files.read(&path, 4096, Duration::ZERO)),
                format!("{i}\n").as_bytes()
            );
        }
        assert_eq!(files.open.len(), KEEP_OPEN);
        assert!(files.open[0].path.ends_with("5.md"));
    }
}
