//! The watcher against real directories and a real inotify instance.

use super::*;
use crate::core::effect::Level;

/// Everything inotify queued so far: events are queued by the system
/// call that causes them, so nothing needs waiting for.
fn drain(watch: &mut Watch) -> Vec<Seen> {
    let mut out = Vec::new();
    while watch.read(&mut out).unwrap() {}
    out
}

/// Regression: the daemon's own reads of plan files queued one `Opened`
/// each; a scan of more plans than the queue holds overflowed it, and
/// the rescan that followed did it again, forever (found by the wake
/// benchmark at 10,000 plans). Plan directories are not watched for
/// opens at all now.
#[test]
fn reading_a_plan_queues_nothing_but_opening_an_enqueue_file_does() {
    let tmp = tempfile::tempdir().unwrap();
    let plans = tmp.path().join("pl");
    let sessions = tmp.path().join("s");
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::create_dir_all(sessions.join("a")).unwrap();
    let plan = plans.join("20260101T000000_00000001--x__wip.md");
    std::fs::write(&plan, "# G\n- [ ] one\n").unwrap();
    let enqueue = sessions.join("a/fifo.in");
    std::fs::write(&enqueue, "").unwrap();
    let mut watch = Watch::new("fifo.in", true).unwrap();
    watch.add_root(&plans, RootKind::Plans);
    watch.add_root(&sessions, RootKind::Sessions);
    for _ in 0..100 {
        std::fs::read(&plan).unwrap();
    }
    assert_eq!(drain(&mut watch), vec![]);
    std::fs::File::open(&enqueue).unwrap();
    assert_eq!(drain(&mut watch), vec![Seen::Opened(enqueue.clone())]);
    // The daemon's own prompt write: nothing but the open.
    std::fs::write(&enqueue, "prompt").unwrap();
    assert_eq!(drain(&mut watch), vec![Seen::Opened(enqueue)]);
}

#[test]
fn a_task_complete_rewrite_is_seen_as_modified_then_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("20260101T000000_00000001--x__wip.md");
    std::fs::write(&plan, "# G\n- [ ] one\n").unwrap();
    let mut watch = Watch::new("fifo.in", true).unwrap();
    watch.add_root(tmp.path(), RootKind::Plans);
    std::fs::write(&plan, "# G\n- [x] one\n").unwrap();
    let seen = drain(&mut watch);
    assert_eq!(seen.last(), Some(&Seen::Closed(plan.clone())), "{seen:?}");
    assert!(seen[..seen.len() - 1]
        .iter()
        .all(|s| *s == Seen::Modified(plan.clone())));
    let moved = tmp.path().join("20260101T000000_00000001--x__done.md");
    std::fs::rename(&plan, &moved).unwrap();
    assert_eq!(
        drain(&mut watch),
        vec![Seen::Gone(plan), Seen::MovedIn(moved)]
    );
}

/// Regression: `mkdir -p` of a missing root reported it missing once
/// per level created (a WARN each); it is one change now, and the
/// next is the root being watched.
#[test]
fn a_missing_root_is_reported_once_however_deep() {
    let tmp = tempfile::tempdir().unwrap();
    let plans = tmp.path().join("a/b/pl");
    let mut watch = Watch::new("fifo.in", true).unwrap();
    watch.add_root(&plans, RootKind::Plans);
    let changes = watch.take_changes();
    assert_eq!(
        changes,
        vec![(plans.clone(), RootMode::Missing(tmp.path().into()))]
    );
    assert_eq!(changes[0].1.said(&plans, DEFAULT_POLL).0, Level::Info);
    for level in ["a", "a/b", "a/b/pl"] {
        std::fs::create_dir(tmp.path().join(level)).unwrap();
        for s in drain(&mut watch) {
            watch.on_dir_event(&s);
        }
    }
    assert_eq!(watch.take_changes(), vec![(plans, RootMode::Inotify)]);
}

