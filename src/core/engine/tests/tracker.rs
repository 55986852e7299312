//! Tracker wake-ups: 9beads mounts' ready lists and events, claims and
//! completions, a beads issues.jsonl.

use super::*;

pub(super) fn tracker_rig(first_start: bool) -> Rig {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    config.mounts = vec!["proj".into()];
    config.assignees.insert("agent-1".into(), "a1".into());
    config.notify_completed = true;
    config.beads_file = Some("issues.jsonl".into());
    let memory = (!first_start).then(Memory::started);
    let mut rig = Rig::new(config, memory);
    rig.world.readers.insert("s1".into(), true);
    rig.world.readers.insert("a1".into(), true);
    rig
}

fn ready_file(rows: &[(&str, &str, &str)]) -> String {
    rows.iter()
        .map(|(id, assignee, title)| format!("{id}\topen\t0\t{assignee}\t2026-11-30\t{title}\n"))
        .collect()
}

pub(super) fn events(rig: &mut Rig, lines: &[&str]) {
    let lines = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i as u64 * 100, l.as_bytes().to_vec()))
        .collect();
    rig.feed(Input::TrackerLines {
        lines,
        cursor: Cursor {
            offset: 1,
            ..Cursor::default()
        },
    });
}

pub(super) fn set_ready(rig: &mut Rig, rows: &[(&str, &str, &str)]) {
    rig.world
        .files
        .insert(PathBuf::from("/beads/proj/ready"), ready_file(rows));
}

#[test]
fn beads_entering_a_mounts_ready_set_are_announced_once_to_their_route() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(
        &mut rig,
        &[
            ("bd-1", "-", "Fix the build"),
            ("bd-2", "agent-1", "Write docs"),
        ],
    );
    events(
        &mut rig,
        &[r#"{"type":"updated","id":"bd-1","mount":"proj"}"#],
    );
    let mut got: Vec<(String, String)> = rig
        .world
        .delivered
        .iter()
        .map(|(s, st, _)| (s.clone(), st.clone()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![("a1".into(), "bd-2".into()), ("s1".into(), "bd-1".into())]
    );
    assert!(rig
        .world
        .delivered
        .iter()
        .any(|(_, _, t)| t.contains("Fix the build")));
    rig.world.delivered.clear();
    // The same ready set again, and events for other mounts: nothing new.
    events(
        &mut rig,
        &[
            r#"{"type":"created","id":"bd-9","mount":"proj"}"#,
            r#"{"type":"created","id":"bd-9","mount":"other"}"#,
        ],
    );
    assert!(rig.world.delivered.is_empty());
    assert_eq!(
        rig.world
            .records
            .iter()
            .filter(|r| matches!(r, Record::Cursor { .. }))
            .count(),
        2
    );
}

/// Regression (found by the soak test in `tests/reliability`): the titles
/// of tracker tasks were kept for every task ever seen, so a long-running
/// daemon grew with the tracker's history.
#[test]
fn task_titles_are_kept_only_for_ready_or_announced_tasks() {
    let mut rig = tracker_rig(false);
    rig.startup();
    for i in 0..50 {
        let id = format!("bd-{i}");
        set_ready(&mut rig, &[(id.as_str(), "-", "Some task")]);
        events(
            &mut rig,
            &[r#"{"type":"updated","id":"bd-x","mount":"proj"}"#],
        );
    }
    assert_eq!(rig.world.delivered.len(), 50);
    assert!(
        rig.engine.tasks.task_titles.len() <= 2,
        "{:?}",
        rig.engine.tasks.task_titles
    );
}

#[test]
fn a_claim_is_announced_to_the_assignees_session_and_deduplicated() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-1", "-", "Fix the build")]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-1","mount":"proj"}"#],
    );
    rig.world.delivered.clear();
    set_ready(&mut rig, &[]);
    let claim = r#"{"id":"u-1","ts":1708598530,"source":"beads/proj","type":"BeadClaimed","data":{"bead_id":"bd-1","assignee":"agent-1","mount":"proj"}}"#;
    events(&mut rig, &[claim]);
    assert_eq!(rig.world.delivered.len(), 1);
    assert_eq!(rig.world.delivered[0].0, "a1");
    assert!(
        rig.world.delivered[0].2.contains("assigned to agent-1"),
        "{}",
        rig.world.delivered[0].2
    );
    assert!(
        rig.world.delivered[0].2.contains("Fix the build"),
        "title remembered from the ready file"
    );
    // A truncated log read again repeats the claim: not announced twice.
    events(&mut rig, &[claim]);
    assert_eq!(rig.world.delivered.len(), 1);
}

