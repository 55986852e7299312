//! `reveille status`: what the daemon knows, read from the state directory
//! and the plan files, without talking to the daemon (it may not be
//! running, and status must never disturb it: no lock is taken).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::engine_config;
use crate::config::Settings;
use crate::core::driver::{drive, World};
use crate::core::effect::{Delivery, Level, Log, Notice, Spawn};
use crate::core::engine::{Engine, EngineConfig, PlanView};
use crate::core::input::{FileRead, Input, MountTable, Reached, Undeliverable};
use crate::core::lifecycle::Lifecycle;
use crate::core::memory::{Announced, Memory};
use crate::core::name::{classify, diagnose};
use crate::core::plan::{parse_plan, Plan, PlanFormat};
use crate::core::ready_report::{one_line, StepRef};
use crate::core::record::{Cursor, Item, Note, Record, Work};
use crate::core::session::Kind;
use crate::shell::read::read_capped;
use crate::shell::reload_report;
use crate::shell::reminders;
use crate::shell::session_view;
use crate::shell::store::read_memory;
use crate::shell::watch::list_plans;

/// What the daemon knows, re-derived offline: its memory, and every plan
/// as it would read them now.
pub struct Known {
    /// The durable memory (empty before the first start).
    pub memory: Memory,
    /// Whether the first-start baseline was taken (false: never started).
    pub started_before: bool,
    /// Every plan, as the engine sees it.
    pub plans: Vec<PlanView>,
    /// The parsed content of each plan file read, to name announced steps
    /// by id and title (the memory keeps only their identity).
    pub parsed: BTreeMap<PathBuf, Plan>,
}

/// Reads the state directory and re-derives plans and ready steps exactly
/// as the daemon would, on a throw-away engine (nothing it decides is
/// written anywhere).
pub fn known(settings: &Settings) -> Result<Known, String> {
    let (memory, _) = read_memory(&settings.state.dir).map_err(|e| e.to_string())?;
    let started_before = memory.as_ref().is_some_and(|m| m.baselined());
    let memory = memory.unwrap_or_default();
    // Its throw-away engine announces nothing as a baseline.
    let mut started = memory.clone();
    started.apply(&Record::Baselined);
    let mut engine = Engine::new(engine_config(settings, Level::Error), Some(started));
    let mut look = Look {
        settings,
        parsed: BTreeMap::new(),
    };
    let paths = look.list();
    drive(
        &mut engine,
        &mut look,
        Default::default(),
        Input::Listed {
            paths,
            read_all: true,
        },
    );
    let parsed = look.parsed;
    Ok(Known {
        memory,
        started_before,
        plans: engine.plans(),
        parsed,
    })
}

/// The world of `status`: it reads plan files and changes nothing — no
/// record is written, no prompt delivered (a delivery is left "in the
/// background" forever), no log emitted. It keeps each plan it read,
/// parsed, to name announced steps by id and title.
struct Look<'a> {
    settings: &'a Settings,
    parsed: BTreeMap<PathBuf, Plan>,
}

impl World for Look<'_> {
    fn record(&mut self, _: &Record) {}
    fn log(&mut self, _: Log) {}
    fn read_plan(&mut self, path: &Path, config: &EngineConfig) -> (FileRead, bool) {
        let cap = config.max_plan_bytes;
        let read = read_capped(path, cap);
        if let Some(plan) = parse_read(path, &read, cap) {
            self.parsed.insert(path.to_path_buf(), plan);
        }
        (read, false)
    }
    fn list(&mut self) -> Vec<PathBuf> {
        list_plans(
            &self.settings.project.plan_dir,
            &self.settings.sessions.dir,
            self.settings.sessions.session_plans,
        )
    }
    fn read_mount(&mut self, _: &str) -> (FileRead, bool) {
        (FileRead::Missing, false)
    }
    fn read_mount_list(&mut self, _: &str) -> FileRead {
        FileRead::Missing
    }
    fn read_mount_table(&mut self) -> MountTable {
        MountTable::Missing
    }
    fn read_beads(&mut self) -> Option<(FileRead, i64)> {
        None
    }
    fn spawn(&mut self, _: &Spawn) -> Option<Input> {
        None
    }
    fn reap(&mut self, _: &str) {}
    /// `status` only looks: it tells no one.
    fn notify(&mut self, _: &Notice) {}
    fn deliver(&mut self, _: &Delivery) -> Option<Result<Reached, Undeliverable>> {
        None
    }
    fn look(&mut self, _: &Delivery) -> Option<Input> {
        None
    }
}

