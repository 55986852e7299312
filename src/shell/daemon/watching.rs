//! The watch side of the daemon: the roots watched (which `add_roots`
//! says, from the settings), what one read of inotify reported, and the
//! plan files held open between reads.

use crate::config::Settings;
use crate::shell::read::PlanFiles;
use crate::shell::watch::{RootKind, Seen, Watch};

/// The watch side: the roots watched, what one read of inotify reported
/// (its buffer kept between reads), and the plan files read last.
pub(super) struct Watching {
    pub(super) watch: Watch,
    /// What one read of inotify reported, kept between reads.
    pub(super) seen: Vec<Seen>,
    /// The plan files read last, held open for their next rewrite.
    pub(super) plan_files: PlanFiles,
}

impl Watching {
    pub(super) fn new(watch: Watch) -> Watching {
        Watching {
            watch,
            seen: Vec::new(),
            plan_files: PlanFiles::default(),
        }
    }
}

/// Watch every root the settings name.
pub(super) fn add_roots(watch: &mut Watch, s: &Settings) {
    watch.add_root(&s.project.plan_dir, RootKind::Plans);
    watch.add_root(&s.sessions.dir, RootKind::Sessions);
    if let Some(p) = &s.events.path {
        watch.add_root(p, RootKind::File);
    }
    if let Some(p) = &s.beads.issues_jsonl {
        watch.add_root(p, RootKind::File);
    }
}
