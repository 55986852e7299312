//! Reading the files the engine asks for: plans, ready lists,
//! `issues.jsonl`. Capped (an oversized file is recognised without reading
//! it all), non-blocking and regular files only (a FIFO named like a plan
//! cannot hang the loop), and whole in one `read(2)` where it can be.

use std::io::{Read, Seek};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use crate::core::input::FileRead;

/// Read a plan file, at most `cap + 1` bytes (so an oversized file is
/// refused without reading all of it). Opened non-blocking and checked to be
/// a regular file, so a FIFO named like a plan cannot hang the loop.
pub fn read_capped(path: &Path, cap: usize) -> FileRead {
    read_fresh(path, cap, Duration::ZERO).0
}

/// `read_capped`, and whether the file was modified less than `window` ago
/// (by the wall clock, against its mtime): a writer may be rewriting it
/// right now, so what was read may be the start of the next version.
pub fn read_fresh(path: &Path, cap: usize, window: Duration) -> (FileRead, bool) {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (FileRead::Missing, false),
        Err(e) => return (FileRead::Failed(e.to_string()), false),
    };
    let meta = match file.metadata() {
        Ok(m) if m.is_file() => m,
        Ok(m) if m.file_type().is_fifo() => {
            return (
                FileRead::Failed("is a named pipe, not a plan file".into()),
                false,
            )
        }
        Ok(_) => return (FileRead::Failed("is not a regular file".into()), false),
        Err(e) => return (FileRead::Failed(e.to_string()), false),
    };
    let fresh = !window.is_zero()
        && meta
            .modified()
            .ok()
            .and_then(|m| std::time::SystemTime::now().duration_since(m).ok())
            .is_none_or(|age| age < window);
    let mut size = meta.len();
    // The whole file in one read(2), and its size checked afterwards: a
    // plan rewritten in place (truncate, write) between two reads of it is
    // seen cut short, and a prefix whose steps are all checked sent an
    // early all-done nudge (steps missing from it were forgotten and
    // announced again). `read_to_end` on a `Take` reads 32 bytes first and
    // then doubles: six read(2)s for a 400-byte plan (found by the soak test
    // in tests/reliability). A file that changed during the read is read
    // again.
    let mut attempt = 0;
    loop {
        let mut bytes = vec![0u8; usize::try_from(size).unwrap_or(cap).min(cap) + 1];
        let mut filled = 0;
        loop {
            if filled == bytes.len() {
                if filled > cap {
                    break;
                }
                bytes.resize((filled * 2).min(cap + 1), 0);
            }
            match file.read(&mut bytes[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return (FileRead::Failed(e.to_string()), false),
            }
        }
        bytes.truncate(filled);
        let now = file.metadata().map_or(size, |m| m.len());
        attempt += 1;
        if now == filled as u64 || filled > cap || attempt == 4 || synthetic(&file) {
            return (FileRead::Bytes(bytes), fresh);
        }
        if let Err(e) = file.seek(std::io::SeekFrom::Start(0)) {
            return (FileRead::Failed(e.to_string()), false);
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
    fn read_capped_reads_whole_files_and_at_most_cap_plus_one_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("p.md");
        for len in [0usize, 1, 31, 32, 33, 400, 5000] {
            let text = "x".repeat(len);
            std::fs::write(&path, &text).unwrap();
            match read_capped(&path, 4096) {
                FileRead::Bytes(b) => assert_eq!(b.len(), len.min(4097), "len {len}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(
            read_capped(&tmp.path().join("missing"), 10),
            FileRead::Missing
        ));
    }
}
