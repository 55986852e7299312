//! What a Submit keeps open between wake-ups: the tree's `idx` and each
//! ollie-9p session directory already recognised.
//!
//! Every open through 9pfuse is round trips to the 9P server — a walk per
//! path component and an open — and the first Submit of a session spent
//! most of its time there (opening the directory, two `stat`s to recognise
//! it, opening `idx` and reading it to its end) before the one write that
//! wakes the agent. A held descriptor costs none of that again: `idx` is
//! read with one `pread` at offset 0, which ollie-9p renders afresh on
//! every read (its synthetic files are read with direct I/O, no page
//! cache: measured on the real server, a held `pread` 0.9 ms against 9.8
//! ms to open and read it by path on a loaded machine), and `prompt` is
//! opened below the held directory.
//!
//! What stays true: `idx` is still read before every Submit, so a session
//! killed or renamed a moment ago is never written to (ollie-9p's fids
//! follow a rename, so a held directory of a renamed session is the
//! renamed one: `idx` not listing the old name is what stops the write). A
//! directory whose session `idx` no longer lists, or whose `prompt` cannot
//! be opened, is let go, and the next delivery opens it afresh.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::tree::{find_listing, open_synthetic, Listing, IDX_CAP, READ_CHUNK};
use super::Flavour;

/// The descriptors kept for one ollie-9p session tree.
#[derive(Default)]
pub struct Held {
    /// The identity (device, inode) of the sessions root they were opened
    /// below.
    root: Mutex<Option<(u64, u64)>>,
    idx: Mutex<Option<Arc<File>>>,
    dirs: Mutex<HashMap<String, (Arc<OwnedFd>, Flavour)>>,
}

impl Held {
    /// The sessions root is now `root` (its device and inode; `None`: not
    /// there). Another than the one everything held was opened below — a
    /// tree mounted again after its connection was lost — and all of it
    /// is let go: a descriptor of a mount whose server is gone can block
    /// for ever, where the path reaches the new mount.
    pub fn below(&self, root: Option<(u64, u64)>) {
        let mut held = lock(&self.root);
        if *held != root {
            *lock(&self.idx) = None;
            lock(&self.dirs).clear();
            *held = root;
        }
    }

    /// The held directory of `session` and its flavour, if it was
    /// recognised before and not let go since.
    pub fn dir(&self, session: &str) -> Option<(Arc<OwnedFd>, Flavour)> {
        lock(&self.dirs).get(session).cloned()
    }

    /// Keep `session`'s directory, recognised as `flavour`.
    pub fn keep(&self, session: &str, dir: Arc<OwnedFd>, flavour: Flavour) {
        lock(&self.dirs).insert(session.to_string(), (dir, flavour));
    }

    /// Let go of `session`'s directory: it is no longer listed, or a
    /// Submit could not open its `prompt`.
    pub fn forget(&self, session: &str) {
        lock(&self.dirs).remove(session);
    }

    /// What `idx` says of `session` now, read through the held descriptor
    /// (opened on first use). A read that fails drops it and is made once
    /// more through a fresh one: the mount may have been replaced.
    pub fn listing(&self, sessions_dir: &Path, session: &str) -> io::Result<Listing> {
        if let Some(idx) = lock(&self.idx).clone() {
            match read_listing(&idx, session) {
                Ok(listing) => return Ok(listing),
                Err(_) => *lock(&self.idx) = None,
            }
        }
        let idx = Arc::new(open_synthetic(&sessions_dir.join("idx"))?);
        let listing = read_listing(&idx, session)?;
        *lock(&self.idx) = Some(idx);
        Ok(listing)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `session`'s line in `idx`, read from offset 0 of a held descriptor:
/// one `pread` when the line is in the first chunk (the usual case: the
/// whole `idx` of a few hundred sessions fits); otherwise on to the end.
fn read_listing(idx: &File, session: &str) -> io::Result<Listing> {
    let mut text = Vec::with_capacity(READ_CHUNK);
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        let n = match idx.read_at(&mut chunk, text.len() as u64) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        text.extend_from_slice(&chunk[..n]);
        // Only whole lines count: the last may be cut by the chunk.
        let whole = match text.iter().rposition(|b| *b == b'\n') {
            Some(end) => &text[..=end],
            None => &text[..0],
        };
        if let found @ Listing::Listed(_) = find_listing(&String::from_utf8_lossy(whole), session) {
            return Ok(found);
        }
        if n == 0 || text.len() as u64 >= IDX_CAP {
            return Ok(find_listing(&String::from_utf8_lossy(&text), session));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::session::AgentState;

    #[test]
    fn idx_is_read_afresh_through_the_held_descriptor_and_reopened_when_replaced() {
        let t = tempfile::tempdir().unwrap();
        let idx = t.path().join("idx");
        std::fs::write(&idx, "a\tidle\t/w\tb\tm\n").unwrap();
        let held = Held::default();
        assert_eq!(
            held.listing(t.path(), "a").unwrap(),
            Listing::Listed(Some(AgentState::Idle))
        );
        std::fs::write(&idx, "a\tthinking\t/w\tb\tm\nb\tidle\t/w\tb\tm\n").unwrap();
        assert_eq!(
            held.listing(t.path(), "a").unwrap(),
            Listing::Listed(Some(AgentState::Busy("thinking".into())))
        );
        assert_eq!(held.listing(t.path(), "c").unwrap(), Listing::Absent);
        // A line cut by the chunk is not taken for the whole line.
        let long = format!("{}\tidle\n", "x".repeat(READ_CHUNK + 10));
        std::fs::write(&idx, format!("{long}a\tidle\n")).unwrap();
        assert_eq!(
            held.listing(t.path(), "a").unwrap(),
            Listing::Listed(Some(AgentState::Idle))
        );
    }

    #[test]
    fn an_idx_that_cannot_be_opened_is_an_error_and_opened_once_it_can() {
        let t = tempfile::tempdir().unwrap();
        let held = Held::default();
        assert!(held.listing(t.path(), "a").is_err());
        std::fs::write(t.path().join("idx"), "a\tidle\n").unwrap();
        assert_eq!(
            held.listing(t.path(), "a").unwrap(),
            Listing::Listed(Some(AgentState::Idle))
        );
    }

    #[test]
    fn everything_held_is_let_go_when_the_root_is_another() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("idx"), "a\tidle\n").unwrap();
        let held = Held::default();
        held.below(Some((1, 2)));
        let fd: OwnedFd = File::open(t.path()).unwrap().into();
        held.keep("a", Arc::new(fd), Flavour::Current);
        held.listing(t.path(), "a").unwrap();
        held.below(Some((1, 2)));
        assert!(held.dir("a").is_some(), "the same root keeps them");
        assert!(lock(&held.idx).is_some());
        held.below(Some((3, 2)));
        assert!(held.dir("a").is_none());
        assert!(lock(&held.idx).is_none());
    }

    #[test]
    fn directories_are_kept_until_let_go() {
        let t = tempfile::tempdir().unwrap();
        let held = Held::default();
        assert!(held.dir("a").is_none());
        let fd: OwnedFd = File::open(t.path()).unwrap().into();
        held.keep("a", Arc::new(fd), Flavour::Current);
        assert_eq!(held.dir("a").map(|(_, f)| f), Some(Flavour::Current));
        held.forget("a");
        assert!(held.dir("a").is_none());
    }
}
