//! Every kind of agent session reveille can reach, behind one router: a
//! session id's kind (`core::session::Kind`) picks the backend, made from
//! the kinds' one list (`agents::KINDS`) when a session of its kind is
//! first reached, so a project that never names one costs nothing for it.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::Settings;
use crate::core::effect::{Delivery, Spawn};
use crate::core::input::{Input, Reached, Undeliverable};
use crate::core::session::Kind;
use crate::shell::agents;
use crate::shell::backend::{undeliverable, Backend, Reports};

/// The backends of one daemon.
pub struct Backends {
    /// The backends made so far, by kind.
    made: BTreeMap<Kind, Box<dyn Backend>>,
    /// The sessions each of them was asked to follow (`observe`), so that
    /// each is asked once, however much work the session is given.
    observed: BTreeSet<String>,
    /// What they are made from (each kind's section, the project's name
    /// for the ids its prompts carry).
    settings: Settings,
    /// Whether the sessions root is a polled mount, as last told: a
    /// backend made later is told too.
    polled: bool,
    /// Where every backend reports.
    pub reports: Reports,
}

impl Backends {
    pub fn new(settings: &Settings, reports: Reports) -> Backends {
        Backends {
            made: BTreeMap::new(),
            observed: BTreeSet::new(),
            settings: settings.clone(),
            polled: false,
            reports,
        }
    }

    /// New settings (a reload): the backends are made again where their
    /// section changed (all of them when the project's name did).
    pub fn reconfigure(&mut self, settings: &Settings) {
        let old = &self.settings;
        let changed = |kind: &Kind| {
            old.project.name != settings.project.name
                || agents::entry(*kind).is_some_and(|e| (e.changed)(old, settings))
        };
        self.made.retain(|kind, _| !changed(kind));
        // A backend made again follows nothing yet.
        let made = &self.made;
        self.observed
            .retain(|session| made.contains_key(&Kind::of(session).0));
        self.settings = settings.clone();
    }

    /// Tell every backend whether the sessions root is a polled mount
    /// (`Backend::root_polled`), when that changed.
    pub fn root_polled(&mut self, polled: bool) {
        if polled != self.polled {
            self.polled = polled;
            for backend in self.made.values_mut() {
                backend.root_polled(polled);
            }
        }
    }

    /// The backend that reaches `session`, made now if it is the first of
    /// its kind, or why there is none.
    fn of(&mut self, session: &str) -> Result<&mut dyn Backend, Undeliverable> {
        let kind = Kind::of(session).0;
        if !self.made.contains_key(&kind) {
            let entry = agents::entry(kind).ok_or_else(|| {
                undeliverable(format!(
                    "{} sessions cannot be reached by this build",
                    kind.name()
                ))
            })?;
            let mut made = (entry.make)(&self.settings, &self.reports);
            made.root_polled(self.polled);
            self.made.insert(kind, made);
        }
        Ok(self.made.get_mut(&kind).expect("made above").as_mut())
    }

    /// Deliver `d` through its session's backend (see `Backend::deliver`).
    pub fn deliver(&mut self, d: &Delivery) -> Option<Result<Reached, Undeliverable>> {
        match self.of(&d.session) {
            Ok(backend) => backend.deliver(d),
            Err(why) => Some(Err(why)),
        }
    }

    /// Look for `d`, written already, in its agent's record (see
    /// `Backend::look`).
    pub fn look(&mut self, d: &Delivery) -> Option<Input> {
        match self.of(&d.session) {
            Ok(backend) => backend.look(d),
            Err(why) => Some(Input::Undeliverable {
                session: d.session.clone(),
                seq: d.seq,
                why,
            }),
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

    /// Follow `session`'s state (see `Backend::observe`), once per
    /// backend; one no backend of this build reaches is left alone.
    pub fn observe(&mut self, session: &str) {
        if self.observed.contains(session) {
            return;
        }
        if let Ok(backend) = self.of(session) {
            backend.observe(session);
            self.observed.insert(session.to_string());
        }
    }

    /// Kill a child reveille made.
    pub fn reap(&mut self, child: &str) {
        if let Ok(backend) = self.of(child) {
            backend.reap(child);
        }
    }
}
