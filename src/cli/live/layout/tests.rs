//! The live view's rules, on hand-made statuses: what each ready step's
//! line says became of it, how a stopped daemon is shown, and that the
//! screen never leaves the terminal's size.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use reveille::core::lifecycle::Lifecycle;
use reveille::core::ready_report::StepRef;
use reveille::shell::session_view::ToldFile;
use reveille::shell::status::{AnnouncedView, PendingView, PlanStatus, SessionView, Status};

use super::super::fit::columns;
use super::*;

const NOW_MS: u64 = 1_800_000_000_000;

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(NOW_MS)
}

fn step(id: &str, title: &str) -> StepRef {
    StepRef {
        id: id.into(),
        title: title.into(),
    }
}

fn announced(id: &str, baseline: bool) -> AnnouncedView {
    AnnouncedView {
        id: id.into(),
        title: None,
        session: Some("agent".into()),
        baseline,
    }
}

fn plan(lifecycle: Lifecycle, ready: Vec<StepRef>, announced: Vec<AnnouncedView>) -> PlanStatus {
    PlanStatus {
        source: "plan:20260101T000000_0a1b2c3d".into(),
        path: PathBuf::from("/p/pl/20260101T000000_0a1b2c3d--ship__wip.md"),
        lifecycle,
        goal: "Ship it".into(),
        session: Some("agent".into()),
        error: None,
        steps: 4,
        checked: 1,
        ready,
        announced,
    }
}

fn status(running: Option<u32>) -> Status {
    Status {
        project: "demo".into(),
        running,
        state_dir: "/p/state".into(),
        started_before: true,
        plans: Vec::new(),
        ignored: Vec::new(),
        outbox: BTreeMap::new(),
        outbox_cap: 1000,
        outbox_full: Vec::new(),
        tasks: BTreeMap::new(),
        events: None,
        reminders: Vec::new(),
        children: Vec::new(),
        sessions: Vec::new(),
        reload: None,
    }
}

fn pending(step: &str) -> PendingView {
    PendingView {
        seq: 7,
        step: step.into(),
        plan: "20260101T000000_0a1b2c3d--ship__todo.md".into(),
        source: "plan:20260101T000000_0a1b2c3d".into(),
    }
}

fn texts(lines: &[Line]) -> Vec<String> {
    lines.iter().map(|l| l.text.clone()).collect()
}

fn big() -> Size {
    Size {
        cols: 200,
        rows: 100,
    }
}

fn line_with<'a>(lines: &'a [String], needle: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in {lines:#?}"))
}

#[test]
fn each_ready_step_says_what_became_of_it() {
    let mut s = status(Some(42));
    s.plans.push(plan(
        Lifecycle::Wip,
        vec![
            step("s2", "Told"),
            step("s3", "Waiting"),
            step("s4", "Old"),
            step("s5", "New"),
        ],
        vec![
            announced("s2", false),
            announced("s3", false),
            announced("s4", true),
        ],
    ));
    s.outbox.insert("agent".into(), vec![pending("s3")]);
    let lines = texts(&screen("demo", &Ok(s), now(), "12:00:00", big()));
    assert!(line_with(&lines, "ready s2 Told").ends_with("· told"));
    assert!(line_with(&lines, "ready s3 Waiting").ends_with("· pending"));
    assert!(line_with(&lines, "ready s4 Old").contains("baseline"));
    assert!(line_with(&lines, "ready s5 New").ends_with("not announced"));
    assert!(line_with(&lines, "agent: 1 pending").contains("(s3)"));
}

#[test]
fn a_stopped_daemon_is_said_and_its_last_word_is_history() {
    let mut s = status(None);
    s.sessions.push(SessionView {
        id: "agent".into(),
        kind: "dir".into(),
        state: Some("idle".into()),
        since_unix_ms: Some(NOW_MS - 5_000),
        waiting: None,
        absent: None,
        last_delivery: Some(ToldFile {
            step: "s2".into(),
            outcome: "turn_started".into(),
            at: NOW_MS - 65_000,
        }),
        in_flight: None,
        pending: vec!["s3".into()],
        open: Vec::new(),
    });
    let lines = texts(&screen("demo", &Ok(s), now(), "12:00:00", big()));
    assert!(lines[0].contains("NOT RUNNING"), "{lines:#?}");
    assert!(line_with(&lines, "no daemon").contains("nothing is announced or delivered"));
    assert_eq!(
        line_with(&lines, "agent (dir)"),
        "  agent (dir): last seen idle"
    );
    assert_eq!(
        line_with(&lines, "told s2"),
        "    told s2: turn started 1m 5s ago; pending s3"
    );
}