/// A plan file's content, parsed as its name calls for (session plans,
/// named `plan`, are markdown).
fn parse_read(path: &Path, read: &FileRead, cap: usize) -> Option<Plan> {
    let FileRead::Bytes(bytes) = read else {
        return None;
    };
    let name = path.file_name()?.to_string_lossy();
    let format = classify(&name).map_or(PlanFormat::Markdown, |f| f.format());
    parse_plan(format, bytes, cap).ok()
}

/// One pending prompt.
#[derive(Debug, Serialize)]
pub struct PendingView {
    pub seq: u64,
    pub step: String,
    /// The plan file name (when it was announced) or tracker source.
    pub plan: String,
    /// The source the prompt is about (`plan:<stamp>_<uid>`, `9beads:<dir>`,
    /// …): what a plan's `source` is, so a pending step is found under its
    /// plan after a rename.
    pub source: String,
}

/// A step or task the daemon announced and that is still open.
#[derive(Debug, Serialize)]
pub struct AnnouncedView {
    /// `sN` / `tN` for plan steps, the task id for tracker tasks; for a
    /// step no longer in the file, its remembered title.
    pub id: String,
    /// The title, when the file still has the step.
    pub title: Option<String>,
    /// The session it was announced to.
    pub session: Option<String>,
    /// Recorded at the first start as already ready, never prompted.
    pub baseline: bool,
}

/// A file in the plan directory the daemon ignores because of its name.
#[derive(Debug, Serialize)]
pub struct IgnoredView {
    pub file: String,
    /// The naming rule it breaks.
    pub rule: String,
}

/// A child session reveille made for one step (fan-out).
#[derive(Debug, Serialize)]
pub struct ChildView {
    pub id: String,
    /// The session of the plan, which fanned the step out.
    pub parent: String,
    /// The plan's identity and file.
    pub plan: String,
    pub file: String,
    /// The step it works on (`s2`).
    pub step: String,
    /// `planned` (asked for, not yet seen), `working`, `done` (its step is
    /// checked; killed once idle unless kept), `handed back`.
    pub state: &'static str,
    /// Seconds since it was seen to exist.
    pub age_s: Option<u64>,
}

fn children(memory: &Memory) -> Vec<ChildView> {
    let now_ms = crate::shell::wall::unix_ms();
    memory
        .children
        .iter()
        .map(|(id, c)| ChildView {
            id: id.clone(),
            parent: c.parent.clone(),
            plan: c.source.to_string(),
            file: c.plan.clone(),
            step: c.step.clone(),
            state: c.state.as_str(),
            age_s: c.since_unix_ms.map(|t| now_ms.saturating_sub(t) / 1000),
        })
        .collect()
}

fn render_children(out: &mut String, s: &Status) {
    for c in &s.children {
        let age = c
            .age_s
            .map_or_else(|| "not seen yet".to_string(), |a| format!("{a}s old"));
        out.push_str(&format!(
            "child   {}: {} of {}, parent {}, {}, {age}\n",
            c.id, c.step, c.file, c.parent, c.state
        ));
    }
}

/// Everything `status` shows.
#[derive(Debug, Serialize)]
pub struct Status {
    pub project: String,
    /// The pid of the running daemon, if one is running.
    pub running: Option<u32>,
    pub state_dir: String,
    /// Whether the first-start baseline was taken (false: never started).
    pub started_before: bool,
    pub plans: Vec<PlanStatus>,
    /// Plan-like files in the plan directory whose names break the rule.
    pub ignored: Vec<IgnoredView>,
    /// Per session, prompts waiting to be delivered, in order.
    pub outbox: BTreeMap<String, Vec<PendingView>>,
    /// `sessions.outbox_cap`: a session with this many pending prompts is
    /// full, and new wake-ups for it wait, unannounced, until it drains.
    pub outbox_cap: usize,
    /// Sessions whose outbox is full.
    pub outbox_full: Vec<String>,
    /// Tracker sources (mounts, beads): announced tasks.
    pub tasks: BTreeMap<String, Vec<AnnouncedView>>,
    /// The tracker event log position.
    pub events: Option<Cursor>,
    /// Open announced steps and tasks, their sessions' states and
    /// reminders, as the running daemon last wrote them.
    pub reminders: Vec<reminders::OpenItem>,
    /// Child sessions made for parallel steps (fan-out).
    pub children: Vec<ChildView>,
    /// Every session reveille knows of: its observed state, what is
    /// pending for it, and what was delivered to it and is still open.
    pub sessions: Vec<SessionView>,
    /// The running daemon's answer to its last reload (`reload.json`):
    /// a refused one means it runs the previous configuration.
    pub reload: Option<reload_report::Report>,
}

