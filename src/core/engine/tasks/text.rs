//! The texts of tracker prompts — a task ready, a claim, a completion
//! elsewhere — rendered from the project's templates with the task's facts.
//! The task's *current* mount name and the mount root are among them, so a
//! prompt can say exactly where the task is closed now
//! (`echo <id> > <beads_root>/<mount>/complete`).

use std::path::Path;

use crate::core::close::Close;
use crate::core::engine::config::EngineConfig;
use crate::core::prompt;
use crate::core::record::{Item, Note, Work};

/// What a tracker prompt may say about its task.
pub(super) struct Facts<'a> {
    pub(super) id: &'a str,
    pub(super) title: &'a str,
    /// The mount's name now; `-` for the beads file.
    pub(super) mount: &'a str,
    pub(super) assignee: Option<&'a str>,
    /// The session the prompt goes to.
    pub(super) session: &'a str,
    /// The source's persisted form (`9beads:<cwd>`, `mount:<name>`, `beads`).
    pub(super) source: &'a str,
}

/// The template of a prompt about `item`, if it is a kind with one.
pub(super) fn template<'c>(config: &'c EngineConfig, item: &Item) -> Option<&'c str> {
    let t = &config.templates;
    match item {
        Item::Work(Work::Task(_)) => Some(&t.task),
        Item::Note(Note::Claim(..)) => Some(&t.claim),
        Item::Note(Note::Completed(_)) => Some(&t.completed),
        _ => None,
    }
}

/// How the task is closed: at its mount as it is named now, or `bd close`.
fn closing<'a>(config: &'a EngineConfig, facts: &Facts<'a>) -> Close<'a> {
    match facts.mount {
        "-" => Close::Beads { id: facts.id },
        mount => Close::NineBeads {
            id: facts.id,
            root: Path::new(&config.beads_root),
            mount,
        },
    }
}

/// Render `template` with `facts`.
pub(super) fn render(config: &EngineConfig, template: &str, facts: &Facts) -> String {
    let close = closing(config, facts).to_string();
    prompt::render(
        template,
        &[
            ("id", facts.id),
            ("title", facts.title),
            ("mount", facts.mount),
            ("beads_root", &config.beads_root),
            ("assignee", facts.assignee.unwrap_or("-")),
            ("session", facts.session),
            ("source", facts.source),
            ("close", &close),
        ],
    )
}
