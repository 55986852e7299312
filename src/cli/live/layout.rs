//! What the live view shows, as lines for a terminal of a given size:
//! whether the daemon runs, each session (its kind, its state, what it was
//! last told and how that went), the outbox, reminders coming due, and the
//! live plans with their ready steps and what became of each. Pure: a
//! `Status`, the time and the size in, lines out, so every rule here is
//! tested without a terminal.

use std::time::{Duration, SystemTime};

use reveille::core::engine::human;
use reveille::core::lifecycle::Lifecycle;
use reveille::shell::reminders;
use reveille::shell::status::{PlanStatus, SessionView, Status};

use super::fit::fit;

/// The terminal's size, in columns and rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub cols: usize,
    pub rows: usize,
}

/// One row of the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    /// Shown in bold: the headline and section titles.
    pub strong: bool,
}

fn plain(text: impl Into<String>) -> Line {
    Line {
        text: text.into(),
        strong: false,
    }
}

fn strong(text: impl Into<String>) -> Line {
    Line {
        text: text.into(),
        strong: true,
    }
}

/// What there is to show: the status, or why it could not be read.
pub type Shown = Result<Status, String>;

/// The whole screen, `size.rows` lines: the body cut to fit (with a line
/// saying how much was left out), then the footer on the last row.
pub fn screen(project: &str, shown: &Shown, now: SystemTime, clock: &str, size: Size) -> Vec<Line> {
    if size.rows == 0 {
        return Vec::new();
    }
    let mut lines = body(project, shown, now);
    let room = size.rows - 1;
    if lines.len() > room {
        let kept = room.saturating_sub(1);
        let left_out = lines.len() - kept;
        lines.truncate(kept);
        if room > 0 {
            lines.push(plain(format!(
                "… {left_out} more lines: a taller terminal shows them"
            )));
        }
    }
    // The footer keeps to the last row, where a person looks for it.
    lines.resize(room, plain(""));
    lines.push(plain(format!(
        "q quits · redrawn as things change · {clock}"
    )));
    for line in &mut lines {
        line.text = fit(&line.text, size.cols);
    }
    lines
}

/// Every line there is to show, in order of importance: a short terminal
/// keeps the daemon and the sessions and loses the tail of the plans.
fn body(project: &str, shown: &Shown, now: SystemTime) -> Vec<Line> {
    let s = match shown {
        Ok(s) => s,
        Err(e) => {
            return vec![
                strong(format!("reveille · project {project}")),
                plain(format!("  cannot read the state: {e}")),
            ]
        }
    };
    let mut out = headline(s);
    out.push(strong("Sessions"));
    out.extend(sessions(s, now));
    out.push(strong("Outbox"));
    out.extend(outbox(s));
    if !s.reminders.is_empty() {
        out.push(strong("Reminders"));
        out.extend(
            s.reminders
                .iter()
                .map(|r| plain(format!("  {}", reminders::line(r, now)))),
        );
    }
    out.extend(plans(s));
    out.extend(tasks(s));
    out.extend(children(s));
    out
}

/// Whether the daemon runs, and what follows when it does not.
fn headline(s: &Status) -> Vec<Line> {
    let mut out = Vec::new();
    match s.running {
        Some(pid) => out.push(strong(format!(
            "reveille · project {} · running, pid {pid}",
            s.project
        ))),
        None => {
            out.push(strong(format!(
                "reveille · project {} · NOT RUNNING",
                s.project
            )));
            out.push(plain(
                "  no daemon: nothing is announced or delivered until one starts; below is what the state directory holds",
            ));
        }
    }
    if let Some(error) = s.reload.as_ref().and_then(|r| r.refused()) {
        out.push(plain(format!(
            "  the last reload was refused; the previous configuration runs: {error}"
        )));
    }
    out.push(plain(format!("  state {}", s.state_dir)));
    if !s.started_before {
        out.push(plain(
            "  never started: what is ready at the first start is the baseline, recorded and not announced",
        ));
    }
    out
}

fn ago(now: SystemTime, unix_ms: u64) -> String {
    let now_ms = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    human(Duration::from_millis(now_ms.saturating_sub(unix_ms)))
}

fn sessions(s: &Status, now: SystemTime) -> Vec<Line> {
    if s.sessions.is_empty() {
        return vec![plain(
            "  none yet: no prompt has been announced to any session",
        )];
    }
    s.sessions
        .iter()
        .map(|v| plain(format!("  {}", session_line(v, s.running.is_some(), now))))
        .collect()
}

