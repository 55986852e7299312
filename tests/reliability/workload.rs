//! A model of the world the reliability tests drive: plans (stock
//! sequential ones and DAGs), their steps being checked, their renames
//! `__todo` → `__wip` → `__done`, and tracker tasks entering and leaving a
//! mount's ready set. The model knows, at every moment, what is ready, so
//! the prompts the readers recorded can be judged: what should have been
//! announced, and whether anything was announced early.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use super::setup::{ready_file, Rng};
use crate::util::fifo::Receipt;
use crate::util::plans::{task_complete, write_atomic, write_in_place};
use crate::util::project::Project;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Todo,
    Wip,
    Done,
}

impl State {
    fn suffix(self) -> &'static str {
        match self {
            State::Todo => "todo",
            State::Wip => "wip",
            State::Done => "done",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Step {
    pub title: String,
    /// Indices of the steps it waits for.
    pub deps: Vec<usize>,
    /// When the model checked it (set before the file is written).
    pub checked_at: Option<Instant>,
}

#[derive(Debug, Clone)]
pub struct Plan {
    /// `<stamp>_<uid>`, the plan's identity.
    pub id: String,
    pub n: usize,
    pub state: State,
    /// The session of its `<!-- session: -->` comment; `None` routes to the
    /// default session.
    pub session: Option<String>,
    /// Dependencies written as `(after: …)`; otherwise the stock sequential
    /// reading (each step after the one before).
    pub annotated: bool,
    pub steps: Vec<Step>,
    /// Its file was deleted.
    pub gone: bool,
}

impl Plan {
    pub fn file_name(&self) -> String {
        format!("{}--goal-{}__{}.md", self.id, self.n, self.state.suffix())
    }

    pub fn live(&self) -> bool {
        self.state != State::Done
    }

    pub fn ready(&self) -> Vec<usize> {
        (0..self.steps.len())
            .filter(|&i| {
                self.steps[i].checked_at.is_none()
                    && self.steps[i]
                        .deps
                        .iter()
                        .all(|&d| self.steps[d].checked_at.is_some())
            })
            .collect()
    }

    pub fn all_checked(&self) -> bool {
        self.steps.iter().all(|s| s.checked_at.is_some())
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(s) = &self.session {
            out.push_str(&format!("<!-- session: {s} -->\n"));
        }
        out.push_str(&format!("# goal {}\n\n", self.n));
        for (i, s) in self.steps.iter().enumerate() {
            let mark = if s.checked_at.is_some() { "x" } else { " " };
            let after = if !self.annotated {
                String::new()
            } else if s.deps.is_empty() {
                " (after: none)".to_string()
            } else {
                let ids: Vec<String> = s.deps.iter().map(|d| format!("{}", d + 1)).collect();
                format!(" (after: {})", ids.join(", "))
            };
            out.push_str(&format!("- [{mark}] {}{after}\n", s.title));
            out.push_str(&format!("  does thing {} of goal {}\n", i + 1, self.n));
        }
        out
    }
}

#[derive(Debug, Clone)]
pub struct Task {
    pub id: String,
    pub closed: bool,
}

/// What a prompt was about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key {
    Step(String),
    Done(String),
    Task(String),
}

/// The world: every plan and task the test made.
pub struct World {
    pub plans: Vec<Plan>,
    pub tasks: Vec<Task>,
    /// Sessions plans may name; plans without one and tasks go to
    /// `default_session`.
    pub sessions: Vec<String>,
    pub default_session: String,
    pub plan_dir: PathBuf,
    /// Start of the plan numbering (different worlds in one proj never clash).
    pub base: usize,
}

impl World {
    pub fn new(proj: &Project, sessions: &[&str], default_session: &str) -> World {
        World {
            plans: Vec::new(),
            tasks: Vec::new(),
            sessions: sessions.iter().map(|s| s.to_string()).collect(),
            default_session: default_session.to_string(),
            plan_dir: proj.plan_dir.clone(),
            base: 0,
        }
    }