#[test]
fn a_running_daemon_shows_how_long_a_session_has_been_in_its_state() {
    let mut s = status(Some(42));
    s.sessions.push(SessionView {
        id: "agent".into(),
        kind: "dir".into(),
        state: Some("thinking".into()),
        since_unix_ms: Some(NOW_MS - 12_000),
        waiting: None,
        absent: None,
        last_delivery: None,
        in_flight: None,
        pending: Vec::new(),
        open: vec!["s1".into()],
    });
    let lines = texts(&screen("demo", &Ok(s), now(), "12:00:00", big()));
    assert!(lines[0].ends_with("running, pid 42"));
    assert_eq!(
        line_with(&lines, "agent (dir)"),
        "  agent (dir): thinking for 12s"
    );
    assert_eq!(line_with(&lines, "open s1"), "    open s1");
}

#[test]
fn a_session_waiting_for_a_person_is_shown_first_in_reverse_video() {
    let mut s = status(Some(42));
    s.sessions.push(SessionView {
        id: "codex:t".into(),
        kind: "codex".into(),
        state: Some("waiting for a person: approve `sed -i s/a/b/ f`".into()),
        since_unix_ms: Some(NOW_MS - 7_000),
        waiting: Some("approval".into()),
        absent: None,
        last_delivery: None,
        in_flight: None,
        pending: vec!["s2".into()],
        open: vec!["s1".into()],
    });
    let lines = screen("demo", &Ok(s), now(), "12:00:00", big());
    let first = lines.iter().position(|l| l.alert).expect("an alert line");
    let sessions = lines.iter().position(|l| l.text == "Sessions").unwrap();
    assert!(first < sessions, "{lines:#?}");
    assert_eq!(
        lines[first].text.trim(),
        "! codex:t waiting for a person: approve `sed -i s/a/b/ f` for 7s"
    );
}

#[test]
fn ended_plans_are_counted_not_listed() {
    let mut s = status(Some(1));
    s.plans.push(plan(Lifecycle::Done, vec![], vec![]));
    s.plans
        .push(plan(Lifecycle::Todo, vec![step("s1", "A")], vec![]));
    let lines = texts(&screen("demo", &Ok(s), now(), "12:00:00", big()));
    assert!(lines.contains(&"Plans: 1 live (1 done, abandoned or empty, not shown)".to_string()));
    assert_eq!(lines.iter().filter(|l| l.contains("Ship it")).count(), 1);
}

#[test]
fn the_screen_never_leaves_the_terminal() {
    let mut s = status(Some(1));
    let ready = (1..=40)
        .map(|i| step(&format!("s{i}"), &"long title ".repeat(20)))
        .collect();
    s.plans.push(plan(Lifecycle::Wip, ready, vec![]));
    let size = Size { cols: 80, rows: 24 };
    let lines = screen("demo", &Ok(s), now(), "12:00:00", size);
    assert_eq!(lines.len(), 24);
    for l in &lines {
        assert!(
            l.text.chars().map(columns).sum::<usize>() <= 80,
            "{:?}",
            l.text
        );
    }
    let texts = texts(&lines);
    assert!(texts[22].starts_with("… "), "{texts:#?}");
    assert!(texts[22].contains("more lines"));
    assert!(texts[23].starts_with("q quits"));
}

#[test]
fn a_state_that_cannot_be_read_is_said() {
    let lines = texts(&screen(
        "demo",
        &Err("journal.jsonl: line 3: not JSON".into()),
        now(),
        "12:00:00",
        big(),
    ));
    assert!(line_with(&lines, "cannot read the state").contains("line 3"));
}

#[test]
fn the_footer_keeps_to_the_last_row() {
    let size = Size { cols: 80, rows: 24 };
    let lines = texts(&screen(
        "demo",
        &Ok(status(Some(1))),
        now(),
        "12:34:56",
        size,
    ));
    assert_eq!(lines.len(), 24);
    assert_eq!(lines[23], "q quits · redrawn as things change · 12:34:56");
    assert_eq!(lines[22], "");
}

#[test]
fn a_reminder_says_how_many_were_sent_and_when_the_next_is_due() {
    let mut s = status(Some(1));
    s.reminders.push(reveille::shell::reminders::OpenItem {
        session: "agent".into(),
        source: "plan:20260101T000000_0a1b2c3d".into(),
        id: "s2".into(),
        title: "Write the parser".into(),
        announced_ms: Some(NOW_MS - 600_000),
        state: Some("idle".into()),
        state_since_ms: Some(NOW_MS - 60_000),
        reminders_sent: 1,
        reminders_max: 3,
        next_due_ms: Some(NOW_MS + 598_000),
    });
    let lines = texts(&screen("demo", &Ok(s), now(), "12:00:00", big()));
    assert_eq!(
        line_with(&lines, "Write the parser"),
        "  agent s2 Write the parser: 1 of 3 sent, next in 9m 58s"
    );
}

#[test]
fn an_empty_session_checklist_is_not_a_plan_worth_a_line() {
    let mut s = status(Some(1));
    let mut checklist = plan(Lifecycle::Wip, vec![], vec![]);
    checklist.source = "session:agent".into();
    checklist.steps = 0;
    checklist.checked = 0;
    s.plans.push(checklist);
    let lines = texts(&screen("demo", &Ok(s), now(), "12:00:00", big()));
    assert!(lines.contains(&"Plans: 0 live (1 done, abandoned or empty, not shown)".to_string()));
}