#[test]
fn a_completion_elsewhere_is_told_to_the_session_it_was_announced_to() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-7", "-", "Refactor")]);
    events(
        &mut rig,
        &[r#"{"type":"updated","id":"bd-7","mount":"proj"}"#],
    );
    rig.world.delivered.clear();
    set_ready(&mut rig, &[]);
    events(
        &mut rig,
        &[r#"{"type":"completed","id":"bd-7","mount":"proj"}"#],
    );
    assert_eq!(rig.world.delivered.len(), 1);
    assert_eq!(rig.world.delivered[0].0, "s1");
    assert!(rig.world.delivered[0].2.contains("completed elsewhere"));
    // It left the ready set, so it is no longer announced.
    assert!(!rig
        .engine
        .memory()
        .is_announced(&src("mount:proj"), &Item::task("bd-7")));
}

/// 9beads' `claimed` names no assignee (p9/server.go `cmdClaim`); the
/// claimer is in the mount's `list` row, the bead out of `ready`.
#[test]
fn a_current_shape_claim_is_told_to_the_claimer_found_in_the_list() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-1", "-", "Fix the build")]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-1","mount":"proj"}"#],
    );
    assert_eq!(rig.world.delivered.len(), 1);
    rig.world.delivered.clear();
    set_ready(&mut rig, &[]);
    rig.world.files.insert(
        PathBuf::from("/beads/proj/list"),
        "bd-1\tin_progress\t-\tagent-1\t2026-11-30\tFix the build\n".into(),
    );
    let claim = r#"{"type":"claimed","id":"bd-1","mount":"proj"}"#;
    events(&mut rig, &[claim]);
    let got: Vec<(&str, &str)> = rig
        .world
        .delivered
        .iter()
        .map(|(s, st, _)| (s.as_str(), st.as_str()))
        .collect();
    assert_eq!(got, [("a1", "bd-1")]);
    assert!(rig.world.delivered[0].2.contains("assigned to agent-1"));
    // Repeated (a log read again): told once.
    events(&mut rig, &[claim]);
    assert_eq!(rig.world.delivered.len(), 1);
    // Completed by anyone: the claimer's session had it, and hears so.
    rig.world
        .files
        .insert(PathBuf::from("/beads/proj/list"), String::new());
    events(
        &mut rig,
        &[r#"{"type":"completed","id":"bd-1","mount":"proj"}"#],
    );
    assert_eq!(rig.world.delivered.len(), 2);
    assert_eq!(rig.world.delivered[1].0, "a1");
    assert!(rig.world.delivered[1].2.contains("completed elsewhere"));
}

