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
    /// Shown in reverse video: a session waiting for a person, which only
    /// a person can move on.
    pub alert: bool,
}

fn plain(text: impl Into<String>) -> Line {
    Line {
        text: text.into(),
        strong: false,
        alert: false,
    }
}

fn strong(text: impl Into<String>) -> Line {
    Line {
        text: text.into(),
        strong: true,
        alert: false,
    }
}

fn alert(text: impl Into<String>) -> Line {
    Line {
        text: text.into(),
        strong: true,
        alert: true,
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
    out.extend(waiting(s, now));
    out.push(strong("Sessions"));
    out.extend(sessions(s, now));
    out.push(strong("Outbox"));
    out.extend(outbox(s));
    if !s.reminders.is_empty() {
        out.push(strong("Reminders"));
        out.extend(s.reminders.iter().map(|r| reminder_line(r, now)));
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

/// Right under the headline, where the eye falls first: each session
/// waiting for a person (`state` says what is asked), in reverse video.
fn waiting(s: &Status, now: SystemTime) -> Vec<Line> {
    if s.running.is_none() {
        return Vec::new();
    }
    let waiting = s.sessions.iter().filter(|v| v.waiting.is_some());
    waiting
        .map(|v| {
            let state = v.state.as_deref().unwrap_or("waiting for a person");
            let since = v.since_unix_ms.map(|t| format!(" for {}", ago(now, t)));
            alert(format!(" ! {} {state}{} ", v.id, since.unwrap_or_default()))
        })
        .collect()
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
    let running = s.running.is_some();
    s.sessions
        .iter()
        .flat_map(|v| session_lines(v, running, now))
        .collect()
}

/// `agent (dir): idle for 12s`, then what it was told and what waits:
/// `told s2: written 3s ago; pending s3`. Two lines, since session ids
/// (an ollie-9p id is 26 characters) leave little room on one.
fn session_lines(v: &SessionView, running: bool, now: SystemTime) -> Vec<Line> {
    // A stopped daemon's last word is history, not the present.
    let state = match (&v.state, v.since_unix_ms, running) {
        (Some(st), Some(since), true) => format!("{st} for {}", ago(now, since)),
        (Some(st), _, true) => st.clone(),
        (Some(st), _, false) => format!("last seen {st}"),
        (None, _, _) => "no state to observe".to_string(),
    };
    let mut out = vec![plain(format!("  {} ({}): {state}", v.id, v.kind))];
    let mut told = Vec::new();
    if let Some(t) = &v.last_delivery {
        let outcome = t.outcome.replace('_', " ");
        told.push(format!("told {}: {outcome} {} ago", t.step, ago(now, t.at)));
    }
    if !v.pending.is_empty() {
        told.push(format!("pending {}", v.pending.join(", ")));
    }
    if !v.open.is_empty() {
        told.push(format!("open {}", v.open.join(", ")));
    }
    if !told.is_empty() {
        out.push(plain(format!("    {}", told.join("; "))));
    }
    out
}

/// `agent s2 Write the parser: 1 of 3 sent, next in 9m 58s`.
fn reminder_line(r: &reminders::OpenItem, now: SystemTime) -> Line {
    let now_ms = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let next = match r.next_due_ms {
        Some(ms) if ms > now_ms => format!("next in {}", human(Duration::from_millis(ms - now_ms))),
        Some(_) => "next due now".to_string(),
        None => "none scheduled".to_string(),
    };
    plain(format!(
        "  {} {} {}: {} of {} sent, {next}",
        r.session, r.id, r.title, r.reminders_sent, r.reminders_max
    ))
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

/// Plans worth a line: live ones, less the session checklists that are
/// empty (every ollie-9p session has one, mostly empty).
fn shown(p: &PlanStatus) -> bool {
    let live = matches!(p.lifecycle, Lifecycle::Todo | Lifecycle::Wip);
    let empty_checklist = p.source.starts_with("session:") && p.steps == 0 && p.error.is_none();
    live && !empty_checklist
}

fn plans(s: &Status) -> Vec<Line> {
    let listed: Vec<&PlanStatus> = s.plans.iter().filter(|p| shown(p)).collect();
    let others = s.plans.len() - listed.len();
    let mut title = format!("Plans: {} live", listed.len());
    if others > 0 {
        title.push_str(&format!(" ({others} done, abandoned or empty, not shown)"));
    }
    let mut out = vec![strong(title)];
    for p in listed {
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
    // A session checklist is the file `plan` of its session's directory.
    let file = match p.source.strip_prefix("session:") {
        Some(session) => format!("{session}/plan (a session checklist)"),
        None => p
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
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
    // The plan's line names its session: name another one only (a child).
    let to = match p.session.as_deref() == Some(session) {
        true => String::new(),
        false => format!(" to {session}"),
    };
    match pending {
        true => format!("pending{to}"),
        false => format!("told{to}"),
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