    fn path(&self, p: &Plan) -> PathBuf {
        self.plan_dir.join(p.file_name())
    }

    /// The session a plan's prompts go to.
    pub fn session_of(&self, p: &Plan) -> String {
        p.session
            .clone()
            .unwrap_or_else(|| self.default_session.clone())
    }

    /// A new plan of 3..=6 steps: stock sequential or a DAG, written whole
    /// or renamed into place.
    pub fn new_plan(&mut self, rng: &mut Rng) -> usize {
        let n = self.base + self.plans.len() + 1;
        let secs = n % 86_400;
        let id = format!(
            "20250101T{:02}{:02}{:02}_{:08x}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            (n as u64).wrapping_mul(2_654_435_761) & 0xffff_ffff
        );
        let annotated = rng.chance(50);
        let count = 3 + rng.below(4) as usize;
        let steps = (0..count)
            .map(|i| Step {
                title: format!("p{n}-s{}", i + 1),
                deps: if annotated {
                    (0..i).filter(|_| rng.chance(35)).collect()
                } else if i == 0 {
                    vec![]
                } else {
                    vec![i - 1]
                },
                checked_at: None,
            })
            .collect();
        let pick = rng.below(self.sessions.len() as u64 + 1) as usize;
        let plan = Plan {
            id,
            n,
            state: if rng.chance(70) {
                State::Todo
            } else {
                State::Wip
            },
            session: self.sessions.get(pick).cloned(),
            annotated,
            steps,
            gone: false,
        };
        let path = self.path(&plan);
        if rng.chance(50) {
            write_in_place(&path, plan.render().as_bytes());
        } else {
            write_atomic(&path, &plan.render());
        }
        self.plans.push(plan);
        self.plans.len() - 1
    }

    /// `task_complete`: check the first ready step of a live plan, in
    /// place. Returns false when no live plan has a ready step.
    pub fn check_step(&mut self, rng: &mut Rng) -> bool {
        let candidates: Vec<usize> = (0..self.plans.len())
            .filter(|&i| self.plans[i].live() && !self.plans[i].ready().is_empty())
            .collect();
        if candidates.is_empty() {
            return false;
        }
        let i = candidates[rng.below(candidates.len() as u64) as usize];
        let ready = self.plans[i].ready();
        let s = ready[rng.below(ready.len() as u64) as usize];
        self.plans[i].steps[s].checked_at = Some(Instant::now());
        let path = self.path(&self.plans[i]);
        task_complete(&path, &self.plans[i].steps[s].title);
        true
    }

    /// Move a plan along: `__todo` → `__wip`, or `__wip` → `__done` once
    /// every step is checked.
    pub fn rename(&mut self, rng: &mut Rng) -> bool {
        let candidates: Vec<usize> = (0..self.plans.len())
            .filter(|&i| {
                let p = &self.plans[i];
                p.state == State::Todo || (p.state == State::Wip && p.all_checked())
            })
            .collect();
        if candidates.is_empty() {
            return false;
        }
        let i = candidates[rng.below(candidates.len() as u64) as usize];
        let from = self.path(&self.plans[i]);
        self.plans[i].state = match self.plans[i].state {
            State::Todo => State::Wip,
            _ => State::Done,
        };
        let to = self.path(&self.plans[i]);
        std::fs::rename(from, to).unwrap();
        true
    }

    fn write_ready(&self, proj: &Project) {
        let mut text = String::new();
        for t in self.tasks.iter().filter(|t| !t.closed) {
            text.push_str(&format!(
                "{}\topen\t0\t-\t2025-01-01T00:00:00Z\ttask {}\n",
                t.id, t.id
            ));
        }
        write_atomic(&ready_file(proj, &proj.name()), &text);
    }