/// A ready list as 9beads writes it (`-` for no dependencies and no
/// assignee) is announced; a truly malformed row is one warning naming the
/// file and the line, said once, and the other rows still count.
#[test]
fn dash_rows_are_ready_and_a_malformed_row_is_one_warning_with_file_and_line() {
    let mut rig = tracker_rig(false);
    rig.startup();
    rig.world.files.insert(
        PathBuf::from("/beads/proj/ready"),
        "bd-1\topen\t-\t-\t2026-11-30\tNo deps\nbd-2\topen\tmany\t-\t2026-11-30\tBad\n".into(),
    );
    for _ in 0..2 {
        events(
            &mut rig,
            &[r#"{"id":"bd-1","mount":"proj","type":"created"}"#],
        );
    }
    let got: Vec<&str> = rig
        .world
        .delivered
        .iter()
        .map(|(_, st, _)| st.as_str())
        .collect();
    assert_eq!(got, ["bd-1"]);
    let warnings: Vec<&Log> = rig
        .world
        .logs
        .iter()
        .filter(|l| l.message.contains("row skipped"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].file.as_deref(), Some("proj/ready"));
    assert_eq!(warnings[0].line, Some(2));
    assert!(warnings[0].message.starts_with("proj/ready: line 2: "));
}

/// The default claimer `9beads` maps to no session: nobody hears the
/// claim, and the session the task was announced to still has it.
#[test]
fn a_claim_by_the_default_claimer_wakes_nobody_and_the_task_stays_with_its_session() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-2", "-", "Docs")]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-2","mount":"proj"}"#],
    );
    rig.world.delivered.clear();
    set_ready(&mut rig, &[]);
    rig.world.files.insert(
        PathBuf::from("/beads/proj/list"),
        "bd-2\tin_progress\t-\t9beads\t2026-11-30\tDocs\n".into(),
    );
    events(
        &mut rig,
        &[r#"{"type":"claimed","id":"bd-2","mount":"proj"}"#],
    );
    assert!(rig.world.delivered.is_empty(), "{:?}", rig.world.delivered);
    assert!(rig
        .world
        .logs
        .iter()
        .any(|l| l.message.contains("claims by \"9beads\" are not announced")));
    events(
        &mut rig,
        &[r#"{"type":"completed","id":"bd-2","mount":"proj"}"#],
    );
    let got: Vec<&str> = rig
        .world
        .delivered
        .iter()
        .map(|(s, _, _)| s.as_str())
        .collect();
    assert_eq!(got, ["s1"]);
    // Unclaimed and back in the ready set later: announced again.
    set_ready(&mut rig, &[("bd-2", "-", "Docs")]);
    events(
        &mut rig,
        &[r#"{"type":"updated","id":"bd-x","mount":"proj"}"#],
    );
    assert_eq!(rig.world.delivered.len(), 2);
}

/// `events.resync_ms`: off, no deadline ever; on, every mount is read
/// again with no event, so a silent `undep` is seen.
#[test]
fn resync_reads_ready_lists_without_events_only_when_on() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-0","mount":"proj"}"#],
    );
    assert_eq!(rig.engine.poll_timeout(), None, "off: no wake-ups");

    let mut rig = tracker_rig(false);
    rig.engine.config.resync = Some(Duration::from_secs(30));
    rig.startup();
    set_ready(&mut rig, &[]);
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-0","mount":"proj"}"#],
    );
    let at = rig.engine.poll_timeout().expect("armed by the mount read");
    set_ready(&mut rig, &[("bd-3", "-", "Unblocked by undep")]);
    rig.now = at;
    rig.feed(Input::Tick);
    let got: Vec<&str> = rig
        .world
        .delivered
        .iter()
        .map(|(_, st, _)| st.as_str())
        .collect();
    assert_eq!(got, ["bd-3"]);
    assert!(rig.engine.poll_timeout().unwrap() > at, "re-armed");
    // Turned off by a reload: no deadline is left behind.
    let mut config = rig.engine.config().clone();
    config.resync = None;
    rig.engine.reconfigure(config);
    assert_eq!(rig.engine.poll_timeout(), None, "off after a reload");
}

#[test]
fn garbage_and_unknown_events_are_logged_and_skipped() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-1", "-", "Fix")]);
    events(
        &mut rig,
        &[
            "not json",
            r#"{"type":"teleported","id":"x"}"#,
            r#"{"type":"teleported","id":"y"}"#,
            r#"{"type":"completed"}"#,
            r#"{"type":"updated","id":"bd-1","mount":"proj"}"#,
        ],
    );
    assert_eq!(rig.world.delivered.len(), 1, "the good line still counts");
    let warn: Vec<&str> = rig.world.logs.iter().map(|l| l.message.as_str()).collect();
    assert!(warn.iter().any(|m| m.contains("offset 0")), "{warn:?}");
    assert_eq!(
        warn.iter().filter(|m| m.contains("teleported")).count(),
        1,
        "unknown type said once"
    );
    assert!(
        warn.iter().any(|m| m.contains("offset 300")),
        "wrong shape reported with its offset"
    );
}

