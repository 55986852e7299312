//! Session checklists have one owner. Every project of a user points at the
//! same ollie mount by default (`~/mnt/ollie/s`), so two instances would
//! both read `<sessions_dir>/<id>/plan` and both announce its steps — two
//! prompts for every step. The first instance to start with
//! `sessions.session_plans` on takes an exclusive lock named after the
//! sessions directory in the user's runtime directory
//! (`$XDG_RUNTIME_DIR/reveille/session-checklists-<hash>.lock`, which
//! systemd sets up for every user service; a lock file there is the one
//! file reveille makes outside its roots and state directory, and it holds
//! nothing but who owns the lock); the others leave session checklists to
//! it and say so once. The lock goes with the process (killed or stopped),
//! and a reload of another instance takes it over then. Without
//! `XDG_RUNTIME_DIR` there is nowhere the instances share, and each one
//! announces the checklists it sees.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::config::Settings;
use crate::core::fnv::fnv1a;

/// The outcome of claiming the session checklists of a sessions directory.
#[derive(Debug)]
pub enum Claim {
    /// This instance announces them; the lock is held while this lives.
    Owned(Option<Flock<File>>),
    /// Another instance does (its lock file says who).
    Taken { by: String, lock: PathBuf },
}

/// Where the lock for `sessions_dir` lives, in `runtime_dir`.
pub fn lock_path(runtime_dir: &Path, sessions_dir: &Path) -> PathBuf {
    let dir = std::fs::canonicalize(sessions_dir).unwrap_or_else(|_| sessions_dir.to_path_buf());
    let hash = fnv1a(dir.as_os_str().as_encoded_bytes());
    runtime_dir
        .join("reveille")
        .join(format!("session-checklists-{hash:016x}.lock"))
}

/// `$XDG_RUNTIME_DIR`, if set to an absolute path.
fn runtime_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// Claim the session checklists of `settings`' sessions directory for
/// this instance (`project`, this pid).
pub fn claim(settings: &Settings) -> Claim {
    let Some(runtime) = runtime_dir() else {
        return Claim::Owned(None);
    };
    let path = lock_path(&runtime, &settings.sessions.dir);
    if let Some(dir) = path.parent() {
        let _ = std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(dir);
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path);
    let Ok(file) = file else {
        // No place for the lock (a read-only parent): nothing to share it
        // with either.
        return Claim::Owned(None);
    };
    let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => locked,
        Err((mut file, _)) => {
            let mut by = String::new();
            let _ = file.read_to_string(&mut by);
            let by = by.trim();
            let by = if by.is_empty() {
                "another instance"
            } else {
                by
            };
            return Claim::Taken {
                by: by.to_string(),
                lock: path,
            };
        }
    };
    let me = format!(
        "project {} (pid {})\n",
        settings.project.name,
        std::process::id()
    );
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = file.write_all(me.as_bytes());
    Claim::Owned(Some(file))
}

/// Claim, and turn session checklists off in `settings` when another
/// instance has them; says so once (and that they are this instance's).
pub fn apply(settings: &mut Settings) -> Option<Claim> {
    if !settings.sessions.session_plans {
        return None;
    }
    let claim = claim(settings);
    let project = settings.project.name.clone();
    match &claim {
        Claim::Owned(_) => {}
        Claim::Taken { by, lock } => {
            settings.sessions.session_plans = false;
            tracing::info!(project = %project, "session checklists in {} are announced by {by} (lock {}); this instance leaves them to it", settings.sessions.dir.display(), lock.display());
        }
    }
    Some(claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lock_per_sessions_directory_and_a_stable_name() {
        let t = tempfile::tempdir().unwrap();
        let a = lock_path(t.path(), &t.path().join("s"));
        assert!(a.starts_with(t.path().join("reveille")));
        assert_eq!(a, lock_path(t.path(), &t.path().join("s")));
        assert_ne!(a, lock_path(t.path(), &t.path().join("other")));
    }
}
