//! What a reminder names of a task that is still the session's open work:
//! its title, where it is, and exactly how it is closed.

use std::path::Path;

use super::Tasks;
use crate::core::close::Close;
use crate::core::engine::config::EngineConfig;
use crate::core::engine::reminders::Open;
use crate::core::record::Work;
use crate::core::source::Source;

impl Tasks {
    /// Task `work` of `source`, announced to `session`, as a reminder
    /// names it; `None` when it is not that session's open work now: ready
    /// but claimed by another session's assignee, or on a 9beads mount that
    /// is away (it cannot be closed there).
    pub(in crate::core::engine) fn open_task(
        &self,
        config: &EngineConfig,
        session: &str,
        source: &Source,
        work: &Work,
    ) -> Option<Open> {
        let (Work::Task(id) | Work::Claimed(id)) = work else {
            return None;
        };
        // `Claimed` is this session's by construction.
        let key = (source.clone(), id.clone());
        if let (Work::Task(_), Some(who)) = (work, self.task_assignees.get(&key)) {
            if config.assignees.get(who).map(String::as_str) != Some(session) {
                return None;
            }
        }
        let title = self.task_titles.get(&key);
        // A 9beads task is closed at its mount as it is named now.
        let mount = match source.is_tracker_mount() {
            true => Some(self.mount_of(source)?.to_string()),
            false => None,
        };
        let root = Path::new(&config.beads_root);
        let call = match &mount {
            Some(mount) => Close::NineBeads { id, root, mount },
            None => Close::Beads { id },
        }
        .to_string();
        Some(Open {
            label: id.clone(),
            title: title.cloned().unwrap_or_else(|| id.clone()),
            file: source.to_string(),
            path: source.to_string(),
            call,
            mount,
        })
    }
}