/// One session as `status` shows it.
#[derive(Debug, Serialize)]
pub struct SessionView {
    pub id: String,
    /// `dir` (a pipe, a file, an ollie-9p session), `codex`, `claude`,
    /// `opencode`.
    pub kind: String,
    /// `idle`, `thinking`, `calling: <tool>`, …; `None` for sessions with
    /// no observable state (named pipes, plain files) or not listed now.
    pub state: Option<String>,
    /// When the daemon saw it enter that state (unix milliseconds).
    pub since_unix_ms: Option<u64>,
    /// What it waits for a person for, when it does: `approval`,
    /// `question` (`state` says what is asked).
    pub waiting: Option<String>,

    /// Why it has no state: unreachable (with the address and the error)
    /// or gone, as the daemon last saw it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub absent: Option<String>,
    /// The last prompt it was given and how that went (while the daemon
    /// runs: `sessions.json`).
    pub last_delivery: Option<session_view::ToldFile>,
    /// A prompt handed to it whose outcome has not come back (`unsure`:
    /// whether it took it could not be told).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<session_view::InFlightFile>,
    /// Prompts waiting in its outbox, by step or task id.
    pub pending: Vec<String>,
    /// Steps and tasks delivered to it and not yet checked or closed.
    pub open: Vec<String>,
}

/// The sessions view: `sessions.json` (states, written by the daemon when
/// they change) joined with the memory's outboxes and announced items.
fn sessions_view(dir: &Path, memory: &Memory, k: &Known) -> Vec<SessionView> {
    let observed = session_view::read(dir);
    let mut views: BTreeMap<String, SessionView> = BTreeMap::new();
    fn view<'a>(
        views: &'a mut BTreeMap<String, SessionView>,
        observed: &BTreeMap<String, session_view::SessionFile>,
        id: &str,
    ) -> &'a mut SessionView {
        let seen = observed.get(id);
        views.entry(id.to_string()).or_insert_with(|| SessionView {
            id: id.to_string(),
            kind: Kind::of(id).0.name().to_string(),
            state: seen.and_then(|o| o.state.clone()),
            since_unix_ms: seen.and_then(|o| o.since),
            waiting: seen.and_then(|o| o.waiting.clone()),
            absent: seen.and_then(|o| o.absent.clone()),
            last_delivery: seen.and_then(|o| o.told.clone()),
            in_flight: seen.and_then(|o| o.in_flight.clone()),
            pending: Vec::new(),
            open: Vec::new(),
        })
    }
    for id in observed.keys() {
        view(&mut views, &observed, id);
    }
    for (session, queue) in &memory.outbox {
        view(&mut views, &observed, session).pending =
            queue.iter().map(|p| p.step.clone()).collect();
    }
    for (source, items) in memory.announced() {
        let plan = k
            .plans
            .iter()
            .find(|p| &p.source == source)
            .and_then(|p| k.parsed.get(&p.path));
        for (item, a) in items {
            let (Some(session), false) = (&a.session, a.baseline) else {
                continue;
            };
            let pending = memory
                .outbox
                .get(session)
                .is_some_and(|q| q.iter().any(|p| &p.source == source && &p.item == item));
            if !pending && item.work().is_some() {
                let id = announced_view(item, a, plan).id;
                view(&mut views, &observed, session).open.push(id);
            }
        }
    }
    views.into_values().collect()
}

/// One plan.
#[derive(Debug, Serialize)]
pub struct PlanStatus {
    pub source: String,
    pub path: PathBuf,
    pub lifecycle: Lifecycle,
    pub goal: String,
    pub session: Option<String>,
    /// Why the plan is invalid, if it is.
    pub error: Option<String>,
    pub steps: usize,
    pub checked: usize,
    /// Ready steps, in file order.
    pub ready: Vec<StepRef>,
    /// Announced steps still unchecked.
    pub announced: Vec<AnnouncedView>,
}

