//! Polling the roots inotify cannot watch: `(dev, ino, size, mtime_ns)`
//! fingerprints of the files that matter, compared poll to poll.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::list::{list_dirs, list_files};
use super::{RootKind, RootMode, Seen, Watch};

/// A file fingerprint for polling. Nanosecond mtime, since whole seconds
/// miss two writes within one second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fingerprint {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    if !m.is_file() {
        return None;
    }
    let mtime_ns = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128);
    Some(Fingerprint {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime_ns,
    })
}

impl Watch {
    /// One poll of the polled roots: what changed since the last poll.
    pub fn poll(&mut self) -> Vec<Seen> {
        let mut now: BTreeMap<PathBuf, Fingerprint> = BTreeMap::new();
        for root in &self.roots {
            if !matches!(root.mode, RootMode::Polled(_)) {
                continue;
            }
            let files: Vec<PathBuf> = match root.kind {
                RootKind::Plans => list_files(&root.path),
                RootKind::Sessions if self.sessions_indexed => Vec::new(),
                RootKind::Sessions => list_dirs(&root.path)
                    .into_iter()
                    .flat_map(|d| [d.join("plan"), d.join(&self.enqueue)])
                    .collect(),
                RootKind::File => vec![root.path.clone()],
            };
            for f in files {
                if let Some(fp) = fingerprint(&f) {
                    now.insert(f, fp);
                }
            }
        }
        let mut seen = Vec::new();
        for (path, fp) in &now {
            match self.polled.get(path) {
                Some(old) if old == fp => {}
                Some(_) => seen.push(Seen::Closed(path.clone())),
                None => seen.push(Seen::MovedIn(path.clone())),
            }
        }
        for path in self.polled.keys() {
            if !now.contains_key(path) {
                seen.push(Seen::Gone(path.clone()));
            }
        }
        self.polled = now;
        seen
    }
}
