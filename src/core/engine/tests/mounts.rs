//! 9beads mounts found by the project's directory: a mount's random name,
//! its new name after a tracker restart, mounts of other directories, the
//! events that wait for the mount table, pending prompts that follow the
//! new name, and what a name-following run remembered.

use super::*;

/// The project's mount before and after a 9beads restart, and another
/// project's.
const OLD: &str = "aaaa1111";
const NEW: &str = "cccc3333";
const OTHER: &str = "bbbb2222";

/// A task prompt that names where the task is closed.
const TASK: &str = "{id} {title}\nclose: echo {id} > {beads_root}/{mount}/complete\n";

/// A restarted daemon (baseline taken) following the project by directory.
fn rig() -> Rig {
    let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
    config.default_session = Some("s1".into());
    config.assignees.insert("agent-1".into(), "a1".into());
    config.notify_completed = true;
    config.templates.task = TASK.into();
    let memory = Memory::started();
    let mut rig = Rig::new(config, Some(memory));
    rig.world.readers.insert("s1".into(), true);
    rig.world.readers.insert("a1".into(), true);
    rig
}

/// A ready or list row: (id, status, assignee, title).
fn rows(rows: &[(&str, &str, &str, &str)]) -> String {
    rows.iter()
        .map(|(id, status, who, title)| format!("{id}\t{status}\t-\t{who}\t2026-11-30\t{title}\n"))
        .collect()
}

impl Rig {
    fn mtab(&mut self, mounts: &[(&str, &str)]) {
        let text: String = mounts.iter().map(|(n, c)| format!("{n}\t{c}\n")).collect();
        self.world.files.insert("/beads/mtab".into(), text);
    }

    fn mount_files(&mut self, mount: &str, ready: &[(&str, &str, &str, &str)]) {
        let text = rows(ready);
        let dir = PathBuf::from("/beads").join(mount);
        self.world.files.insert(dir.join("ready"), text.clone());
        // `list` is every bead not closed: here, what ready shows.
        self.world.files.insert(dir.join("list"), text);
    }

    /// 9beads went away: its mount's files with it.
    fn unmount_files(&mut self, mount: &str) {
        let dir = PathBuf::from("/beads").join(mount);
        self.world.files.retain(|p, _| !p.starts_with(&dir));
    }

    /// The daemon's start-up scan: plans, then the mount table.
    fn scan(&mut self) {
        self.startup();
        let table = self.world.read_mount_table();
        self.feed(Input::MountTable { table });
    }

    fn lines(&mut self, lines: &[String]) {
        let lines = lines
            .iter()
            .enumerate()
            .map(|(i, l)| (i as u64 * 100, l.as_bytes().to_vec()))
            .collect();
        self.feed(Input::TrackerLines {
            lines,
            cursor: Cursor {
                offset: 7,
                ..Cursor::default()
            },
        });
    }

    /// (session, step) of each prompt delivered since the last call.
    fn heard(&mut self) -> Vec<(String, String)> {
        let got = self.world.delivered.drain(..);
        got.map(|(s, step, _)| (s, step)).collect()
    }
}

