//! Every kind of agent session reveille reaches, one folder each, each a
//! [`Backend`] with its transport (how a prompt reaches the agent), its
//! observer (how its sessions' states are seen) and its configuration
//! section:
//!
//! - `pipe`: a bare session id, a directory under `sessions.dir` — its
//!   enqueue file written (a named pipe, a regular file; no observer), or,
//!   when the directory is an ollie-9p session, handed to `ollie`;
//! - `ollie`: ollie-9p sessions — Submit and its evidence, children
//!   through `s/new`, the `idx` worker that observes the tree;
//! - `codex`: `codex:<thread>`, through the app-server that owns the thread;
//! - `claude`: `claude:<id>`, through the session's messaging socket;
//! - `opencode`: `opencode:<id>`, through the server that owns the session.
//!
//! [`KINDS`] is the one list of them: adding a kind is adding its folder
//! and one entry there (and its id prefix in `core::session::Kind`, which
//! the pure engine parses ids with).

use crate::config::Settings;
use crate::core::session::Kind;
use crate::shell::backend::{Backend, Reports};

pub mod claude;
pub mod codex;
pub mod ollie;
pub mod opencode;
pub mod pipe;
pub mod presence;
pub mod remote;

/// One kind of session: how its backend is made from the settings, and
/// whether a reload changed what it is made from (its section), so that
/// it is made again.
pub struct KindEntry {
    pub kind: Kind,
    pub make: fn(&Settings, &Reports) -> Box<dyn Backend>,
    pub changed: fn(&Settings, &Settings) -> bool,
    /// Whether every session its observer reports is the project's, and
    /// so shown in `sessions.json` unasked (a sessions directory's are;
    /// a program's registry may hold every session on the machine).
    pub all_ours: bool,
}

/// The kinds, the one place they are listed.
pub const KINDS: &[KindEntry] = &[
    KindEntry {
        kind: Kind::Dir,
        make: |s, r| Box::new(pipe::DirBackend::new(s, r)),
        changed: |a, b| a.sessions != b.sessions || a.fanout != b.fanout,
        all_ours: true,
    },
    KindEntry {
        kind: Kind::Codex,
        make: |s, r| {
            Box::new(codex::CodexBackend::new(
                &s.codex,
                &s.project.name,
                r.clone(),
            ))
        },
        changed: |a, b| a.codex != b.codex,
        all_ours: false,
    },
    KindEntry {
        kind: Kind::Claude,
        make: |s, r| {
            Box::new(claude::ClaudeBackend::new(
                &s.claude,
                &s.project.name,
                r.clone(),
            ))
        },
        changed: |a, b| a.claude != b.claude,
        all_ours: false,
    },
    KindEntry {
        kind: Kind::Opencode,
        make: |s, r| {
            Box::new(opencode::OpencodeBackend::new(
                &s.opencode,
                &s.project.name,
                r.clone(),
            ))
        },
        changed: |a, b| a.opencode != b.opencode,
        all_ours: false,
    },
];

/// The entry of `kind`, if this build reaches it.
pub fn entry(kind: Kind) -> Option<&'static KindEntry> {
    KINDS.iter().find(|e| e.kind == kind)
}
