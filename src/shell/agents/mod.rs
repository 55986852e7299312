//! The agent programs people run — Claude Code, Codex, opencode — each
//! reached through its own proper way in (the process that owns the
//! session, its own queue, its own signals), one module per program, each
//! a [`crate::shell::backend::Backend`] that the daemon routes qualified
//! session ids (`claude:<id>`, `codex:<thread>`, `opencode:<id>`) to:
//! `claude` through the session's messaging socket, `codex` through the
//! app-server that owns the thread, `opencode` through the server that
//! owns the session.

pub mod claude;
pub mod codex;
pub mod opencode;
pub mod presence;
pub mod remote;