/// An event as 9beads marshals it: keys sorted.
fn ev(kind: &str, id: &str, mount: &str) -> String {
    format!(r#"{{"id":"{id}","mount":"{mount}","type":"{kind}"}}"#)
}

fn mount_ev(name: &str, cwd: &str) -> String {
    format!(r#"{{"cwd":"{cwd}","name":"{name}","type":"mount"}}"#)
}

fn pair(session: &str, step: &str) -> (String, String) {
    (session.to_string(), step.to_string())
}

#[test]
fn a_project_found_by_its_directory_follows_its_mount_through_a_tracker_restart() {
    let mut rig = rig();
    rig.mtab(&[(OTHER, "/src/other"), (OLD, PROJECT_DIR)]);
    rig.mount_files(OLD, &[("bd-1", "open", "-", "Fix the build")]);
    rig.mount_files(OTHER, &[("bd-9", "open", "-", "Not ours")]);
    rig.scan();
    assert_eq!(rig.heard(), [pair("s1", "bd-1")]);
    let text = &rig.engine.memory().outbox.prompts().count();
    assert_eq!(*text, 0, "delivered, nothing pending");
    let source = src(&format!("9beads:{PROJECT_DIR}"));
    assert!(rig
        .engine
        .memory()
        .is_announced(&source, &Item::task("bd-1")));
    // Events of the other project's mount wake no one.
    rig.lines(&[ev("created", "bd-9", OTHER)]);
    assert!(rig.heard().is_empty());

    // 9beads restarts: its files go, the log starts over, and the project
    // is mounted again under a new name. bd-2 became ready meanwhile.
    rig.unmount_files(OLD);
    rig.world.files.remove(Path::new("/beads/mtab"));
    rig.feed(Input::TrackerRestarted {
        why: "was truncated".into(),
    });
    rig.mtab(&[(NEW, PROJECT_DIR)]);
    rig.mount_files(
        NEW,
        &[
            ("bd-1", "open", "-", "Fix the build"),
            ("bd-2", "open", "-", "Ready while it was down"),
        ],
    );
    rig.lines(&[mount_ev(NEW, PROJECT_DIR)]);
    assert_eq!(rig.heard(), [pair("s1", "bd-2")], "bd-1 is not repeated");
    let last = rig.world.logs.iter().rev().map(|l| l.message.as_str());
    assert!(
        last.clone()
            .any(|m| m.contains(&format!("tracker mounted {NEW}")) && m.contains(OLD)),
        "{:?}",
        last.collect::<Vec<_>>()
    );

    // A claim and a completion under the new name reach the right session;
    // the claimed bead, still in `ready` (9beads lists in_progress beads
    // there), is not new work for anyone.
    rig.mount_files(
        NEW,
        &[
            ("bd-1", "open", "-", "Fix the build"),
            ("bd-2", "in_progress", "agent-1", "Ready while it was down"),
        ],
    );
    rig.lines(&[ev("claimed", "bd-2", NEW)]);
    assert_eq!(rig.heard(), [pair("a1", "bd-2")]);
    rig.mount_files(NEW, &[("bd-1", "open", "-", "Fix the build")]);
    rig.lines(&[ev("completed", "bd-2", NEW)]);
    let got = rig.world.delivered.last().unwrap().2.clone();
    assert_eq!(rig.heard(), [pair("a1", "bd-2")]);
    assert!(got.contains("completed elsewhere"), "{got}");
    // An `updated` event (sorted keys) re-reads the list: bd-1 retitled and
    // still ready is not news; a bead unblocked with it is.
    rig.mount_files(
        NEW,
        &[
            ("bd-1", "open", "-", "Fix the build, again"),
            ("bd-3", "open", "-", "Unblocked"),
        ],
    );
    rig.lines(&[ev("updated", "bd-1", NEW)]);
    assert_eq!(rig.heard(), [pair("s1", "bd-3")]);
}

#[test]
fn a_pending_prompt_is_written_again_for_the_mounts_new_name() {
    let mut rig = rig();
    rig.world.readers.insert("s1".into(), false);
    rig.mtab(&[(OLD, PROJECT_DIR)]);
    rig.mount_files(OLD, &[("bd-1", "open", "-", "Fix the build")]);
    rig.scan();
    let pending = |rig: &Rig| -> Vec<String> {
        let outbox = &rig.engine.memory().outbox;
        outbox.prompts().map(|p| p.text.clone()).collect()
    };
    assert_eq!(pending(&rig).len(), 1);
    assert!(pending(&rig)[0].contains(&format!("/beads/{OLD}/complete")));
    // 9beads restarts; the agent has not read the prompt yet.
    rig.feed(Input::TrackerRestarted {
        why: "was truncated".into(),
    });
    rig.mtab(&[(NEW, PROJECT_DIR)]);
    rig.mount_files(NEW, &[("bd-1", "open", "-", "Fix the build")]);
    rig.lines(&[mount_ev(NEW, PROJECT_DIR)]);
    let texts = pending(&rig);
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(
        texts[0].contains(&format!("echo bd-1 > /beads/{NEW}/complete")),
        "{texts:?}"
    );
    // The agent comes back: it hears the task once, at its new mount.
    rig.world.readers.insert("s1".into(), true);
    rig.feed(Input::SessionActivity {
        session: "s1".into(),
    });
    rig.settle();
    let got: Vec<&str> = rig.world.delivered.iter().map(|d| d.2.as_str()).collect();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains(NEW) && !got[0].contains(OLD), "{got:?}");
    // Once written for the current name, a later read leaves it alone.
    let records = rig.world.records.len();
    rig.lines(&[ev("updated", "bd-1", NEW)]);
    let withdrawn = rig.world.records[records..]
        .iter()
        .filter(|r| matches!(r, Record::Withdrawn { .. }))
        .count();
    assert_eq!(withdrawn, 0);
}

/// 9beads' mount event and the first events of the new mount in one read
/// of the log: the events wait for the mount table, so the claim in them
/// is told, and the log position is recorded only after them.
#[test]
fn events_of_a_mount_not_known_yet_wait_for_the_mount_table() {
    let mut rig = rig();
    rig.mtab(&[]);
    rig.scan();
    rig.mtab(&[(NEW, PROJECT_DIR)]);
    rig.mount_files(
        NEW,
        &[("bd-4", "in_progress", "agent-1", "Claimed at once")],
    );
    let records = rig.world.records.len();
    rig.lines(&[
        mount_ev(NEW, PROJECT_DIR),
        ev("created", "bd-4", NEW),
        ev("claimed", "bd-4", NEW),
    ]);
    assert_eq!(rig.heard(), [pair("a1", "bd-4")]);
    let after = &rig.world.records[records..];
    let cursor = after
        .iter()
        .position(|r| matches!(r, Record::Cursor { .. }));
    let claim = after.iter().position(
        |r| matches!(r, Record::Announce { item: Item::Note(Note::Claim(id, _)), .. } if id == "bd-4"),
    );
    assert!(cursor.unwrap() > claim.unwrap(), "{after:?}");
}

#[test]
fn mounts_of_other_directories_and_unmounts_are_followed_by_the_table() {
    let mut rig = rig();
    rig.mtab(&[(OLD, PROJECT_DIR)]);
    rig.mount_files(OLD, &[("bd-1", "open", "-", "Fix the build")]);
    rig.scan();
    assert_eq!(rig.heard(), [pair("s1", "bd-1")]);
    // Another directory is mounted: its beads are not the project's.
    rig.mtab(&[(OLD, PROJECT_DIR), (OTHER, "/src/other")]);
    rig.mount_files(OTHER, &[("bd-8", "open", "-", "Theirs")]);
    rig.lines(&[mount_ev(OTHER, "/src/other"), ev("created", "bd-8", OTHER)]);
    assert!(rig.heard().is_empty());
    // The project is unmounted: what was announced is kept, and a mount
    // of it later repeats nothing and tells what is new.
    rig.mtab(&[(OTHER, "/src/other")]);
    rig.unmount_files(OLD);
    rig.lines(&[format!(r#"{{"name":"{OLD}","type":"umount"}}"#)]);
    assert!(rig
        .engine
        .memory()
        .is_announced(&src(&format!("9beads:{PROJECT_DIR}")), &Item::task("bd-1")));
    assert!(rig.engine.tasks.mount_names(&rig.engine.config).is_empty());
    rig.mtab(&[(OTHER, "/src/other"), (NEW, PROJECT_DIR)]);
    rig.mount_files(
        NEW,
        &[
            ("bd-1", "open", "-", "Fix the build"),
            ("bd-5", "open", "-", "New"),
        ],
    );
    rig.lines(&[mount_ev(NEW, PROJECT_DIR)]);
    assert_eq!(rig.heard(), [pair("s1", "bd-5")]);
}

/// A mount whose files vanished (9beads stopped) has the table read again;
/// with no table nothing is the project's, and nothing is forgotten.
#[test]
fn a_mount_whose_files_vanish_is_looked_up_again() {
    let mut rig = rig();
    rig.mtab(&[(OLD, PROJECT_DIR)]);
    rig.mount_files(OLD, &[("bd-1", "open", "-", "Fix the build")]);
    rig.scan();
    rig.heard();
    rig.unmount_files(OLD);
    rig.world.files.remove(Path::new("/beads/mtab"));
    rig.lines(&[ev("updated", "bd-1", OLD)]);
    assert!(rig.engine.tasks.mount_names(&rig.engine.config).is_empty());
    let said: Vec<&str> = rig.world.logs.iter().map(|l| l.message.as_str()).collect();
    assert!(
        said.iter().any(|m| m.contains("no 9beads mount table")),
        "{said:?}"
    );
    assert!(rig
        .engine
        .memory()
        .is_announced(&src(&format!("9beads:{PROJECT_DIR}")), &Item::task("bd-1")));
}

/// State from a run that followed the mount by name (version 1's default
/// `[project.name]`): adopted by the project's 9beads source when the
/// table shows its mount, so nothing it announced is announced again.
#[test]
fn what_a_name_following_run_remembered_is_adopted() {
    let mut rig = rig();
    let named = src("mount:proj");
    let mut memory = Memory {
        version: 1,
        ..Memory::started()
    };
    memory.apply(&Record::Announce {
        source: named.clone(),
        item: Item::task("bd-1"),
        session: Some("s1".into()),
        baseline: false,
        pending: None,
    });
    rig.restart_from(memory);
    rig.mtab(&[(OLD, PROJECT_DIR)]);
    rig.mount_files(
        OLD,
        &[
            ("bd-1", "open", "-", "Fix the build"),
            ("bd-2", "open", "-", "New"),
        ],
    );
    rig.scan();
    assert_eq!(rig.heard(), [pair("s1", "bd-2")]);
    let memory = rig.engine.memory();
    assert_eq!(memory.version, Memory::VERSION);
    assert!(memory.announced_of(&named).is_none());
    let adopted = rig.world.records.iter().any(|r| {
        matches!(r, Record::Adopt { from, to } if *from == named && *to == src(&format!("9beads:{PROJECT_DIR}")))
    });
    assert!(adopted, "{:?}", rig.world.records);
}
