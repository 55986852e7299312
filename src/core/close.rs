//! How an agent closes what it was woken for, with the tools it really has
//! (SPEC §3): the one owner of that wording, shared by every prompt and
//! reminder. Never a tool that no longer exists (ollie's `task_complete`
//! was removed in April 2026), never a file that is not served (9beads has
//! no `ctl`).

use std::fmt;
use std::path::Path;

/// What closes one announced item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Close<'a> {
    /// A step of a plan file: the checkbox edit, in the file itself (any
    /// agent that writes files can make it). `title` is the line's text
    /// as written, annotation and all, so an exact edit finds it.
    PlanFile { title: &'a str, path: &'a Path },
    /// A step of an ollie-9p session's own checklist: its `task_check`
    /// tool.
    Checklist { title: &'a str },
    /// A task of a plan.json document: its status set to `done`.
    PlanJson { text: &'a str, path: &'a Path },
    /// A 9beads task: one line to the mount's write-only `complete` file.
    NineBeads {
        id: &'a str,
        root: &'a Path,
        mount: &'a str,
    },
    /// A beads issue: `bd close`.
    Beads { id: &'a str },
}

impl fmt::Display for Close<'_> {
    /// An imperative clause: "When it is finished, {close}."
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Close::PlanFile { title, path } => write!(
                f,
                "change `- [ ] {title}` to `- [x] {title}` in {}",
                path.display()
            ),
            Close::Checklist { title } => write!(
                f,
                "check it off in your session's plan with the task_check tool (the step titled \"{title}\")"
            ),
            Close::PlanJson { text, path } => write!(
                f,
                "set the status of the task \"{text}\" to \"done\" in {}",
                path.display()
            ),
            Close::NineBeads { id, root, mount } => write!(
                f,
                "run `echo {id} > {}`",
                root.join(mount).join("complete").display()
            ),
            Close::Beads { id } => write!(f, "run `bd close {id}`"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_item_is_closed_with_a_tool_that_exists() {
        let path = Path::new("/p/20260101T000000_0a1b2c3d--x__wip.md");
        assert_eq!(
            Close::PlanFile {
                title: "Build",
                path
            }
            .to_string(),
            "change `- [ ] Build` to `- [x] Build` in /p/20260101T000000_0a1b2c3d--x__wip.md"
        );
        let root = Path::new("/home/u/mnt/beads");
        assert_eq!(
            Close::NineBeads {
                id: "bd-1",
                root,
                mount: "1a2b3c4d"
            }
            .to_string(),
            "run `echo bd-1 > /home/u/mnt/beads/1a2b3c4d/complete`"
        );
        assert_eq!(
            Close::Beads { id: "bd-1" }.to_string(),
            "run `bd close bd-1`"
        );
        for c in [
            Close::Checklist { title: "Build" }.to_string(),
            Close::PlanJson {
                text: "Build",
                path,
            }
            .to_string(),
        ] {
            assert!(!c.contains("task_complete") && !c.contains("ctl"), "{c}");
        }
    }
}
