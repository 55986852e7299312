//! The 9beads double (`util::beads`) through its FUSE mount and plain
//! `std::fs`, checked against what 9beads' `p9/server.go` writes: the
//! events it appends (and the commands that append none), the list rows,
//! bead files, stat sizes and modes, restart.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::util::beads::Beads;
use crate::util::fuse::fuse_unavailable;

#[test]
fn the_9beads_double_serves_what_9beads_serves() {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let t = Beads::mount().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let cwd = cwd.path().display().to_string();
    t.write("ctl", &format!("mount {cwd} proj"));
    t.ctl("proj", r#"new "Parent task" "the body""#);
    let parent = t.id_of("proj", "Parent task");
    t.ctl("proj", &format!(r#"new "Child" "" {parent}"#));
    t.ctl(
        "proj",
        &format!(r#"new "Blocked one" "" blockers={parent}"#),
    );
    let blocked = t.id_of("proj", "Blocked one");
    assert_eq!(t.id_of("proj", "Child"), format!("{parent}.1"));
    // Rows: `-` for no dependencies and no assignee, YYYY-MM-DD.
    let root = t.root();
    let list = fs::read_to_string(root.join("proj/list")).unwrap();
    let rows: Vec<Vec<&str>> = list.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 3, "{list}");
    assert_eq!(&rows[0][..4], [parent.as_str(), "open", "-", "-"]);
    assert_eq!(
        rows[1][2], "1",
        "the child counts its parent-child dependency"
    );
    let date = rows[0][4];
    assert!(date.len() == 10 && date.as_bytes()[4] == b'-', "{date}");
    let ready = fs::read_to_string(root.join("proj/ready")).unwrap();
    assert_eq!(
        ready.lines().count(),
        2,
        "the blocked bead is not ready: {ready}"
    );
    assert_eq!(
        fs::read_to_string(root.join("ready")).unwrap(),
        ready,
        "root = all mounts"
    );
    // A claim: in_progress, the assignee in the row, out of ready; the
    // event names no assignee; keys sorted as Go's json.Marshal sorts them.
    t.ctl("proj", &format!("claim {parent}"));
    let list = fs::read_to_string(root.join("proj/list")).unwrap();
    assert!(
        list.contains(&format!("{parent}\tin_progress\t-\t9beads\t")),
        "{list}"
    );
    let events = t.beads.events();
    let lines: Vec<&str> = events.lines().collect();
    assert_eq!(
        lines[0],
        format!(r#"{{"cwd":"{cwd}","name":"proj","type":"mount"}}"#)
    );
    assert_eq!(
        lines[1],
        format!(r#"{{"id":"{parent}","mount":"proj","type":"created"}}"#)
    );
    assert_eq!(
        lines[4],
        format!(r#"{{"id":"{parent}","mount":"proj","type":"claimed"}}"#)
    );
    // Silent commands write no event.
    for cmd in [
        format!("unclaim {parent}"),
        format!("defer {blocked}"),
        format!("open {blocked}"),
        format!("reopen {blocked}"),
        format!("undep {blocked} {parent}"),
        format!("dep {blocked} {parent}"),
        format!("update {blocked} title Renamed"),
    ] {
        t.ctl("proj", &cmd);
    }
    assert_eq!(t.beads.events(), events, "no event for silent commands");
    // `update` refuses status and assignee; the writer never hears (9pfuse).
    t.write("proj/ctl", &format!("update {blocked} status closed"));
    assert!(t.beads.errors()[0].contains("update cannot change status"));
    // The events file: stat reports its length, a read gives it all.
    let meta = fs::metadata(root.join("events")).unwrap();
    assert_eq!(meta.len(), events.len() as u64);
    assert_eq!(meta.permissions().mode() & 0o777, 0o444);
    assert_eq!(
        fs::metadata(root.join("proj/ctl"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o222
    );
    assert_eq!(fs::read_to_string(root.join("events")).unwrap(), events);
    // A bead file; a closed bead is readable but not listed.
    let bead = fs::read_to_string(root.join("proj").join(&blocked)).unwrap();
    assert!(
        bead.starts_with(&format!(
            "---\nid: {blocked}\ntitle: Renamed\nstatus: open\n"
        )),
        "{bead}"
    );
    assert!(
        bead.contains(&format!("blockers: [{parent}]\n---\n")),
        "{bead}"
    );
    t.ctl("proj", &format!("complete {blocked}"));
    assert!(fs::read_to_string(root.join("proj").join(&blocked)).is_ok());
    let names: Vec<String> = fs::read_dir(root.join("proj"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.contains(&blocked) && names.contains(&parent),
        "{names:?}"
    );
    // Restart: the log and the mount table are empty, the store is kept.
    t.beads.restart();
    assert_eq!(fs::read_to_string(root.join("events")).unwrap(), "");
    assert!(fs::metadata(root.join("proj")).is_err());
    t.write("ctl", &format!("mount {cwd} proj"));
    assert_eq!(t.id_of("proj", "Parent task"), parent);
    t.write("ctl", "umount proj");
    assert!(t
        .beads
        .events()
        .ends_with("{\"name\":\"proj\",\"type\":\"umount\"}\n"));
}