/// The pid of the daemon holding the state directory's lock, if it is
/// still a running reveille.
pub fn running_pid(dir: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(dir.join("lock"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    String::from_utf8_lossy(&cmdline)
        .contains("reveille")
        .then_some(pid)
}

/// An announced item, named by the plan's step when `plan` has it.
fn announced_view(item: &Item, a: &Announced, plan: Option<&Plan>) -> AnnouncedView {
    let step = match item {
        Item::Work(Work::Step(key)) => plan.and_then(|p| p.steps.iter().find(|s| &s.key == key)),
        _ => None,
    };
    let mut id = step.map_or_else(|| item.label().to_string(), |s| s.label.clone());
    // Tracker notes share their task's id: say which note it is.
    match item {
        Item::Note(Note::Claim(_, who)) => id.push_str(&format!(" (claim by {who} told)")),
        Item::Note(Note::Completed(_)) => id.push_str(" (completion told)"),
        Item::Work(Work::Claimed(_)) => id.push_str(" (claimed, open)"),
        Item::Note(Note::Held(..)) => id.push_str(&format!(
            " (left the ready set; held by {})",
            a.session.as_deref().unwrap_or("-")
        )),
        _ => {}
    }
    AnnouncedView {
        id,
        title: step.map(|s| s.title.clone()),
        session: a.session.clone(),
        baseline: a.baseline,
    }
}

/// The plan-like files of `plan_dir` whose names break the rule.
pub fn ignored_names(plan_dir: &Path) -> Vec<IgnoredView> {
    let Ok(entries) = std::fs::read_dir(plan_dir) else {
        return Vec::new();
    };
    let mut out: Vec<IgnoredView> = entries
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let rule = diagnose(&file)?;
            Some(IgnoredView {
                file,
                rule: rule.to_string(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.file.cmp(&b.file));
    out
}

fn plan_status(plan: PlanView, k: &Known) -> PlanStatus {
    let parsed = k.parsed.get(&plan.path);
    let announced = k
        .memory
        .announced_of(&plan.source)
        .map(|items| {
            items
                .iter()
                .map(|(i, a)| announced_view(i, a, parsed))
                .collect()
        })
        .unwrap_or_default();
    PlanStatus {
        ready: plan
            .ready
            .iter()
            .map(|(id, title)| StepRef {
                id: id.clone(),
                title: title.clone(),
            })
            .collect(),
        source: plan.source.to_string(),
        path: plan.path,
        lifecycle: plan.lifecycle,
        goal: plan.goal,
        session: plan.session,
        error: plan.error,
        steps: plan.steps,
        checked: plan.checked,
        announced,
    }
}

/// Gather the status of the project `settings` describe.
pub fn gather(settings: &Settings) -> Result<Status, String> {
    let dir = &settings.state.dir;
    let k = known(settings)?;
    let memory = &k.memory;
    let outbox = memory
        .outbox
        .iter()
        .map(|(session, queue)| {
            let items = queue
                .iter()
                .map(|p| PendingView {
                    seq: p.seq,
                    step: p.step.clone(),
                    plan: p.plan.clone(),
                    source: p.source.to_string(),
                })
                .collect();
            (session.clone(), items)
        })
        .collect();
    let tasks = memory
        .tasks
        .iter()
        .map(|(source, items)| {
            let views = items
                .iter()
                .map(|(i, a)| announced_view(i, a, None))
                .collect();
            (source.to_string(), views)
        })
        .collect();
    let cap = settings.sessions.outbox_cap;
    let outbox_full = memory
        .outbox
        .iter()
        .filter(|(_, q)| q.len() >= cap)
        .map(|(s, _)| s.clone())
        .collect();
    Ok(Status {
        project: settings.project.name.clone(),
        outbox_cap: cap,
        outbox_full,
        running: running_pid(dir),
        state_dir: dir.display().to_string(),
        started_before: k.started_before,
        plans: k
            .plans
            .clone()
            .into_iter()
            .map(|p| plan_status(p, &k))
            .collect(),
        ignored: ignored_names(&settings.project.plan_dir),
        outbox,
        tasks,
        events: memory.cursor(),
        // Only a running daemon's view is current.
        reminders: match running_pid(dir) {
            Some(_) => reminders::read(dir),
            None => Vec::new(),
        },
        children: children(memory),
        sessions: sessions_view(dir, memory, &k),
        reload: running_pid(dir).and_then(|pid| reload_report::read(dir).filter(|r| r.pid == pid)),
    })
}

/// `s2<TAB>title`, or the bare id when the title is unknown, with the
/// baseline mark.
fn announced_line(a: &AnnouncedView) -> String {
    let mut s = match &a.title {
        Some(t) => format!("{}\t{}", a.id, one_line(t)),
        None => a.id.clone(),
    };
    if a.baseline {
        s.push_str(" (baseline)");
    }
    s
}

fn render_plan(out: &mut String, p: &PlanStatus) {
    let file = p
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.push_str(&format!(
        "  {} [{:?}] {}/{} checked, session {}: {}\n",
        file,
        p.lifecycle,
        p.checked,
        p.steps,
        p.session.as_deref().unwrap_or("-"),
        p.goal
    ));
    if let Some(e) = &p.error {
        out.push_str(&format!("    INVALID: {e}\n"));
    }
    for r in &p.ready {
        out.push_str(&format!("    ready     {}\t{}\n", r.id, one_line(&r.title)));
    }
    for a in &p.announced {
        out.push_str(&format!("    announced {}\n", announced_line(a)));
    }
}

fn render_outbox(out: &mut String, s: &Status) {
    if s.outbox.is_empty() {
        out.push_str("outbox  empty\n");
    }
    for (session, items) in &s.outbox {
        let full = if items.len() >= s.outbox_cap {
            format!(
                " FULL (outbox_cap = {}): new wake-ups for it wait, unannounced, until it drains",
                s.outbox_cap
            )
        } else {
            String::new()
        };
        let shown: Vec<&str> = items.iter().take(20).map(|p| p.step.as_str()).collect();
        let more = if items.len() > shown.len() {
            ", …"
        } else {
            ""
        };
        out.push_str(&format!(
            "outbox  {session}: {} pending ({}{more}){full}\n",
            items.len(),
            shown.join(", ")
        ));
    }
}

fn render_sessions(out: &mut String, s: &Status) {
    let now = crate::shell::wall::unix_ms();
    for v in &s.sessions {
        let state = match (&v.state, v.since_unix_ms) {
            (Some(st), Some(since)) => {
                format!("{st} for {}s", now.saturating_sub(since) / 1000)
            }
            (Some(st), None) => st.clone(),
            _ => match &v.absent {
                Some(why) => why.clone(),
                None => "state unknown".to_string(),
            },
        };
        let list = |ids: &[String]| {
            if ids.is_empty() {
                "-".to_string()
            } else {
                ids.join(", ")
            }
        };
        let told = match &v.last_delivery {
            Some(t) => format!(
                "; last told {}: {} {}s ago",
                t.step,
                t.outcome.replace('_', " "),
                now.saturating_sub(t.at) / 1000
            ),
            None => String::new(),
        };
        out.push_str(&format!(
            "session {} ({}): {state}{told}; pending {}; delivered, open {}\n",
            v.id,
            v.kind,
            list(&v.pending),
            list(&v.open)
        ));
    }
}

/// How many open announced steps and tasks are the first start's baseline.
fn baseline_count(s: &Status) -> usize {
    let plans = s.plans.iter().flat_map(|p| &p.announced);
    let tasks = s.tasks.values().flatten();
    plans.chain(tasks).filter(|a| a.baseline).count()
}

/// The human-readable form.
pub fn render(s: &Status) -> String {
    let mut out = String::new();
    let running = match s.running {
        Some(pid) => format!("running, pid {pid}"),
        None => "not running".to_string(),
    };
    out.push_str(&format!("project {} ({running})\n", s.project));
    if let Some(error) = s.reload.as_ref().and_then(|r| r.refused()) {
        out.push_str(&format!(
            "config  the last reload was refused; the previous configuration runs: {error}\n"
        ));
    }
    out.push_str(&format!("state   {}", s.state_dir));
    if !s.started_before {
        out.push_str(
            " (never started: at the first start, what is already ready is recorded as the baseline, not announced)",
        );
    }
    out.push('\n');
    let baseline = baseline_count(s);
    if baseline > 0 {
        out.push_str(&format!(
            "baseline {baseline} ready at the first start: recorded, never announced (marked \"(baseline)\"); only what becomes ready after it wakes anyone\n"
        ));
    }
    out.push_str(&format!("plans   {}\n", s.plans.len()));
    for p in &s.plans {
        render_plan(&mut out, p);
    }
    for i in &s.ignored {
        out.push_str(&format!(
            "ignored {}: not a plan name: {}\n",
            i.file, i.rule
        ));
    }
    for (source, items) in &s.tasks {
        let ids: Vec<String> = items.iter().map(announced_line).collect();
        out.push_str(&format!("tasks   {source}: {}\n", ids.join(", ")));
    }
    let now = std::time::SystemTime::now();
    for item in &s.reminders {
        out.push_str(&format!("open    {}\n", reminders::line(item, now)));
    }
    render_children(&mut out, s);
    render_outbox(&mut out, s);
    render_sessions(&mut out, s);
    if let Some(c) = &s.events {
        out.push_str(&format!(
            "events  offset {} (dev {}, inode {})\n",
            c.offset, c.dev, c.ino
        ));
    }
    out
}
