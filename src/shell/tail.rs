//! Tailing the tracker's event log by byte offset.
//!
//! The log only grows, except when the tracker restarts: then it starts
//! empty again (size below our offset), or is a new file (new inode), or —
//! on a synthetic FUSE file whose inode never changes — has different first
//! bytes. Each of those restarts the read from byte 0; what the new log
//! repeats is de-duplicated by the engine (announced sets, claim notes). A
//! partial last line waits for its newline: the cursor handed to the engine
//! always points at the start of the first incomplete line, so a restart of
//! the daemon re-reads it whole.

use crate::core::fnv::fnv1a;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::core::record::Cursor;
use crate::core::tracker::MAX_EVENT_LINE;

/// At most this much is read per call, so one huge backlog cannot stall the
/// loop; the caller reads again while `more` is set.
const CHUNK: usize = 8 << 20;

/// How many leading bytes identify a log (a replaced FUSE file keeps its
/// inode but not its first event).
const HEAD: usize = 64;

/// What one read found.
#[derive(Debug, Default)]
pub struct TailRead {
    /// Complete lines with the byte offset each starts at.
    pub lines: Vec<(u64, Vec<u8>)>,
    /// The position the engine should persist.
    pub cursor: Cursor,
    /// Why the log is being read from the start again, if it is.
    pub restarted: Option<String>,
    /// More is waiting: read again.
    pub more: bool,
}

/// A tail on one log file.
pub struct Tail {
    path: PathBuf,
    cursor: Cursor,
    /// The file position read up to (the cursor plus the carried bytes).
    pos: u64,
    /// Cuts what is read into lines, carrying an incomplete last one.
    lines: LineSplitter,
    /// Whether "missing" was already reported.
    missing: bool,
    /// The log as `read` last opened it, for `peek`.
    held: Option<File>,
}

/// The most one `peek` reads: a poll's worth of events.
const PEEK: usize = 256 << 10;

/// A hash of the first `HEAD` bytes, or 0 (unknown) while the log is
/// shorter than that — a growing prefix would change the hash.
fn head_hash(file: &mut File, size: u64) -> io::Result<u64> {
    if size < HEAD as u64 {
        return Ok(0);
    }
    let mut buf = [0u8; HEAD];
    file.seek(SeekFrom::Start(0))?;
    file.read_exact(&mut buf)?;
    Ok(fnv1a(&buf))
}

/// A hash of the (up to `HEAD`) bytes that end at `offset`; 0 at offset 0.
fn last_hash(file: &File, offset: u64) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    if offset == 0 {
        return Ok(0);
    }
    let from = offset.saturating_sub(HEAD as u64);
    let mut buf = vec![0u8; (offset - from) as usize];
    file.read_exact_at(&mut buf, from)?;
    Ok(fnv1a(&buf).max(1))
}

impl Tail {
    /// Resume from `cursor` (the persisted position), or start at the end
    /// of the log when there is none (first start: history is not news).
    pub fn new(path: &Path, cursor: Option<Cursor>) -> Tail {
        let cursor = match cursor {
            Some(c) => c,
            None => Self::end_of(path).unwrap_or_default(),
        };
        Tail {
            path: path.to_path_buf(),
            pos: cursor.offset,
            cursor,
            lines: LineSplitter::default(),
            missing: false,
            held: None,
        }
    }