    /// Delete a plan file: a done one (archived), or now and then a live
    /// one (superseded: deletion counts as abandoned).
    pub fn delete_plan(&mut self, rng: &mut Rng) -> bool {
        let candidates: Vec<usize> = (0..self.plans.len())
            .filter(|&i| !self.plans[i].gone && (!self.plans[i].live() || rng.chance(5)))
            .collect();
        if candidates.is_empty() {
            return false;
        }
        let i = candidates[rng.below(candidates.len() as u64) as usize];
        std::fs::remove_file(self.path(&self.plans[i])).unwrap();
        self.plans[i].state = State::Done;
        self.plans[i].gone = true;
        true
    }

    /// A tracker task enters the ready set: the ready file is rewritten,
    /// then a `created` event is appended.
    pub fn add_task(&mut self, proj: &Project) {
        let id = format!("bd-{}", self.base + self.tasks.len() + 1);
        self.tasks.push(Task {
            id: id.clone(),
            closed: false,
        });
        self.write_ready(proj);
        proj.append_events(
            (format!(
                r#"{{"type":"created","id":"{id}","mount":"{}"}}"#,
                proj.name()
            ) + "\n")
                .as_bytes(),
        );
    }

    /// A tracker task is completed: it leaves the ready file, then a
    /// `completed` event is appended.
    pub fn complete_task(&mut self, proj: &Project, rng: &mut Rng) -> bool {
        let open: Vec<usize> = (0..self.tasks.len())
            .filter(|&i| !self.tasks[i].closed)
            .collect();
        if open.is_empty() {
            return false;
        }
        let i = open[rng.below(open.len() as u64) as usize];
        self.tasks[i].closed = true;
        self.write_ready(proj);
        proj.append_events(
            (format!(
                r#"{{"type":"completed","id":"{}","mount":"{}"}}"#,
                self.tasks[i].id,
                proj.name()
            ) + "\n")
                .as_bytes(),
        );
        true
    }

    /// One random step of activity.
    pub fn act(&mut self, proj: &Project, rng: &mut Rng) {
        let live = self.plans.iter().filter(|p| p.live()).count();
        let open_tasks = self.tasks.iter().filter(|t| !t.closed).count();
        match rng.below(100) {
            0..=19 if live < 8 => {
                self.new_plan(rng);
            }
            20..=29 => {
                if !self.rename(rng) {
                    self.check_step(rng);
                }
            }
            30..=44 if open_tasks < 6 => self.add_task(proj),
            45..=54 => {
                if !self.complete_task(proj, rng) {
                    self.add_task(proj);
                }
            }
            // Bounded: at most 8 live plans, so a long run reaches a
            // steady state instead of a growing plan directory.
            _ => {
                if !self.check_step(rng) && !self.rename(rng) && live < 8 {
                    self.new_plan(rng);
                }
            }
        }
    }

    /// What must have been announced by now: the ready steps of live
    /// plans, the all-done nudge of fully checked wip plans, the open tasks
    /// — each with the session it goes to.
    pub fn expected(&self) -> BTreeMap<Key, String> {
        let mut out = BTreeMap::new();
        for p in self.plans.iter().filter(|p| p.live()) {
            let session = self.session_of(p);
            for i in p.ready() {
                out.insert(Key::Step(p.steps[i].title.clone()), session.clone());
            }
            if p.state == State::Wip && p.all_checked() {
                out.insert(Key::Done(p.id.clone()), session.clone());
            }
        }
        for t in self.tasks.iter().filter(|t| !t.closed) {
            out.insert(Key::Task(t.id.clone()), self.default_session.clone());
        }
        out
    }

    /// The plan and step a step title names.
    fn step(&self, title: &str) -> Option<(&Plan, usize)> {
        let (p, s) = title.strip_prefix('p')?.split_once("-s")?;
        let plan = self.plans.get(p.parse::<usize>().ok()? - 1 - self.base)?;
        let i = s.parse::<usize>().ok()? - 1;
        (i < plan.steps.len()).then_some((plan, i))
    }