/// A root that is a regular file is not "missing": its own mode, an
/// error; replaced by a directory, it is watched.
#[test]
fn a_root_that_is_a_file_is_not_a_directory_until_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let plans = tmp.path().join("pl");
    std::fs::write(&plans, "oops").unwrap();
    let mut watch = Watch::new("fifo.in", true).unwrap();
    watch.add_root(&plans, RootKind::Plans);
    let mode = watch.modes()[0].1.clone();
    assert_eq!(mode, RootMode::NotADirectory(tmp.path().into()));
    let (level, words) = mode.said(&plans, DEFAULT_POLL);
    assert_eq!(level, Level::Error);
    assert!(
        words.contains("is not a directory but a regular file"),
        "{words}"
    );
    assert!(watch.list().is_empty());
    std::fs::remove_file(&plans).unwrap();
    std::fs::create_dir(&plans).unwrap();
    for s in drain(&mut watch) {
        watch.on_dir_event(&s);
    }
    assert_eq!(watch.modes()[0].1, RootMode::Inotify);
}

/// A root deleted goes back to waiting in its parent, and is watched
/// again when it comes back; so is a session directory that appears.
#[test]
fn roots_and_session_directories_come_and_go() {
    let tmp = tempfile::tempdir().unwrap();
    let plans = tmp.path().join("pl");
    let sessions = tmp.path().join("s");
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::create_dir_all(&sessions).unwrap();
    let mut watch = Watch::new("fifo.in", true).unwrap();
    watch.add_root(&plans, RootKind::Plans);
    watch.add_root(&sessions, RootKind::Sessions);
    std::fs::create_dir(sessions.join("a")).unwrap();
    let seen = drain(&mut watch);
    assert_eq!(seen, vec![Seen::DirCreated(sessions.join("a"))]);
    assert!(watch.on_dir_event(&seen[0]));
    std::fs::write(sessions.join("a/plan"), "- [ ] x\n").unwrap();
    assert!(drain(&mut watch).contains(&Seen::Closed(sessions.join("a/plan"))));

    std::fs::remove_dir(&plans).unwrap();
    let seen = drain(&mut watch);
    assert!(seen.contains(&Seen::Gone(plans.clone())), "{seen:?}");
    for s in &seen {
        watch.on_dir_event(s);
    }
    assert_eq!(
        watch.modes()[0].1,
        RootMode::Missing(tmp.path().to_path_buf())
    );
    std::fs::create_dir(&plans).unwrap();
    let seen = drain(&mut watch);
    assert!(seen.iter().any(|s| watch.on_dir_event(s)), "{seen:?}");
    assert_eq!(watch.modes()[0].1, RootMode::Inotify);
    let plan = plans.join("20260101T000000_00000001--x__todo.md");
    std::fs::write(&plan, "- [ ] x\n").unwrap();
    assert!(drain(&mut watch).contains(&Seen::Closed(plan)));
}

/// A root that comes to be without an inotify event in the ancestor it is
/// waited in (a FUSE mount appearing on an empty directory; simulated by
/// not reading the event the `mkdir` queued) is found by a look.
#[test]
fn an_awaited_root_that_appeared_unseen_is_found_by_a_look() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("mnt/s");
    std::fs::create_dir(tmp.path().join("mnt")).unwrap();
    let mut watch = Watch::new("fifo.in", true).unwrap();
    watch.add_root(&sessions, RootKind::Sessions);
    watch.take_changes();
    assert!(watch.awaiting());
    assert!(!watch.recheck_awaited(), "nothing there yet");
    std::fs::create_dir(&sessions).unwrap();
    assert!(watch.recheck_awaited());
    assert!(!watch.awaiting());
    assert_eq!(
        watch.take_changes(),
        vec![(sessions.clone(), RootMode::Inotify)]
    );
    assert!(!watch.recheck_awaited(), "once");
}
