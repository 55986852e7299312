//! The durable store in the state directory: a snapshot (`state.json`), an
//! append-only journal of `Record`s since it (`journal.jsonl`), and the
//! one-instance lock (`lock`).
//!
//! Cost model, which is the point of the design: appending a record is one
//! `write(2)` — after it returns, the record survives `kill -9` because it is
//! in the kernel. Surviving a power cut needs `fdatasync`, which costs
//! milliseconds, so it is batched off the wake path (group commit, every
//! `sync_interval`). A power cut can therefore lose the records of the last
//! `sync_interval` at most: announcements made in that window may be
//! announced again after reboot (never lost, since the restart rescan
//! re-derives what is ready), and deliveries in it may be repeated.
//! Compaction rewrites the snapshot atomically (temp file, fsync, rename,
//! fsync of the directory) and then empties the journal; replaying a record
//! twice is harmless because every record is idempotent.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::core::memory::Memory;
use crate::core::record::Record;

/// What can go wrong with the state directory.
#[derive(Debug)]
pub enum StoreError {
    /// Another instance holds the lock.
    Locked { dir: PathBuf, pid: Option<u32> },
    /// An I/O error, with the file it concerns.
    Io { path: PathBuf, err: io::Error },
    /// The snapshot exists but cannot be understood.
    Corrupt { path: PathBuf, why: String },
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Locked {
                dir,
                pid: Some(pid),
            } => write!(
                f,
                "another reveille (pid {pid}) is already running for this project (lock in {})",
                dir.display()
            ),
            StoreError::Locked { dir, pid: None } => write!(
                f,
                "another reveille is already running for this project (lock in {})",
                dir.display()
            ),
            StoreError::Io { path, err } => write!(f, "{}: {err}", path.display()),
            StoreError::Corrupt { path, why } => write!(f, "{}: {why}", path.display()),
        }
    }
}

impl std::error::Error for StoreError {}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |err| StoreError::Io {
        path: path.to_path_buf(),
        err,
    }
}

/// What loading found, beside the memory itself.
#[derive(Debug, Default, Clone)]
pub struct LoadReport {
    /// Journal records replayed over the snapshot.
    pub replayed: usize,
    /// A torn last journal line (a crash mid-append), skipped.
    pub torn_tail: bool,
    /// Journal lines that could not be parsed (not the last), skipped.
    pub bad_lines: Vec<usize>,
}

/// Read the memory without taking the lock (for `reveille status`).
///
/// A running daemon may compact meanwhile: a new snapshot renamed into
/// place, then the journal emptied. Read between the two files, that would
/// pair the old snapshot with the emptied journal and lose every record in
/// between (status showed 879 of 1000 pending prompts). The snapshot's
/// inode changes with each compaction, so a read that straddled one is
/// done again. (A new snapshot with the journal not yet emptied is fine:
/// replaying records over a snapshot that already holds them changes
/// nothing.)
pub fn read_memory(dir: &Path) -> Result<(Option<Memory>, LoadReport), StoreError> {
    use std::os::unix::fs::MetadataExt;
    let snapshot_id = || {
        fs::metadata(dir.join("state.json"))
            .ok()
            .map(|m| (m.dev(), m.ino()))
    };
    let mut tries = 0;
    loop {
        let before = snapshot_id();
        let read = read_memory_once(dir)?;
        tries += 1;
        if snapshot_id() == before || tries == 10 {
            return Ok(read);
        }
    }
}

