//! What is known of one session's state: the value the engine's one
//! owner of sessions (`sessions.rs`) keeps per session and the parts that
//! decide on it (lanes, reminders, children, the ledger) read. Its own
//! module so that those parts need not import the owner itself.

use super::config::Now;
use crate::core::input::Observer;
use crate::core::session::AgentState;

/// A session's observed state: since when it is in it, and the newest look
/// that saw it (engine time, and who looked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub state: AgentState,
    pub since: Now,
    /// The newest look, by `by`.
    pub at: Now,
    pub by: Observer,
}

/// A session last seen gone or unreachable: why, in words, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absent {
    /// Unreachable (its program), rather than gone.
    pub unreachable: bool,
    pub why: String,
    pub at: Now,
    pub by: Observer,
}
