//! `reveille status`: what the daemon knows, read from the state directory
//! and the plan files, without talking to the daemon (it may not be
//! running, and status must never disturb it: no lock is taken).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::Settings;
use crate::core::driver::{drive, World};
use crate::core::effect::{Delivery, Log};
use crate::core::engine::{Engine, EngineConfig, PlanView};
use crate::core::input::{FileRead, Input, Undeliverable};
use crate::core::record::{Announced, Cursor, Item, Memory, Record};
use crate::shell::daemon::engine_config;
use crate::shell::read::read_capped;
use crate::shell::store::read_memory;
use crate::shell::watch::list_plans;

/// One pending prompt.
#[derive(Debug, Serialize)]
pub struct PendingView {
    pub seq: u64,
    pub step: String,
    pub plan: String,
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
    /// Per session, prompts waiting to be delivered, in order.
    pub outbox: BTreeMap<String, Vec<PendingView>>,
    /// `sessions.outbox_cap`: a session with this many pending prompts is
    /// full, and new wake-ups for it wait, unannounced, until it drains.
    pub outbox_cap: usize,
    /// Sessions whose outbox is full.
    pub outbox_full: Vec<String>,
    /// Tracker sources (mounts, beads): announced task ids.
    pub tasks: BTreeMap<String, Vec<String>>,
    /// The tracker event log position.
    pub events: Option<Cursor>,
}

/// One plan.
#[derive(Debug, Serialize)]
pub struct PlanStatus {
    #[serde(flatten)]
    pub plan: PlanView,
    /// Announced steps still unchecked (baseline entries marked).
    pub announced: Vec<String>,
}

fn running_pid(dir: &Path) -> Option<u32> {
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

fn item_name(item: &Item, a: &Announced) -> String {
    let mut s = item.label().to_string();
    // Tracker notes share their task's id: say which note it is.
    match item {
        Item::Claim(_, who) => s.push_str(&format!(" (claim by {who} told)")),
        Item::Completed(_) => s.push_str(" (completion told)"),
        Item::Held(..) => s.push_str(&format!(
            " (left the ready set; held by {})",
            a.session.as_deref().unwrap_or("-")
        )),
        _ => {}
    }
    if a.baseline {
        s.push_str(" (baseline)");
    }
    s
}

/// The world of `status`: it reads plan files and changes nothing — no
/// record is written, no prompt delivered (a delivery is left "in the
/// background" forever), no log emitted.
struct Look<'a> {
    settings: &'a Settings,
}

impl World for Look<'_> {
    fn record(&mut self, _: &Record) {}
    fn log(&mut self, _: Log) {}
    fn read_plan(&mut self, path: &Path, config: &EngineConfig) -> (FileRead, bool) {
        (read_capped(path, config.max_plan_bytes), false)
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
    fn read_beads(&mut self) -> Option<(FileRead, i64)> {
        None
    }
    fn deliver(&mut self, _: &Delivery) -> Option<Result<(), Undeliverable>> {
        None
    }
}

/// Gather the status of the project `settings` describe.
pub fn gather(settings: &Settings) -> Result<Status, String> {
    let dir = &settings.state.dir;
    let (memory, _) = read_memory(dir).map_err(|e| e.to_string())?;
    let started_before = memory.as_ref().is_some_and(|m| m.baselined);
    let memory = memory.unwrap_or_default();
    // Re-derive plans and ready steps exactly as the daemon would, on a
    // throw-away engine (nothing it decides is written anywhere).
    let mut engine = Engine::new(
        engine_config(settings),
        Some(Memory {
            baselined: true,
            ..memory.clone()
        }),
    );
    let mut look = Look { settings };
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
    let plans = engine
        .plans()
        .into_iter()
        .map(|plan| {
            let announced = memory
                .announced
                .get(&plan.source)
                .map(|items| items.iter().map(|(i, a)| item_name(i, a)).collect())
                .unwrap_or_default();
            PlanStatus { plan, announced }
        })
        .collect();
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
                })
                .collect();
            (session.clone(), items)
        })
        .collect();
    let tasks = memory
        .announced
        .iter()
        .filter(|(source, _)| !source.is_plan())
        .map(|(source, items)| {
            (
                source.to_string(),
                items.iter().map(|(i, a)| item_name(i, a)).collect(),
            )
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
        started_before,
        plans,
        outbox,
        tasks,
        events: memory.cursor,
    })
}

/// The human-readable form.
pub fn render(s: &Status) -> String {
    let mut out = String::new();
    let running = match s.running {
        Some(pid) => format!("running, pid {pid}"),
        None => "not running".to_string(),
    };
    out.push_str(&format!("project {} ({running})\n", s.project));
    out.push_str(&format!("state   {}", s.state_dir));
    if !s.started_before {
        out.push_str(" (never started: the first start takes the baseline)");
    }
    out.push('\n');
    out.push_str(&format!("plans   {}\n", s.plans.len()));
    for p in &s.plans {
        let file = p
            .plan
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push_str(&format!(
            "  {} [{:?}] {}/{} checked, session {}: {}\n",
            file,
            p.plan.lifecycle,
            p.plan.checked,
            p.plan.steps,
            p.plan.session.as_deref().unwrap_or("-"),
            p.plan.goal
        ));
        if let Some(e) = &p.plan.error {
            out.push_str(&format!("    INVALID: {e}\n"));
        }
        for (label, title) in &p.plan.ready {
            out.push_str(&format!("    ready     {label}\t{title}\n"));
        }
        for a in &p.announced {
            out.push_str(&format!("    announced {a}\n"));
        }
    }
    for (source, items) in &s.tasks {
        out.push_str(&format!("tasks   {source}: {}\n", items.join(", ")));
    }
    if s.outbox.is_empty() {
        out.push_str("outbox  empty\n");
    }
    for (session, items) in &s.outbox {
        let steps: Vec<&str> = items.iter().map(|p| p.step.as_str()).collect();
        let full = if items.len() >= s.outbox_cap {
            format!(
                " FULL (outbox_cap = {}): new wake-ups for it wait, unannounced, until it drains",
                s.outbox_cap
            )
        } else {
            String::new()
        };
        let shown: Vec<&str> = steps.iter().take(20).copied().collect();
        let more = if steps.len() > shown.len() {
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
    if let Some(c) = &s.events {
        out.push_str(&format!(
            "events  offset {} (dev {}, inode {})\n",
            c.offset, c.dev, c.ino
        ));
    }
    out
}
