//! Every kind of agent session reveille can reach, behind one router: a
//! session id's kind (`core::session::Kind`) picks the backend. Directory
//! sessions (named pipes, files, ollie-9p) are always there; the agent
//! programs' backends are made when a session of their kind is first
//! delivered to, so a project that never names one costs nothing for it.

use crate::core::effect::{Delivery, Spawn};
use crate::core::input::{Input, Reached, Undeliverable};
use crate::core::session::Kind;
use crate::shell::backend::{Backend, Reports};
use crate::shell::deliver::Deliverer;

/// The backends of one daemon.
pub struct Backends {
    /// `<sessions.dir>/<id>/`: named pipes, files, ollie-9p sessions.
    pub dir: Deliverer,
    /// Where every backend reports.
    pub reports: Reports,
}

impl Backends {
    /// The backend that reaches `session`, or why there is none.
    fn of(&mut self, session: &str) -> Result<&mut dyn Backend, Undeliverable> {
        match Kind::of(session).0 {
            Kind::Dir => Ok(&mut self.dir),
            kind => Err(Undeliverable {
                reason: format!("{} sessions cannot be reached by this build", kind.name()),
            }),
        }
    }

    /// Deliver `d` through its session's backend (see `Backend::deliver`).
    pub fn deliver(&mut self, d: &Delivery) -> Option<Result<Reached, Undeliverable>> {
        match self.of(&d.session) {
            Ok(backend) => backend.deliver(d),
            Err(why) => Some(Err(why)),
        }
    }

    /// Create a child of the kind of its parent.
    pub fn spawn(&mut self, spawn: &Spawn) -> Option<Input> {
        match self.of(&spawn.parent) {
            Ok(backend) => backend.spawn(spawn),
            Err(why) => Some(Input::ChildSpawned {
                child: spawn.child.clone(),
                outcome: Err(why.reason),
            }),
        }
    }

    /// Kill a child reveille made.
    pub fn reap(&mut self, child: &str) {
        if let Ok(backend) = self.of(child) {
            backend.reap(child);
        }
    }
}