/// `agent (dir): idle for 12s; told s2: written 3s ago; pending s3`.
fn session_line(v: &SessionView, running: bool, now: SystemTime) -> String {
    // A stopped daemon's last word is history, not the present.
    let state = match (&v.state, v.since_unix_ms, running) {
        (Some(st), Some(since), true) => format!("{st} for {}", ago(now, since)),
        (Some(st), _, true) => st.clone(),
        (Some(st), _, false) => format!("last seen {st}"),
        (None, _, _) => "no state to observe".to_string(),
    };
    let mut line = format!("{} ({}): {state}", v.id, v.kind);
    if let Some(t) = &v.last_delivery {
        line.push_str(&format!(
            "; told {}: {} {} ago",
            t.step,
            t.outcome.replace('_', " "),
            ago(now, t.at)
        ));
    }
    if !v.pending.is_empty() {
        line.push_str(&format!("; pending {}", v.pending.join(", ")));
    }
    if !v.open.is_empty() {
        line.push_str(&format!("; open {}", v.open.join(", ")));
    }
    line
}

fn outbox(s: &Status) -> Vec<Line> {
    if s.outbox.is_empty() {
        return vec![plain("  empty: nothing waits to be delivered")];
    }
    s.outbox
        .iter()
        .map(|(session, items)| {
            let steps: Vec<&str> = items.iter().map(|p| p.step.as_str()).collect();
            let full = if items.len() >= s.outbox_cap {
                format!(" FULL (outbox_cap {}): new wake-ups wait", s.outbox_cap)
            } else {
                String::new()
            };
            plain(format!(
                "  {session}: {} pending ({}){full}",
                items.len(),
                steps.join(", ")
            ))
        })
        .collect()
}

fn live(p: &PlanStatus) -> bool {
    matches!(p.lifecycle, Lifecycle::Todo | Lifecycle::Wip)
}

fn plans(s: &Status) -> Vec<Line> {
    let shown: Vec<&PlanStatus> = s.plans.iter().filter(|p| live(p)).collect();
    let ended = s.plans.len() - shown.len();
    let mut title = format!("Plans: {} live", shown.len());
    if ended > 0 {
        title.push_str(&format!(" ({ended} done or abandoned, not shown)"));
    }
    let mut out = vec![strong(title)];
    for p in shown {
        out.extend(plan(s, p));
    }
    out.extend(
        s.ignored
            .iter()
            .map(|i| plain(format!("  ignored {}: not a plan name: {}", i.file, i.rule))),
    );
    out
}

fn plan(s: &Status, p: &PlanStatus) -> Vec<Line> {
    let file = p
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let session = p.session.as_deref().unwrap_or("no session");
    let mut out = vec![
        plain(format!(
            "  {} · {}/{} checked · {:?} · to {session}",
            p.goal, p.checked, p.steps, p.lifecycle
        )),
        plain(format!("    {file}")),
    ];
    if let Some(e) = &p.error {
        out.push(plain(format!("    INVALID: {e}")));
    }
    for r in &p.ready {
        out.push(plain(format!(
            "    ready {} {} · {}",
            r.id,
            r.title,
            disposition(s, p, &r.id)
        )));
    }
    // Announced and no longer ready: a step whose file the daemon has not
    // re-read yet, or a note of a plan (its "all done" prompt).
    for a in p
        .announced
        .iter()
        .filter(|a| !p.ready.iter().any(|r| r.id == a.id))
    {
        out.push(plain(format!(
            "    announced {} {}",
            a.id,
            a.title.as_deref().unwrap_or("")
        )));
    }
    out
}

/// What became of a ready step: pending in an outbox, told, the
/// baseline, or not announced (yet).
fn disposition(s: &Status, p: &PlanStatus, id: &str) -> String {
    let Some(a) = p.announced.iter().find(|a| a.id == id) else {
        return match &p.session {
            Some(_) => "not announced".to_string(),
            None => "not announced: the plan has no session".to_string(),
        };
    };
    if a.baseline {
        return "baseline: ready at the first start, not announced".to_string();
    }
    let session = a.session.as_deref().unwrap_or("-");
    let pending = s
        .outbox
        .get(session)
        .is_some_and(|q| q.iter().any(|q| q.step == id && q.source == p.source));
    match pending {
        true => format!("pending for {session}"),
        false => format!("told {session}"),
    }
}

fn tasks(s: &Status) -> Vec<Line> {
    if s.tasks.is_empty() {
        return Vec::new();
    }
    let mut out = vec![strong("Tasks")];
    for (source, items) in &s.tasks {
        let ids: Vec<String> = items
            .iter()
            .map(|a| match (a.baseline, &a.session) {
                (true, _) => format!("{} (baseline)", a.id),
                (false, Some(session)) => format!("{} to {session}", a.id),
                (false, None) => a.id.clone(),
            })
            .collect();
        out.push(plain(format!("  {source}: {}", ids.join(", "))));
    }
    out
}

fn children(s: &Status) -> Vec<Line> {
    if s.children.is_empty() {
        return Vec::new();
    }
    let mut out = vec![strong("Children")];
    out.extend(s.children.iter().map(|c| {
        plain(format!(
            "  {}: {} of {}, parent {}, {}",
            c.id, c.step, c.file, c.parent, c.state
        ))
    }));
    out
}

#[cfg(test)]
mod tests;