#[test]
fn a_first_start_baselines_the_tracker_backlog() {
    let mut rig = tracker_rig(true);
    set_ready(&mut rig, &[("bd-1", "-", "Old backlog")]);
    rig.feed(Input::MountRead {
        fresh: false,
        mount: "proj".into(),
        read: FileRead::Bytes(ready_file(&[("bd-1", "-", "Old backlog")]).into_bytes()),
    });
    rig.startup();
    assert!(rig.world.delivered.is_empty());
    set_ready(
        &mut rig,
        &[("bd-1", "-", "Old backlog"), ("bd-2", "-", "New")],
    );
    events(
        &mut rig,
        &[r#"{"type":"created","id":"bd-2","mount":"proj"}"#],
    );
    assert_eq!(rig.steps_delivered(), vec!["bd-2"]);
}

#[test]
fn beads_issues_are_announced_as_they_become_ready_and_deferrals_come_due() {
    let mut rig = tracker_rig(false);
    rig.startup();
    let v1 = concat!(
        r#"{"id":"b-1","title":"Base","status":"open","issue_type":"task"}"#,
        "\n",
        r#"{"id":"b-2","title":"Needs base","status":"open","issue_type":"task","dependencies":[{"issue_id":"b-2","depends_on_id":"b-1","type":"blocks"}]}"#,
        "\n",
        r#"{"id":"b-3","title":"Later","status":"open","issue_type":"task","defer_until":"2027-01-15T10:00:00Z"}"#,
        "\n",
    );
    rig.world
        .files
        .insert(PathBuf::from("/beads/issues.jsonl"), v1.into());
    rig.feed(Input::BeadsRead {
        read: FileRead::Bytes(v1.as_bytes().to_vec()),
        now_unix: rig.world.unix,
    });
    assert_eq!(rig.take_delivered(), vec!["b-1"]);
    let v2 = v1.replace(
        r#""id":"b-1","title":"Base","status":"open""#,
        r#""id":"b-1","title":"Base","status":"closed""#,
    );
    rig.world
        .files
        .insert(PathBuf::from("/beads/issues.jsonl"), v2.clone());
    rig.feed(Input::BeadsRead {
        read: FileRead::Bytes(v2.into_bytes()),
        now_unix: rig.world.unix,
    });
    assert_eq!(rig.take_delivered(), vec!["b-2"]);
    // The deferral comes due with no change to the file: a timer re-reads it.
    let due = rig.engine.poll_timeout().expect("a timer for the deferral");
    // The rig's clock (1_800_000_000) is 2027-01-15T08:00Z, two hours early.
    assert!(due.as_secs() > 3600, "due in about two hours, not {due:?}");
    rig.world.unix = 1_800_000_000 + due.as_secs() as i64 + 1;
    rig.now = due;
    rig.feed(Input::Tick);
    assert_eq!(rig.take_delivered(), vec!["b-3"]);
}

#[test]
fn a_fresh_read_of_a_rewrite_in_progress_announces_nothing_the_finished_file_would_not() {
    let mut rig = Rig::started();
    let path = PathBuf::from(PLAN_DIR).join(NAME);
    rig.write(NAME, &stock(&[true, false, false]));
    assert_eq!(rig.take_delivered(), vec!["s2"]);
    // The close of that write brought a read; it lands after the next
    // in-place rewrite truncated the file and wrote half of it.
    let full = stock(&[true, true, false]);
    let half = &full[..full.find("- [x] Step 2").unwrap() + 9];
    rig.feed(Input::PlanRead {
        path: path.clone(),
        read: FileRead::Bytes(half.as_bytes().to_vec()),
        complete: true,
        fresh: true,
    });
    assert!(rig.world.delivered.is_empty(), "{:?}", rig.world.delivered);
    assert!(
        rig.engine
            .memory()
            .is_announced(&src("plan:20261130T101500_a1b2c3d4"), &Item::step("Step 2")),
        "a step missing from a fresh read is not forgotten"
    );
    // The finished file settles: read again, complete; s3 is announced once.
    rig.world.files.insert(path.clone(), full);
    rig.settle();
    assert_eq!(rig.take_delivered(), vec!["s3"]);
    // A stale read (not fresh) of a shortened file does forget.
    rig.feed(Input::PlanRead {
        path,
        read: FileRead::Bytes(b"# Ship it\n\n- [ ] Step 1\n".to_vec()),
        complete: true,
        fresh: false,
    });
    assert!(!rig
        .engine
        .memory()
        .is_announced(&src("plan:20261130T101500_a1b2c3d4"), &Item::step("Step 3")));
}

#[test]
fn a_fresh_ready_file_missing_a_task_is_read_again_before_the_task_is_forgotten() {
    let mut rig = tracker_rig(false);
    rig.startup();
    set_ready(&mut rig, &[("bd-1", "-", "Fix the build")]);
    events(
        &mut rig,
        &[r#"{"type":"updated","id":"bd-1","mount":"proj"}"#],
    );
    assert_eq!(rig.take_delivered(), vec!["bd-1"]);
    // A read lands while the ready file is being rewritten in place: empty.
    rig.feed(Input::MountRead {
        mount: "proj".into(),
        read: FileRead::Bytes(Vec::new()),
        fresh: true,
    });
    assert!(rig
        .engine
        .memory()
        .is_announced(&src("mount:proj"), &Item::task("bd-1")));
    // Once settled, the whole file still lists it: nothing is announced again.
    rig.settle();
    assert!(rig.take_delivered().is_empty());
    assert!(rig
        .engine
        .memory()
        .is_announced(&src("mount:proj"), &Item::task("bd-1")));
    // A settled read without it does forget it.
    set_ready(&mut rig, &[]);
    rig.feed(Input::MountRead {
        mount: "proj".into(),
        read: FileRead::Bytes(Vec::new()),
        fresh: false,
    });
    assert!(!rig
        .engine
        .memory()
        .is_announced(&src("mount:proj"), &Item::task("bd-1")));
}