    fn end_of(path: &Path) -> Option<Cursor> {
        // Never open a named pipe here: it would block until a writer came,
        // and closing it again would discard what that writer sent.
        if !std::fs::metadata(path).ok()?.is_file() {
            return None;
        }
        let mut f = File::open(path).ok()?;
        let m = f.metadata().ok()?;
        let head = head_hash(&mut f, m.size()).ok()?;
        // Only whole lines count as read: a first start mid-line would
        // otherwise hash half a line.
        let last = last_hash(&f, m.size()).ok()?;
        Some(Cursor {
            dev: m.dev(),
            ino: m.ino(),
            offset: m.size(),
            head,
            last,
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Read what was appended since the last call. `Ok(None)` when the file
    /// does not exist (reported once by the caller via `first_missing`).
    pub fn read(&mut self) -> io::Result<Option<TailRead>> {
        // Look before opening: opening a named pipe for reading would block.
        match std::fs::metadata(&self.path) {
            Ok(m) if m.is_file() => {}
            Ok(_) => {
                return Err(io::Error::other(
                    "not a regular file (a named pipe is read as a stream instead)",
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        }
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        self.missing = false;
        let m = file.metadata()?;
        let size = m.size();
        let mut out = TailRead::default();
        let mut restart = None;
        {
            if self.cursor.ino != 0 && (m.dev(), m.ino()) != (self.cursor.dev, self.cursor.ino) {
                restart = Some("was replaced (new inode)");
            } else if size < self.pos {
                restart = Some("was truncated (size below the offset)");
            } else if self.cursor.head != 0 && head_hash(&mut file, size)? != self.cursor.head {
                restart = Some("was rewritten (its first bytes changed)");
            } else if self.cursor.last != 0
                && last_hash(&file, self.cursor.offset)? != self.cursor.last
            {
                restart = Some("was rewritten (the bytes before the read offset changed)");
            }
        }
        if let Some(why) = restart {
            out.restarted = Some(why.to_string());
            self.cursor = Cursor::default();
            self.pos = 0;
            self.lines.clear();
        }
        self.cursor.dev = m.dev();
        self.cursor.ino = m.ino();
        if self.cursor.head == 0 {
            self.cursor.head = head_hash(&mut file, size)?;
        }
        let start = self.pos;
        if size <= start {
            out.cursor = self.cursor;
            self.held = Some(file);
            return Ok(Some(out));
        }
        // Up to the length stat reported (a synthetic file serves whatever
        // it holds at open; reading to EOF instead could split a line the
        // server is appending).
        let want = ((size - start) as usize).min(CHUNK);
        out.more = (size - start) as usize > CHUNK;
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity(want);
        (&mut file).take(want as u64).read_to_end(&mut buf)?;
        let before = self.cursor.offset;
        self.split(start, &buf, &mut out.lines);
        if self.cursor.offset != before || (self.cursor.last == 0 && before > 0) {
            self.cursor.last = last_hash(&file, self.cursor.offset)?;
        }
        out.cursor = self.cursor;
        self.held = Some(file);
        Ok(Some(out))
    }

    /// What the log gained since the last read, read from the file `read`
    /// left open, at the read offset, with no `stat` first: on a FUSE mount
    /// the kernel keeps a file's size for a second (9pfuse's attribute
    /// timeout), so a synthetic log's growth is seen at once only by
    /// reading it (its reads are never cached). A restart (the log
    /// truncated, replaced, rewritten) is `read`'s business: the poller
    /// calls it when the file's fingerprint changes. `None`: nothing is
    /// held yet — call `read`.
    pub fn peek(&mut self) -> io::Result<Option<TailRead>> {
        use std::os::unix::fs::FileExt;
        let Some(file) = self.held.take() else {
            return Ok(None);
        };
        let mut buf = vec![0u8; PEEK];
        // On an error the file is not held again: the next full read opens
        // it afresh.
        let n = file.read_at(&mut buf, self.pos)?;
        let mut out = TailRead {
            more: n == PEEK,
            ..TailRead::default()
        };
        if n > 0 {
            buf.truncate(n);
            let (start, before) = (self.pos, self.cursor.offset);
            self.split(start, &buf, &mut out.lines);
            if self.cursor.offset != before {
                self.cursor.last = last_hash(&file, self.cursor.offset)?;
            }
        }
        out.cursor = self.cursor;
        self.held = Some(file);
        Ok(Some(out))
    }

    /// Whether a missing log should be reported now (once per absence).
    pub fn first_missing(&mut self) -> bool {
        !std::mem::replace(&mut self.missing, true)
    }

    fn split(&mut self, start: u64, buf: &[u8], lines: &mut Vec<(u64, Vec<u8>)>) {
        self.pos = start + buf.len() as u64;
        self.cursor.offset = self.lines.push(start, buf, lines);
    }
}

/// Cuts a byte stream into lines: an incomplete last line is carried until
/// its newline arrives; a line longer than `MAX_EVENT_LINE` is handed out
/// once (so it is reported with its offset) and the rest of it dropped.
#[derive(Debug, Default)]
struct LineSplitter {
    /// Bytes of an incomplete last line.
    carry: Vec<u8>,
    /// Inside an over-long line: discard up to the next newline.
    skipping: bool,
}

impl LineSplitter {
    /// Add `buf`, which starts at stream offset `start`; complete lines go to
    /// `lines` with their offsets. Returns the offset from which a reader
    /// that lost everything carried would have to start again.
    fn push(&mut self, start: u64, buf: &[u8], lines: &mut Vec<(u64, Vec<u8>)>) -> u64 {
        let end_of_buf = start + buf.len() as u64;
        let mut pos = 0;
        let mut line_start = start - self.carry.len() as u64;
        while pos < buf.len() {
            match buf[pos..].iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let end = pos + i;
                    if self.skipping {
                        self.skipping = false;
                    } else {
                        let mut line = std::mem::take(&mut self.carry);
                        line.extend_from_slice(&buf[pos..end]);
                        lines.push((line_start, line));
                    }
                    pos = end + 1;
                    line_start = start + pos as u64;
                }
                None => {
                    if !self.skipping {
                        self.carry.extend_from_slice(&buf[pos..]);
                        if self.carry.len() > MAX_EVENT_LINE {
                            lines.push((line_start, std::mem::take(&mut self.carry)));
                            self.skipping = true;
                        }
                    }
                    break;
                }
            }
        }
        if self.skipping {
            end_of_buf
        } else {
            end_of_buf - self.carry.len() as u64
        }
    }

    fn clear(&mut self) {
        self.carry.clear();
        self.skipping = false;
    }
}

/// A tracker stream that is a named pipe: no history, no offsets to
/// persist (offsets count bytes since the daemon opened it). It is opened
/// read-write, so the daemon is also a writer and never sees end-of-file
/// when the tracker closes its end — an idle pipe costs nothing.
pub struct PipeTail {
    path: PathBuf,
    fd: tokio::io::unix::AsyncFd<File>,
    lines: LineSplitter,
    bytes: u64,
}

impl PipeTail {
    /// Open `path` if it is a named pipe (needs the tokio runtime).
    pub fn open(path: &Path) -> io::Result<Option<PipeTail>> {
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        match std::fs::metadata(path) {
            Ok(m) if m.file_type().is_fifo() => {}
            _ => return Ok(None),
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        // SAFETY: `File` owns its fd, which nothing else closes or replaces.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(file, tokio::io::Interest::READABLE)
        }?;
        Ok(Some(PipeTail {
            path: path.to_path_buf(),
            fd,
            lines: LineSplitter::default(),
            bytes: 0,
        }))
    }

    /// The pipe's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Wait until the pipe has data (its readiness is cleared here; `read`
    /// then drains it to EAGAIN, so nothing that arrives later is missed).
    pub async fn readable(&self) -> io::Result<()> {
        let mut guard = self.fd.readable().await?;
        guard.clear_ready();
        Ok(())
    }

    /// Drain what is in the pipe now.
    pub fn read(&mut self) -> io::Result<Vec<(u64, Vec<u8>)>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match self.fd.get_ref().read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.lines.push(self.bytes, &buf[..n], &mut out);
                    self.bytes += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    fn texts(r: &TailRead) -> Vec<String> {
        r.lines
            .iter()
            .map(|(_, l)| String::from_utf8_lossy(l).into_owned())
            .collect()
    }

    /// `peek` reads what the log gained from the file `read` left open,
    /// partial lines carried as by `read`, and keeps the cursor where a
    /// restart must resume.
    #[test]
    fn peek_reads_what_the_log_gained_without_a_stat() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events");
        append(&log, "{\"a\":1}\n");
        let mut tail = Tail::new(&log, Some(Cursor::default()));
        assert!(tail.peek().unwrap().is_none(), "nothing held before a read");
        let first = tail.read().unwrap().unwrap();
        assert_eq!(first.lines.len(), 1);
        append(&log, "{\"b\":2}\n{\"c\"");
        let r = tail.peek().unwrap().unwrap();
        assert_eq!(r.lines, vec![(8, b"{\"b\":2}".to_vec())]);
        assert_eq!(
            r.cursor.offset, 16,
            "the partial line is read again after a restart"
        );
        append(&log, ":3}\n");
        let r = tail.peek().unwrap().unwrap();
        assert_eq!(r.lines, vec![(16, b"{\"c\":3}".to_vec())]);
        assert!(tail.peek().unwrap().unwrap().lines.is_empty());
    }

    #[test]
    fn a_partial_line_waits_for_its_newline() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("events");
        append(&log, "");
        let mut tail = Tail::new(&log, None);
        append(&log, "{\"a\":1}\n{\"b\":");
        let r = tail.read().unwrap().unwrap();
        assert_eq!(texts(&r), vec!["{\"a\":1}"]);
        assert_eq!(r.cursor.offset, 8, "cursor stops before the partial line");
        append(&log, "2}\n");
        let r = tail.read().unwrap().unwrap();
        assert_eq!(texts(&r), vec!["{\"b\":2}"]);
        assert_eq!(r.lines[0].0, 8);
        assert_eq!(r.cursor.offset, 16);
    }

    #[test]
    fn first_start_skips_history_and_resume_continues_from_the_cursor() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("events");
        append(&log, "old\n");
        let mut tail = Tail::new(&log, None);
        assert!(tail.read().unwrap().unwrap().lines.is_empty());
        append(&log, "new\n");
        let r = tail.read().unwrap().unwrap();
        assert_eq!(texts(&r), vec!["new"]);
        let mut again = Tail::new(&log, Some(r.cursor));
        append(&log, "newer\n");
        assert_eq!(texts(&again.read().unwrap().unwrap()), vec!["newer"]);
    }

    #[test]
    fn truncation_and_replacement_restart_from_zero() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("events");
        append(&log, "one\ntwo\n");
        let mut tail = Tail::new(&log, Some(Cursor::default()));
        assert_eq!(texts(&tail.read().unwrap().unwrap()), vec!["one", "two"]);
        // The tracker restarts: the log starts empty again.
        std::fs::write(&log, "x\n").unwrap();
        let r = tail.read().unwrap().unwrap();
        assert!(r.restarted.is_some());
        assert_eq!(texts(&r), vec!["x"]);
        // Replaced by a new file (new inode).
        let new = tmp.path().join("events.new");
        append(&new, "fresh\nlog\nlonger\n");
        std::fs::rename(&new, &log).unwrap();
        let r = tail.read().unwrap().unwrap();
        assert!(r.restarted.as_deref().unwrap().contains("inode"));
        assert_eq!(texts(&r), vec!["fresh", "log", "longer"]);
    }

