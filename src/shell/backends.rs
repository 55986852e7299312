//! Every kind of agent session reveille can reach, behind one router: a
//! session id's kind (`core::session::Kind`) picks the backend. Directory
//! sessions (named pipes, files, ollie-9p) are always there; the agent
//! programs' backends are made when a session of their kind is first
//! delivered to, so a project that never names one costs nothing for it.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::Settings;
use crate::core::effect::{Delivery, Spawn};
use crate::core::input::{Input, Reached, Undeliverable};
use crate::core::session::Kind;
use crate::shell::agents::claude::ClaudeBackend;
use crate::shell::agents::codex::CodexBackend;
use crate::shell::agents::opencode::OpencodeBackend;
use crate::shell::backend::{Backend, Reports};
use crate::shell::deliver::Deliverer;

/// The backends of one daemon.
pub struct Backends {
    /// `<sessions.dir>/<id>/`: named pipes, files, ollie-9p sessions.
    pub dir: Deliverer,
    /// The agent programs' backends made so far, by kind.
    agents: BTreeMap<Kind, Box<dyn Backend>>,
    /// The sessions each of them was asked to follow (`observe`), so that
    /// each is asked once, however much work the session is given.
    observed: BTreeSet<String>,
    /// What they are made from (`[codex]`, `[claude]`, `[opencode]`, the
    /// project's name for the ids its prompts carry).
    settings: Settings,
    /// Where every backend reports.
    pub reports: Reports,
}

impl Backends {
    pub fn new(dir: Deliverer, settings: &Settings, reports: Reports) -> Backends {
        Backends {
            dir,
            agents: BTreeMap::new(),
            observed: BTreeSet::new(),
            settings: settings.clone(),
            reports,
        }
    }

    /// New settings (a reload): the agent programs' backends are made
    /// again where their section changed.
    pub fn reconfigure(&mut self, dir: Deliverer, settings: &Settings) {
        self.dir = dir;
        let old = &self.settings;
        let changed = |kind: &Kind| match kind {
            Kind::Codex => old.codex != settings.codex,
            Kind::Claude => old.claude != settings.claude,
            Kind::Opencode => old.opencode != settings.opencode,
            Kind::Dir => false,
        } || old.project.name != settings.project.name;
        self.agents.retain(|kind, _| !changed(kind));
        // A backend made again follows nothing yet.
        let agents = &self.agents;
        self.observed
            .retain(|session| agents.contains_key(&Kind::of(session).0));
        self.settings = settings.clone();
    }

    /// The backend that reaches `session`, made now if it is the first of
    /// its kind, or why there is none.
    fn of(&mut self, session: &str) -> Result<&mut dyn Backend, Undeliverable> {
        let kind = Kind::of(session).0;
        if kind == Kind::Dir {
            return Ok(&mut self.dir);
        }
        if !self.agents.contains_key(&kind) {
            let made = make(kind, &self.settings, &self.reports)?;
            self.agents.insert(kind, made);
        }
        Ok(self.agents.get_mut(&kind).expect("made above").as_mut())
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
    /// backend; a directory session (its tree is read anyway) or one no
    /// backend of this build reaches is left alone.
    pub fn observe(&mut self, session: &str) {
        if Kind::of(session).0 == Kind::Dir || self.observed.contains(session) {
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

/// The backend of an agent program's sessions.
fn make(kind: Kind, s: &Settings, reports: &Reports) -> Result<Box<dyn Backend>, Undeliverable> {
    let project = &s.project.name;
    match kind {
        Kind::Codex => Ok(Box::new(CodexBackend::new(
            &s.codex,
            project,
            reports.clone(),
        ))),
        Kind::Claude => Ok(Box::new(ClaudeBackend::new(
            &s.claude,
            project,
            reports.clone(),
        ))),
        Kind::Opencode => Ok(Box::new(OpencodeBackend::new(
            &s.opencode,
            project,
            reports.clone(),
        ))),
        _ => Err(Undeliverable {
            reason: format!("{} sessions cannot be reached by this build", kind.name()),
        }),
    }
}