fn read_memory_once(dir: &Path) -> Result<(Option<Memory>, LoadReport), StoreError> {
    let snapshot = dir.join("state.json");
    let journal = dir.join("journal.jsonl");
    let mut memory = match fs::read(&snapshot) {
        Ok(bytes) => {
            Some(
                serde_json::from_slice::<Memory>(&bytes).map_err(|e| StoreError::Corrupt {
                    path: snapshot.clone(),
                    why: e.to_string(),
                })?,
            )
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_at(&snapshot)(e)),
    };
    let mut report = LoadReport::default();
    match File::open(&journal) {
        Ok(file) => {
            let mut lines = BufReader::new(file).split(b'\n').peekable();
            let mut n = 0;
            while let Some(line) = lines.next() {
                n += 1;
                let line = line.map_err(io_at(&journal))?;
                if line.is_empty() {
                    continue;
                }
                match serde_json::from_slice::<Record>(&line) {
                    Ok(record) => {
                        memory.get_or_insert_with(Memory::default).apply(&record);
                        report.replayed += 1;
                    }
                    Err(_) if lines.peek().is_none() => report.torn_tail = true,
                    Err(_) => report.bad_lines.push(n),
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_at(&journal)(e)),
    }
    Ok((memory, report))
}

/// Staged bytes beyond which the daemon writes them at once.
const STAGED_MAX: usize = 64 << 10;

/// The open store of a running daemon.
pub struct Store {
    dir: PathBuf,
    /// Held for the daemon's lifetime: one instance per project.
    _lock: Flock<File>,
    journal: File,
    /// Bytes appended since the last compaction.
    journal_bytes: u64,
    /// Records appended since the last fdatasync.
    unsynced: bool,
    /// Encoded records not yet written (`stage`, then `flush`).
    staged: Vec<u8>,
}

impl Store {
    /// Create the state directory (0700) if needed, take the lock, and load
    /// the memory: `None` on the very first start.
    pub fn open(dir: &Path) -> Result<(Store, Option<Memory>, LoadReport), StoreError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_at(dir))?;
        let lock_path = dir.join("lock");
        let lock_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .map_err(io_at(&lock_path))?;
        let mut lock = match Flock::lock(lock_file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((mut file, _)) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(StoreError::Locked {
                    dir: dir.to_path_buf(),
                    pid: text.trim().parse().ok(),
                });
            }
        };
        lock.set_len(0).map_err(io_at(&lock_path))?;
        writeln!(*lock, "{}", std::process::id()).map_err(io_at(&lock_path))?;

        let (memory, report) = read_memory(dir)?;
        let journal_path = dir.join("journal.jsonl");
        let journal = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&journal_path)
            .map_err(io_at(&journal_path))?;
        let journal_bytes = journal.metadata().map_err(io_at(&journal_path))?.len();
        let mut store = Store {
            dir: dir.to_path_buf(),
            _lock: lock,
            journal,
            journal_bytes,
            unsynced: false,
            staged: Vec::with_capacity(4096),
        };
        // Fold a replayed journal into a fresh snapshot right away, so a torn
        // tail never sits in front of new appends.
        if journal_bytes > 0 {
            if let Some(m) = &memory {
                store.compact(m)?;
            } else {
                store.truncate_journal()?;
            }
        }
        Ok((store, memory, report))
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Append one record now: `stage` and `flush`.
    pub fn append(&mut self, record: &Record) -> Result<(), StoreError> {
        self.stage(record)?;
        self.flush()
    }

    /// Encode one record as a journal line, to be written by the next
    /// `flush`. The records staged before a prompt is written go out in one
    /// `write(2)` (the daemon flushes before every delivery and at the end
    /// of every input), so a wake-up's `Forget` and `Announce` cost one
    /// system call, not two. Encoded straight into a buffer that is kept
    /// between records: no intermediate `String` or `Vec` per record.
    pub fn stage(&mut self, record: &Record) -> Result<(), StoreError> {
        let start = self.staged.len();
        if let Err(e) = serde_json::to_writer(&mut self.staged, record) {
            self.staged.truncate(start);
            return Err(StoreError::Corrupt {
                path: self.journal_path(),
                why: e.to_string(),
            });
        }
        self.staged.push(b'\n');
        Ok(())
    }

    /// Whether records are staged and not yet written.
    pub fn has_staged(&self) -> bool {
        !self.staged.is_empty()
    }

    /// Whether so much is staged (a start-up scan of thousands of plans)
    /// that it should be written now rather than held to the end of the
    /// input: the buffer stays small.
    pub fn staged_full(&self) -> bool {
        self.staged.len() >= STAGED_MAX
    }

    /// Write every staged record, in one `write(2)` where the kernel takes
    /// it whole: once this returns they survive `kill -9`. On failure the
    /// staged records are dropped (the caller reports it; the engine's
    /// memory still has them).
    pub fn flush(&mut self) -> Result<(), StoreError> {
        if self.staged.is_empty() {
            return Ok(());
        }
        let written = self.journal.write_all(&self.staged);
        let len = self.staged.len() as u64;
        self.staged.clear();
        written.map_err(io_at(&self.dir.join("journal.jsonl")))?;
        self.journal_bytes += len;
        self.unsynced = true;
        Ok(())
    }

    /// Whether records were appended since the last sync.
    pub fn needs_sync(&self) -> bool {
        self.unsynced
    }

    /// A handle on the journal for an off-thread `fdatasync` (group commit).
    pub fn sync_handle(&mut self) -> Result<File, StoreError> {
        self.flush()?;
        self.unsynced = false;
        self.journal
            .try_clone()
            .map_err(io_at(&self.dir.join("journal.jsonl")))
    }

    /// Bytes in the journal since the last compaction.
    pub fn journal_bytes(&self) -> u64 {
        self.journal_bytes
    }

    fn journal_path(&self) -> PathBuf {
        self.dir.join("journal.jsonl")
    }

    /// Write `memory` as the new snapshot, atomically, then empty the journal.
    pub fn compact(&mut self, memory: &Memory) -> Result<(), StoreError> {
        // Staged records are in `memory` already; the snapshot replaces them.
        self.staged.clear();
        let path = self.dir.join("state.json");
        let tmp = self.dir.join("state.json.tmp");
        let bytes = serde_json::to_vec(memory).map_err(|e| StoreError::Corrupt {
            path: path.clone(),
            why: e.to_string(),
        })?;
        {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)
                .map_err(io_at(&tmp))?;
            if let Err(err) = f.write_all(&bytes).and_then(|()| f.sync_all()) {
                // A full disk must not leave a half-written temp file behind.
                let _ = fs::remove_file(&tmp);
                return Err(io_at(&tmp)(err));
            }
        }
        fs::rename(&tmp, &path).map_err(io_at(&path))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io_at(&self.dir))?;
        self.truncate_journal()
    }

    fn truncate_journal(&mut self) -> Result<(), StoreError> {
        let path = self.journal_path();
        self.journal.set_len(0).map_err(io_at(&path))?;
        self.journal.sync_all().map_err(io_at(&path))?;
        self.journal_bytes = 0;
        self.unsynced = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::Item;
    use std::os::unix::fs::PermissionsExt;

    fn forget(n: usize) -> Record {
        Record::Forget {
            source: "plan:x".parse().unwrap(),
            item: Item::step(format!("{n}")),
        }
    }

    #[test]
    fn first_open_has_no_memory_and_creates_private_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let (mut store, memory, _) = Store::open(&dir).unwrap();
        assert!(memory.is_none());
        store.append(&Record::Baselined).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("journal.jsonl")), 0o600);
        assert_eq!(mode(&dir.join("lock")), 0o600);
    }

    #[test]
    fn a_second_instance_is_refused_with_the_first_ones_pid() {
        let tmp = tempfile::tempdir().unwrap();
        let (_store, _, _) = Store::open(tmp.path()).unwrap();
        match Store::open(tmp.path()) {
            Err(StoreError::Locked { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            Err(other) => panic!("unexpected {other}"),
            Ok(_) => panic!("second open succeeded"),
        }
    }

    #[test]
    fn appended_records_survive_without_compaction_and_a_torn_tail_is_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let (mut store, _, _) = Store::open(tmp.path()).unwrap();
            store.append(&Record::Baselined).unwrap();
            store.append(&forget(1)).unwrap();
        }
        // A crash mid-append leaves half a line.
        let mut j = OpenOptions::new()
            .append(true)
            .open(tmp.path().join("journal.jsonl"))
            .unwrap();
        j.write_all(b"{\"r\":\"forg").unwrap();
        let (store, memory, report) = Store::open(tmp.path()).unwrap();
        assert!(memory.unwrap().baselined());
        assert_eq!(report.replayed, 2);
        assert!(report.torn_tail);
        // Loading compacted the journal into the snapshot.
        assert_eq!(store.journal_bytes(), 0);
        assert!(tmp.path().join("state.json").exists());
    }

    #[test]
    fn staged_records_are_written_together_by_flush_and_only_then() {
        let tmp = tempfile::tempdir().unwrap();
        let journal = tmp.path().join("journal.jsonl");
        let (mut store, _, _) = Store::open(tmp.path()).unwrap();
        store.stage(&forget(1)).unwrap();
        store.stage(&forget(2)).unwrap();
        assert_eq!(fs::read(&journal).unwrap(), b"");
        assert!(!store.needs_sync());
        store.flush().unwrap();
        let text = fs::read_to_string(&journal).unwrap();
        let lines: Vec<Record> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines, [forget(1), forget(2)]);
        assert_eq!(store.journal_bytes(), text.len() as u64);
        assert!(store.needs_sync());
        store.flush().unwrap();
        assert_eq!(fs::read_to_string(&journal).unwrap(), text);
    }
}