    #[test]
    fn rewritten_in_place_with_more_bytes_is_noticed_by_its_head() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("events");
        let a = format!("{}\n", "a".repeat(70));
        let b = format!("{}\n", "b".repeat(70));
        std::fs::write(&log, &a).unwrap();
        let mut tail = Tail::new(&log, Some(Cursor::default()));
        tail.read().unwrap().unwrap();
        // Same inode, grown past our offset, but a different log.
        let mut f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
        f.write_all(format!("{b}{b}").as_bytes()).unwrap();
        let r = tail.read().unwrap().unwrap();
        assert!(r.restarted.as_deref().unwrap().contains("first bytes"));
        assert_eq!(r.lines.len(), 2);
        assert!(r.lines[0].1.starts_with(b"bbb"));
    }

    /// 9beads restarted and re-mounted the same project: its new log opens
    /// with the very same mount event (same head), and grew past our offset
    /// before we looked (its size never seen below it).
    #[test]
    fn a_new_log_with_the_same_head_is_noticed_by_the_bytes_before_the_offset() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("events");
        let mount = r#"{"cwd":"/home/u/src/proj","name":"proj","type":"mount"}"#;
        let ev =
            |kind: &str, id: &str| format!(r#"{{"id":"{id}","mount":"proj","type":"{kind}"}}"#);
        append(&log, &format!("{mount}\n{}\n", ev("created", "bd-a1")));
        let mut tail = Tail::new(&log, Some(Cursor::default()));
        assert_eq!(tail.read().unwrap().unwrap().lines.len(), 2);
        let restarted = format!(
            "{mount}\n{}\n{}\n",
            ev("claimed", "bd-b2"),
            ev("completed", "bd-b2")
        );
        let mut f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
        f.write_all(restarted.as_bytes()).unwrap();
        let r = tail.read().unwrap().unwrap();
        assert!(
            r.restarted
                .as_deref()
                .unwrap()
                .contains("before the read offset"),
            "{:?}",
            r.restarted
        );
        assert_eq!(r.lines.len(), 3);
        // Growing normally afterwards is no restart.
        append(&log, &format!("{}\n", ev("created", "bd-c3")));
        let r = tail.read().unwrap().unwrap();
        assert!(r.restarted.is_none());
        assert_eq!(texts(&r), vec![ev("created", "bd-c3")]);
    }

    #[test]
    fn an_enormous_line_is_handed_out_once_and_the_rest_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("events");
        append(&log, "");
        let mut tail = Tail::new(&log, None);
        append(&log, &"x".repeat(MAX_EVENT_LINE + 10));
        let r = tail.read().unwrap().unwrap();
        assert_eq!(r.lines.len(), 1);
        assert!(r.lines[0].1.len() > MAX_EVENT_LINE);
        append(&log, &"y".repeat(100));
        append(&log, "\nok\n");
        let r = tail.read().unwrap().unwrap();
        assert_eq!(texts(&r), vec!["ok"]);
    }
}
