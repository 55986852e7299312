//! 9beads' mount table read for one project: which of the mounts in
//! `<beads_root>/mtab` are the project's directory (`project.dir`).
//!
//! 9beads names a mount at random and keeps its directory as written to
//! `mount` (trimmed), except that a path two levels below a
//! `BEADS_PROJECT_DIRS` entry is resolved to the one level below it
//! (`doMount` in 9beads' `p9/server.go`; the entries from
//! `config/config.go`: colon-separated, `~/` expanded, default
//! `$HOME/src:$HOME/prj`). So the project's directory is compared with each
//! mount's both as it is and as 9beads would resolve it, and each pair both
//! lexically (`.` and trailing slashes aside) and, where both exist, by
//! their canonical paths (symlinks resolved): an agent's `$PWD` through a
//! symlink is the same project.

use std::path::{Component, Path, PathBuf};

use crate::core::input::{MountTable, ProjectMount};
use crate::core::tracker::parse_mtab;
use crate::shell::read::read_capped;

/// `mtab` lists a handful of mounts; anything near this is not one.
const MTAB_CAP: usize = 1 << 20;

/// Read `<beads_root>/mtab` and keep the mounts of `project_dir`.
pub fn read_mount_table(beads_root: &Path, project_dir: &Path) -> MountTable {
    use crate::core::input::FileRead;
    let bytes = match read_capped(&beads_root.join("mtab"), MTAB_CAP) {
        FileRead::Bytes(b) => b,
        FileRead::Missing => return MountTable::Missing,
        failed => return MountTable::Failed(failed.failure().unwrap_or_default()),
    };
    let (rows, errors) = parse_mtab(&String::from_utf8_lossy(&bytes));
    let project = Candidates::of(project_dir, &project_dirs());
    let (ours, others): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| project.matches(&r.cwd));
    MountTable::Read {
        ours: ours
            .into_iter()
            .map(|r| ProjectMount {
                name: r.name,
                cwd: r.cwd,
            })
            .collect(),
        others: others.len(),
        errors,
    }
}

/// The forms of the project's directory a mount's may equal.
struct Candidates(Vec<PathBuf>);

impl Candidates {
    fn of(dir: &Path, project_dirs: &[PathBuf]) -> Candidates {
        let mut forms = vec![dir.to_path_buf()];
        if let Ok(real) = dir.canonicalize() {
            forms.push(real);
        }
        let resolved: Vec<PathBuf> = forms
            .iter()
            .filter_map(|f| resolve_like_9beads(f, project_dirs))
            .collect();
        forms.extend(resolved);
        Candidates(forms)
    }

    fn matches(&self, cwd: &str) -> bool {
        let cwd = expand_home(cwd);
        let real = cwd.canonicalize().ok();
        self.0.iter().any(|form| {
            lexical(form) == lexical(&cwd)
                || real
                    .as_ref()
                    .is_some_and(|r| form.canonicalize().is_ok_and(|f| f == *r))
        })
    }
}

/// `config.ProjectDirs` as 9beads computes it from its environment — and
/// reveille's: under systemd both usually run with the user manager's.
fn project_dirs() -> Vec<PathBuf> {
    let home = std::env::var("HOME").unwrap_or_default();
    let list = std::env::var("BEADS_PROJECT_DIRS")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{home}/src:{home}/prj"));
    list.split(':')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| match d.strip_prefix("~/") {
            Some(rest) => Path::new(&home).join(rest),
            None => PathBuf::from(d),
        })
        .collect()
}

/// `doMount`'s resolution: a path one level below an entry is itself, one
/// two levels below is the one level below; `None` where 9beads would keep
/// the path as it is (or refuse it).
fn resolve_like_9beads(path: &Path, project_dirs: &[PathBuf]) -> Option<PathBuf> {
    let path = path.to_string_lossy();
    for dir in project_dirs {
        let prefix = format!("{}/", dir.to_string_lossy());
        let Some(rel) = path.strip_prefix(&prefix) else {
            continue;
        };
        let parts: Vec<&str> = rel.splitn(3, '/').collect();
        match parts[..] {
            [one] if !one.is_empty() => return None,
            [first, _] => return Some(dir.join(first)),
            _ => {}
        }
    }
    None
}

/// `~/…` as a shell would have expanded it.
fn expand_home(cwd: &str) -> PathBuf {
    match (cwd.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(cwd),
    }
}

/// A path without `.` components or trailing slashes (`..` kept: only the
/// file system can say where it leads).
fn lexical(path: &Path) -> Vec<Component<'_>> {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_as_9beads_resolves_them() {
        let dirs = [PathBuf::from("/h/src"), PathBuf::from("/h/prj")];
        let r = |p: &str| resolve_like_9beads(Path::new(p), &dirs);
        assert_eq!(r("/h/src/proj"), None, "one level below: itself");
        assert_eq!(r("/h/src/proj/sub"), Some(PathBuf::from("/h/src/proj")));
        assert_eq!(r("/h/prj/p/a"), Some(PathBuf::from("/h/prj/p")));
        assert_eq!(r("/h/src/proj/a/b"), None, "deeper: 9beads refuses it");
        assert_eq!(r("/elsewhere/proj/sub"), None);
    }

    #[test]
    fn a_mount_matches_by_its_directory_lexically_resolved_or_through_symlinks() {
        let root = tempfile::tempdir().unwrap();
        let src = root.path().join("src");
        let proj = src.join("proj");
        std::fs::create_dir_all(proj.join("sub")).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&proj, &link).unwrap();
        let dirs = [src.clone()];
        let ours = Candidates::of(&proj, &dirs);
        let show = |p: &Path| p.display().to_string();
        assert!(ours.matches(&show(&proj)));
        assert!(
            ours.matches(&format!("{}/", show(&proj))),
            "a trailing slash"
        );
        assert!(ours.matches(&format!("{}/./", show(&proj))));
        assert!(ours.matches(&show(&link)), "through a symlink");
        assert!(
            !ours.matches(&show(&src)),
            "the parent is another directory"
        );
        assert!(
            !ours.matches(&show(&proj.join("sub"))),
            "9beads resolves sub away"
        );
        assert!(!ours.matches("/no/such/dir"));
        // The project one level deeper than 9beads keeps projects: 9beads
        // mounts it as the directory above.
        let deep = Candidates::of(&proj.join("sub"), &dirs);
        assert!(deep.matches(&show(&proj)));
        // A directory that does not exist (yet) still matches as written.
        let missing = Candidates::of(&root.path().join("later"), &dirs);
        assert!(missing.matches(&show(&root.path().join("later"))));
    }

    #[test]
    fn the_table_keeps_the_projects_mounts_and_counts_the_others() {
        let root = tempfile::tempdir().unwrap();
        let proj = root.path().join("proj");
        std::fs::create_dir(&proj).unwrap();
        let text = format!(
            "1a2b3c4d\t{}\n9f8e7d6c\t/somewhere/else\nbroken line\n",
            proj.display()
        );
        std::fs::write(root.path().join("mtab"), text).unwrap();
        let MountTable::Read {
            ours,
            others,
            errors,
        } = read_mount_table(root.path(), &proj)
        else {
            panic!("mtab not read");
        };
        assert_eq!(ours.len(), 1);
        assert_eq!(ours[0].name, "1a2b3c4d");
        assert_eq!(ours[0].cwd, proj.display().to_string());
        assert_eq!((others, errors.len()), (1, 1));
        let gone = read_mount_table(&root.path().join("nothing"), &proj);
        assert_eq!(gone, MountTable::Missing);
    }
}
