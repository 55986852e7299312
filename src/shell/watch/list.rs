//! Listing what is under the roots: every plan-relevant file (a rescan,
//! the start-up reconcile, `reveille status`), a directory's files and
//! subdirectories.

use std::path::{Path, PathBuf};

use super::{RootKind, Watch};

impl Watch {
    /// Every plan-relevant file under every existing root.
    pub fn list(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for root in &self.roots {
            if root.mode.waiting_in().is_some() {
                continue;
            }
            match root.kind {
                RootKind::Plans => out.extend(list_files(&root.path)),
                RootKind::Sessions if self.session_plans => out.extend(session_plans(&root.path)),
                RootKind::Sessions | RootKind::File => {}
            }
        }
        out
    }
}

/// Every plan-relevant file: the files of the plan directory and, when
/// enabled, `<sessions_dir>/<id>/plan`. Missing directories list as empty.
pub fn list_plans(plan_dir: &Path, sessions_dir: &Path, with_session_plans: bool) -> Vec<PathBuf> {
    let mut out = list_files(plan_dir);
    if with_session_plans {
        out.extend(session_plans(sessions_dir));
    }
    out
}

pub(super) fn session_plans(sessions_dir: &Path) -> Vec<PathBuf> {
    list_dirs(sessions_dir)
        .into_iter()
        .map(|d| d.join("plan"))
        .filter(|p| p.is_file())
        .collect()
}

pub(super) fn list_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect()
}

pub(super) fn list_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}
