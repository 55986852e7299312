//! The directories the observer follows with inotify: the registry
//! (`<config>/sessions`) and the transcript directories of the sessions it
//! delivers to. A directory that does not exist yet (no Claude Code has
//! run with this config, a session that has written no transcript yet) is
//! waited for by watching its nearest existing ancestor for names
//! appearing, as the daemon's own watcher does.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use crate::shell::inotify::{Inotify, Kind, Mask, Wd};

/// What changed since the last read.
#[derive(Debug, Default)]
pub struct Changes {
    /// `(directory, name)` of each event in a wanted directory.
    pub files: Vec<(PathBuf, OsString)>,
    /// Events were lost, or a wanted directory appeared or went: read
    /// everything again.
    pub rescan: bool,
}

pub struct Watches {
    inotify: Inotify,
    wanted: BTreeSet<PathBuf>,
    /// What is watched now, and for what.
    watched: BTreeMap<PathBuf, (Wd, Mask)>,
    by_wd: HashMap<Wd, PathBuf>,
}

impl Watches {
    pub fn new() -> std::io::Result<Watches> {
        Ok(Watches {
            inotify: Inotify::new()?,
            wanted: BTreeSet::new(),
            watched: BTreeMap::new(),
            by_wd: HashMap::new(),
        })
    }

    pub fn fd(&self) -> RawFd {
        self.inotify.as_fd().as_raw_fd()
    }

    /// Follow `dir` from now on (once it exists).
    pub fn want(&mut self, dir: PathBuf) -> std::io::Result<()> {
        if self.wanted.insert(dir) {
            self.ensure()?;
        }
        Ok(())
    }

    /// Watch each wanted directory, or its nearest existing ancestor. A
    /// directory created while the watches were being placed would go
    /// unseen, so they are placed again until what exists stops changing;
    /// the caller reads everything afterwards.
    fn ensure(&mut self) -> std::io::Result<()> {
        for _ in 0..16 {
            let desired = self.desired();
            if desired == self.masks() {
                return Ok(());
            }
            self.place(desired)?;
        }
        Ok(())
    }

    /// Where each wanted directory is to be watched, and for what.
    fn desired(&self) -> BTreeMap<PathBuf, Mask> {
        let mut desired: BTreeMap<PathBuf, Mask> = BTreeMap::new();
        for dir in &self.wanted {
            let (at, mask) = match nearest_existing(dir) {
                Some(d) if d == *dir => (d, Mask::FILES),
                Some(d) => (d, Mask::ANCESTOR),
                None => continue,
            };
            let m = desired.get(&at).map_or(mask, |m| m.union(mask));
            desired.insert(at, m);
        }
        desired
    }

    fn masks(&self) -> BTreeMap<PathBuf, Mask> {
        self.watched
            .iter()
            .map(|(d, (_, m))| (d.clone(), *m))
            .collect()
    }

    fn place(&mut self, desired: BTreeMap<PathBuf, Mask>) -> std::io::Result<()> {
        let stale: Vec<PathBuf> = self
            .watched
            .keys()
            .filter(|d| !desired.contains_key(*d))
            .cloned()
            .collect();
        for dir in stale {
            if let Some((wd, _)) = self.watched.remove(&dir) {
                self.inotify.remove(wd);
                self.by_wd.remove(&wd);
            }
        }
        for (dir, mask) in desired {
            if self.watched.get(&dir).is_some_and(|(_, m)| *m == mask) {
                continue;
            }
            let wd = self.inotify.add(&dir, mask)?;
            self.by_wd.insert(wd, dir.clone());
            self.watched.insert(dir, (wd, mask));
        }
        Ok(())
    }

    /// Every event queued, as changes.
    pub fn read(&mut self) -> std::io::Result<Changes> {
        let mut changes = Changes::default();
        let mut events = Vec::new();
        while self.inotify.read(|e| {
            events.push((e.wd, e.kind, e.name.map(|n| n.to_os_string())));
        })? {}
        for (wd, kind, name) in events {
            let Some(dir) = self.by_wd.get(&wd) else {
                continue;
            };
            match (kind, name) {
                (Kind::Overflow | Kind::SelfGone | Kind::Ignored, _) => changes.rescan = true,
                (_, Some(name)) if self.wanted.contains(dir) => {
                    changes.files.push((dir.clone(), name));
                }
                // An ancestor: something on the way to a wanted directory appeared.
                _ => changes.rescan = true,
            }
        }
        if changes.rescan {
            self.ensure()?;
        }
        Ok(changes)
    }
}

/// `dir`, or the nearest of its ancestors that exists as a directory.
fn nearest_existing(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.is_dir()).map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_waited_for_through_its_ancestor_and_then_followed() {
        let root = tempfile::tempdir().unwrap();
        let want = root.path().join("config/sessions");
        let mut w = Watches::new().unwrap();
        w.want(want.clone()).unwrap();
        std::fs::create_dir_all(&want).unwrap();
        // The ancestor saw `config` appear; by the time the watches are
        // renewed, `sessions` exists and is watched itself.
        assert!(w.read().unwrap().rescan);
        std::fs::write(want.join("12.json"), "{}").unwrap();
        let got = w.read().unwrap();
        assert!(
            got.files.iter().any(|(d, n)| *d == want && n == "12.json"),
            "{got:?}"
        );
    }
}
