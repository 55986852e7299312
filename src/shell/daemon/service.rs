//! The daemon as a service: its clock origin, what it tells systemd and
//! the person, and the reloads it answered.

use tokio::time::Instant;

use crate::shell::notices::Notices;
use crate::shell::systemd::Notifier;

use super::reload::Reloads;

/// The daemon as a service: when it started (the engine's clock origin),
/// what it told systemd and the person, and the reloads it answered.
pub(super) struct Service {
    /// The engine's clock origin.
    pub(super) started: Instant,
    pub(super) notifier: Notifier,
    /// Tells the person (`[notify]`), in the background.
    pub(super) notices: Notices,
    /// The last STATUS= sent, so it is only sent on change.
    pub(super) status: String,
    /// What that STATUS= was made of.
    pub(super) status_key: [usize; 6],
    /// The reloads answered, and a refusal still in force.
    pub(super) reloads: Reloads,
}

impl Service {
    pub(super) fn new(started: Instant) -> Service {
        Service {
            started,
            notifier: Notifier::from_env(),
            notices: Default::default(),
            status: String::new(),
            status_key: [usize::MAX; 6],
            reloads: Default::default(),
        }
    }
}
