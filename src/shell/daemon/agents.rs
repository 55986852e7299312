//! The sessions side of the daemon: every kind's backend, the deliveries
//! still finishing in the background, the ollie-9p tree's `idx` worker
//! (`agents::ollie`), and this instance's claim on its sessions
//! directory's checklists.

use tokio::sync::mpsc;

use crate::config::Settings;
use crate::shell::agents::ollie::follow::Follower;
use crate::shell::agents::ollie::poll::TreeNews;
use crate::shell::backend::Reports;
use crate::shell::backends::Backends;
use crate::shell::checklists::Claim;

/// What reaches and follows the sessions.
pub(super) struct Agents {
    /// Every kind of session reveille reaches.
    pub(super) backends: Backends,
    /// Deliveries finishing in the background (partial pipe writes, regular
    /// and 9P files, Submits); a stop waits briefly for them.
    pub(super) background: usize,
    /// The worker reading the ollie-9p session tree's `idx` (session
    /// states, and the session checklists to read), on a thread of its own.
    pub(super) tree: Follower,
    /// This instance's claim on the session checklists of its sessions
    /// directory (held for the daemon's life), when it wants them.
    pub(super) checklists: Option<Claim>,
}

impl Agents {
    /// The backends as the settings say, no worker started yet; and the
    /// receiver of the tree worker's news.
    pub(super) fn new(
        settings: &Settings,
        reports: Reports,
        checklists: Option<Claim>,
    ) -> (Agents, mpsc::UnboundedReceiver<TreeNews>) {
        let (tree, news) = Follower::new();
        let agents = Agents {
            backends: Backends::new(settings, reports),
            background: 0,
            tree,
            checklists,
        };
        (agents, news)
    }
}
