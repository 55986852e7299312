//! Plan-like files the daemon ignores because of their names
//! (`…_0A1B2C3D--x__todo.md`, `…__doing.md`, `ship_it`): each is reported
//! once in the journal, naming the file and the rule it breaks, so a plan
//! that never wakes anyone is not a silent mystery.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::core::input::Input;
use crate::core::name::{diagnose, dir_and_name};

/// Paths already reported. Process-wide, because "once" means once per
/// daemon run — across rescans and reloads — and the daemon is the only
/// caller; it keeps the daemon loop free of one more field to thread.
static REPORTED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Logs (warning) each file directly under `plan_dir` that `input` lists
/// or shows changing whose name looks like a plan's but breaks the rule,
/// the first time it is seen.
pub fn report(plan_dir: &Path, project: &str, input: &Input) {
    let paths: Vec<&PathBuf> = match input {
        Input::Listed { paths, .. } => paths.iter().collect(),
        Input::Changed { path, .. } => vec![path],
        _ => return,
    };
    for path in paths {
        // By bytes first (the watcher joins names onto the configured
        // directory), `Path`'s component walk only when they differ.
        let (parent, name) = match dir_and_name(path) {
            Some((dir, name)) => (Some(dir), Some(Cow::Borrowed(name))),
            None => (path.parent(), path.file_name().map(|n| n.to_string_lossy())),
        };
        if parent.is_none_or(|p| p.as_os_str() != plan_dir.as_os_str() && p != plan_dir) {
            continue;
        }
        let Some(name) = name else {
            continue;
        };
        let Some(rule) = diagnose(&name) else {
            continue;
        };
        // A name seen only as gone is not reported (nor marked).
        if !path.exists() {
            continue;
        }
        let fresh = REPORTED
            .lock()
            .map(|mut seen| seen.insert(path.clone()))
            .unwrap_or(false);
        if fresh {
            tracing::warn!(
                project = %project,
                FILE = %name,
                "ignoring {}: not a plan name: {rule} (plans are named YYYYMMDDTHHMMSS_<uid>--<slug>__<todo|wip|done|abandoned>.md)",
                path.display()
            );
        }
    }
}