    /// Judge one received prompt: what it is about, and an error if it
    /// went to the wrong session or came before its step was ready.
    pub fn judge(&self, session: &str, r: &Receipt) -> Result<Key, String> {
        let words: Vec<&str> = r.text.split(' ').collect();
        let (key, to) = match words[..] {
            ["STEP", named, plan, _label, title] => {
                if named != session {
                    return Err(format!("{:?} read from {session}'s FIFO", r.text));
                }
                let (p, i) = self
                    .step(title)
                    .ok_or_else(|| format!("prompt for an unknown step: {:?}", r.text))?;
                if plan != format!("plan:{}", p.id) {
                    return Err(format!("wrong plan in {:?}", r.text));
                }
                for &d in &p.steps[i].deps {
                    if p.steps[d].checked_at.is_none_or(|at| at > r.at) {
                        return Err(format!(
                            "EARLY: {title} announced before its dependency {} was checked",
                            p.steps[d].title
                        ));
                    }
                }
                (Key::Step(title.to_string()), self.session_of(p))
            }
            ["DONE", _, plan] => {
                let id = plan.strip_prefix("plan:").unwrap_or(plan);
                let p = self
                    .plans
                    .iter()
                    .find(|p| p.id == id)
                    .ok_or_else(|| format!("done nudge for an unknown plan: {:?}", r.text))?;
                if p.steps
                    .iter()
                    .any(|s| s.checked_at.is_none_or(|at| at > r.at))
                {
                    return Err(format!(
                        "EARLY: done nudge for {id} before every step was checked"
                    ));
                }
                (Key::Done(id.to_string()), self.session_of(p))
            }
            ["[reveille]", "Task", id, ..] => {
                if !self.tasks.iter().any(|t| t.id == id) {
                    return Err(format!("prompt for an unknown task: {:?}", r.text));
                }
                (Key::Task(id.to_string()), self.default_session.clone())
            }
            _ => return Err(format!("unexpected prompt: {:?}", r.text)),
        };
        if to != session {
            return Err(format!("{key:?} went to {session}, not {to}"));
        }
        Ok(key)
    }
}

/// Every prompt, judged and grouped by what it was about.
pub struct Tally {
    /// Per key, the receipts in the order they were read.
    pub by_key: BTreeMap<Key, Vec<Receipt>>,
    pub errors: Vec<String>,
    pub total: usize,
}

impl Tally {
    /// Within one daemon run: no error, nothing missing, nothing repeated.
    pub fn assert_exact(&self, world: &World) {
        assert!(self.errors.is_empty(), "{:#?}", self.errors);
        assert_eq!(self.missing(world), Vec::<Key>::new());
        assert!(
            self.duplicates().is_empty(),
            "repeated without a crash: {:?}",
            self.duplicates().keys().collect::<Vec<_>>()
        );
    }

    pub fn of(world: &World, received: &[(String, Vec<Receipt>)]) -> Tally {
        let mut by_key: BTreeMap<Key, Vec<Receipt>> = BTreeMap::new();
        let mut errors = Vec::new();
        let mut total = 0;
        for (session, receipts) in received {
            for r in receipts {
                total += 1;
                match world.judge(session, r) {
                    Ok(key) => by_key.entry(key).or_default().push(r.clone()),
                    Err(e) => errors.push(e),
                }
            }
        }
        Tally {
            by_key,
            errors,
            total,
        }
    }

    /// Expected keys with no receipt.
    pub fn missing(&self, world: &World) -> Vec<Key> {
        world
            .expected()
            .into_keys()
            .filter(|k| !self.by_key.contains_key(k))
            .collect()
    }

    /// Keys received more than once.
    pub fn duplicates(&self) -> BTreeMap<&Key, &Vec<Receipt>> {
        self.by_key.iter().filter(|(_, v)| v.len() > 1).collect()
    }
}
