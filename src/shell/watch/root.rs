//! The roots: which kind each is, how it is watched now (inotify, polled,
//! awaited in an ancestor, not a directory), and the file systems where
//! inotify sees nothing of remote changes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::what_it_is;
use crate::core::effect::Level;

/// A filesystem where inotify sees nothing of remote changes.
pub(super) fn is_remote_fs(path: &Path) -> Option<&'static str> {
    let st = nix::sys::statfs::statfs(path).ok()?;
    remote_fs_kind(&st)
}

/// The name of a filesystem where inotify sees nothing of remote changes
/// (and where a file may be a synthetic message endpoint), from its statfs.
pub fn remote_fs_kind(st: &nix::sys::statfs::Statfs) -> Option<&'static str> {
    // `__fsword_t` is i64 on x86_64 but not on every target.
    #[allow(clippy::unnecessary_cast)]
    let t = st.filesystem_type().0 as i64;
    match t {
        0x6573_5546 => Some("FUSE"),
        0x0102_1997 => Some("9P"),
        0x6969 => Some("NFS"),
        0x517B => Some("SMB"),
        0xFF53_4D42 => Some("CIFS"),
        0xFE53_4D42 => Some("SMB2"),
        _ => None,
    }
}

/// Which kind of root, which decides the files that matter under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    /// Plan files directly inside.
    Plans,
    /// One directory per session; `plan` and the enqueue file inside each.
    Sessions,
    /// A single file (the tracker's event log, a beads `issues.jsonl`),
    /// watched through its directory so replacing it is seen too.
    File,
}

/// How a root is being watched right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootMode {
    Inotify,
    /// Polled, and why (shown in status and STATUS=).
    Polled(String),
    /// Does not exist; its nearest existing ancestor is watched.
    Missing(PathBuf),
    /// Exists but is not a directory (a regular file, a pipe…): nothing
    /// under it can be watched; its parent is, for it to be replaced.
    NotADirectory(PathBuf),
    /// Cannot appear: an ancestor is there but is not a directory (a
    /// plan directory configured beneath a regular file). That ancestor's
    /// parent is watched, for it to be replaced.
    BeneathNonDirectory {
        blocker: PathBuf,
        parent: PathBuf,
    },
}

impl RootMode {
    /// The directory watched while the root cannot be: the ancestor it
    /// is awaited in.
    pub(super) fn waiting_in(&self) -> Option<&Path> {
        match self {
            RootMode::Missing(a)
            | RootMode::NotADirectory(a)
            | RootMode::BeneathNonDirectory { parent: a, .. } => Some(a),
            _ => None,
        }
    }

    /// How a root coming to be watched this way is said in the journal:
    /// the level and the words. A root that does not exist yet is no
    /// fault (the README says it may not): information, once. A root that
    /// is not a directory is an error of its own.
    pub fn said(&self, path: &Path, poll: Duration) -> (Level, String) {
        let p = path.display();
        match self {
            RootMode::Inotify => (Level::Info, format!("watching {p} with inotify")),
            RootMode::Polled(why) => (Level::Warn, format!("polling {p} every {poll:?}: {why}")),
            RootMode::Missing(a) => (
                Level::Info,
                format!(
                    "{p} does not exist yet; watching {} for it to appear",
                    a.display()
                ),
            ),
            RootMode::NotADirectory(_) => (
                Level::Error,
                format!(
                    "{p} is not a directory but {}; nothing in it is watched until it is replaced by a directory",
                    what_it_is(path)
                ),
            ),
            RootMode::BeneathNonDirectory { blocker, .. } => (
                Level::Error,
                format!(
                    "{p} cannot appear: {} is not a directory but {}; nothing in it is watched until that is replaced by a directory",
                    blocker.display(),
                    what_it_is(blocker)
                ),
            ),
        }
    }
}

/// One root, and how it is watched now.
#[derive(Debug)]
pub(super) struct Root {
    pub(super) path: PathBuf,
    pub(super) kind: RootKind,
    pub(super) mode: RootMode,
}

impl Root {
    /// The directory that is watched for this root.
    pub(super) fn dir(&self) -> PathBuf {
        match self.kind {
            RootKind::File => self
                .path
                .parent()
                .map_or_else(|| PathBuf::from("/"), Path::to_path_buf),
            _ => self.path.clone(),
        }
    }
}
