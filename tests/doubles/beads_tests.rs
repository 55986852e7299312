//! The 9beads double (`doubles::beads`) through its FUSE mount and plain
//! `std::fs`, checked against what 9beads' `p9/server.go` at HEAD does:
//! random mount names and `mtab`, no `ctl`, the write-only files acting at
//! close with their errors unseen, the events they append (sorted keys, and
//! none for the silent ones), claimed beads in `ready`, list rows, bead
//! files and `updated`, stat sizes and modes, a restart that forgets every
//! mount and empties `events`.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::doubles::beads::Beads;
use crate::doubles::fuse::fuse_unavailable;

/// Longer than the kernel's entry cache (1 s, as 9pfuse's `entrytimeout`).
const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn mode(path: &std::path::Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_9beads_double_mounts_a_directory_under_a_random_name_and_forgets_it_at_a_restart() {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let t = Beads::mount().unwrap();
    let root = t.root();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    fs::create_dir(&a).unwrap();
    fs::create_dir(&b).unwrap();
    let name = t.mount_dir(&a);
    assert!(
        name.len() == 8 && name.chars().all(|c| c.is_ascii_hexdigit()),
        "{name}"
    );
    let other = t.mount_dir(&b);
    assert_ne!(name, other);
    let mtab = fs::read_to_string(root.join("mtab")).unwrap();
    let mut lines: Vec<&str> = mtab.lines().collect();
    lines.sort();
    let mut want = vec![
        format!("{name}\t{}", a.display()),
        format!("{other}\t{}", b.display()),
    ];
    want.sort();
    assert_eq!(lines, want);
    assert_eq!(
        fs::read_to_string(root.join(&name).join("cwd")).unwrap(),
        format!("{}\n", a.display())
    );
    // The mount event: Go's sorted keys.
    let first = t.beads.events().lines().next().unwrap().to_string();
    assert_eq!(
        first,
        format!(
            r#"{{"cwd":"{}","name":"{name}","type":"mount"}}"#,
            a.display()
        )
    );
    // Mounting a directory twice, or one that does not exist, is refused,
    // and the writer never hears of it (close returns 0).
    t.write("mount", &a.display().to_string());
    t.write("mount", "/no/such/dir");
    let errors = t.beads.errors();
    assert!(
        errors[0].contains(&format!("path already mounted as {name}")),
        "{errors:?}"
    );
    assert!(errors[1].contains("directory does not exist"), "{errors:?}");
    // There is no ctl, at the root or in a mount.
    assert!(fs::metadata(root.join("ctl")).is_err());
    assert!(fs::metadata(root.join(&name).join("ctl")).is_err());
    assert_eq!(mode(&root.join("mount")), 0o222);
    assert_eq!(mode(&root.join("mtab")), 0o444);
    // A bead survives a restart; the mount and the log do not, and the
    // same directory mounted again has a new name.
    let id = t.new_bead(&name, "Survives", "");
    t.beads.stop();
    // Down: no files (the kernel may show a looked-up entry for its second
    // of entry cache; reading one fails).
    assert!(fs::read(root.join("mtab")).is_err());
    crate::util::wait_until("the stopped 9beads's files to go", WAIT, || {
        (fs::metadata(root.join("events")).is_err() && fs::metadata(root.join("mtab")).is_err())
            .then_some(())
    });
    t.beads.start();
    assert_eq!(fs::read_to_string(root.join("events")).unwrap(), "");
    assert_eq!(fs::read_to_string(root.join("mtab")).unwrap(), "");
    assert!(fs::metadata(root.join(&name)).is_err());
    let again = t.mount_dir(&a);
    assert_ne!(again, name);
    assert_eq!(t.id_of(&again, "Survives"), id);
    // umount by cwd or name.
    t.mount_dir(&b);
    t.write("umount", &b.display().to_string());
    assert!(t.beads.errors().len() == 2, "{:?}", t.beads.errors());
    assert!(t.name_of(&b).is_none());
    t.write("umount", &again);
    assert!(t
        .beads
        .events()
        .ends_with(&format!("{{\"name\":\"{again}\",\"type\":\"umount\"}}\n")));
}

#[test]
fn the_9beads_double_resolves_a_directory_against_its_project_dirs() {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let dirs = tempfile::tempdir().unwrap();
    let proj = dirs.path().join("proj");
    fs::create_dir_all(proj.join("sub/deeper")).unwrap();
    let t = Beads::mount_with_project_dirs(&[dirs.path()]).unwrap();
    // Two levels below: mounted as the project one level below.
    t.write("mount", &proj.join("sub").display().to_string());
    assert!(t.beads.errors().is_empty(), "{:?}", t.beads.errors());
    assert!(t.name_of(&proj).is_some());
    // Deeper, or outside every project dir: refused.
    t.write("mount", &proj.join("sub/deeper").display().to_string());
    t.write("mount", "/tmp");
    let errors = t.beads.errors();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors.iter().all(|e| e.contains("at most 1 level below")),
        "{errors:?}"
    );
}

#[test]
fn the_9beads_double_serves_what_9beads_serves() {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let t = Beads::mount().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let m = t.mount_dir(cwd.path());
    let root = t.root();
    // `new` takes front matter; the id is found in list.
    let parent = t.new_bead(&m, "Parent task", "");
    let child = t.new_bead(&m, "Child", &format!("parent: {parent}"));
    assert_eq!(child, format!("{parent}.1"));
    let blocked = t.new_bead(&m, "Blocked one", &format!("blockers: [{parent}]"));
    let later = t.new_bead(&m, "Deferred", "");
    t.write(&format!("{m}/new"), "---\nstatus: open\n---\n");
    assert!(t.beads.errors()[0].contains("title is required"));
    assert!(fs::read_to_string(root.join(&m).join("new"))
        .unwrap()
        .starts_with("---\ntitle: \"\"\n"));
    // Rows: `-` for no dependencies and no assignee, YYYY-MM-DD.
    let list = fs::read_to_string(root.join(&m).join("list")).unwrap();
    let rows: Vec<Vec<&str>> = list.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 4, "{list}");
    assert_eq!(&rows[0][..4], [parent.as_str(), "open", "-", "-"]);
    assert_eq!(
        rows[1][2], "1",
        "the child counts its parent-child dependency"
    );
    let date = rows[0][4];
    assert!(date.len() == 10 && date.as_bytes()[4] == b'-', "{date}");
    let ready = fs::read_to_string(root.join(&m).join("ready")).unwrap();
    assert_eq!(
        ready.lines().count(),
        3,
        "the blocked bead is not ready: {ready}"
    );
    assert_eq!(
        fs::read_to_string(root.join("ready")).unwrap(),
        ready,
        "root = all mounts"
    );
    assert!(fs::metadata(root.join("list")).is_err(), "no root list");
    // A claim: in_progress, the assignee in its row, *still in ready*
    // (GetReadyWork with an empty filter); the event names no assignee.
    t.cmd(&m, "claim", &format!("{parent} assignee=agent-1"));
    let row = format!("{parent}\tin_progress\t-\tagent-1\t");
    let ready = fs::read_to_string(root.join(&m).join("ready")).unwrap();
    assert!(ready.contains(&row), "{ready}");
    // A bare second word is ignored: the claimer is `9beads`.
    t.cmd(&m, "claim", &format!("{child} agent-2"));
    let list = fs::read_to_string(root.join(&m).join("list")).unwrap();
    assert!(
        list.contains(&format!("{child}\tin_progress\t1\t9beads\t")),
        "{list}"
    );
    let events = t.beads.events();
    let lines: Vec<&str> = events.lines().collect();
    assert_eq!(
        lines[1],
        format!(r#"{{"id":"{parent}","mount":"{m}","type":"created"}}"#)
    );
    assert_eq!(
        lines[5],
        format!(r#"{{"id":"{parent}","mount":"{m}","type":"claimed"}}"#)
    );
    // Silent endpoints write no event.
    for (file, args) in [
        ("unclaim", parent.clone()),
        ("defer", format!("{later} until=2099-01-01T00:00:00Z")),
        ("reopen", later.clone()),
        ("open", blocked.clone()),
        ("undep", format!("{blocked} {parent}")),
        ("dep", format!("{blocked} {parent}")),
        ("label", format!("{blocked} area:docs")),
        ("relate", format!("{blocked} {child}")),
    ] {
        t.cmd(&m, file, &args);
    }
    assert_eq!(t.beads.events(), events, "no event for silent commands");
    // Deferred until a future date, reopened: still not ready.
    let ready = fs::read_to_string(root.join(&m).join("ready")).unwrap();
    assert!(!ready.contains(&later), "{ready}");
    // Errors never reach the writer: an unknown id, a missing argument.
    t.write(&format!("{m}/complete"), "bd-nope");
    t.write(&format!("{m}/dep"), &blocked);
    let errors = t.beads.errors();
    assert!(errors[1].contains("issue bd-nope not found"), "{errors:?}");
    assert!(errors[2].contains("second argument required"), "{errors:?}");
    // The events file: stat reports its length, a read gives it all.
    let meta = fs::metadata(root.join("events")).unwrap();
    assert_eq!(meta.len(), events.len() as u64);
    assert_eq!(mode(&root.join("events")), 0o444);
    for f in ["claim", "complete", "unclaim", "defer", "init", "delete"] {
        assert_eq!(mode(&root.join(&m).join(f)), 0o222, "{f}");
        assert_eq!(fs::metadata(root.join(&m).join(f)).unwrap().len(), 0);
    }
    assert_eq!(mode(&root.join(&m).join("new")), 0o666);
    assert_eq!(fs::read_to_string(root.join("events")).unwrap(), events);
    // A bead file; written with front matter it is `updated` (title,
    // status, labels, blockers); without, only the description, silently.
    let path = root.join(&m).join(&blocked);
    let bead = fs::read_to_string(&path).unwrap();
    assert!(
        bead.starts_with(&format!("---\nid: {blocked}\ntitle: Blocked one\n")),
        "{bead}"
    );
    assert!(
        bead.contains(&format!("blockers: [{parent}]\n---\n")),
        "{bead}"
    );
    t.write(&format!("{m}/{blocked}"), "just a description");
    assert_eq!(t.beads.events(), events);
    t.write(
        &format!("{m}/{blocked}"),
        "---\ntitle: \"Retitled\\tnow\"\nstatus: open\nblockers: []\n---\nbody\n",
    );
    let last = t.beads.events().lines().last().unwrap().to_string();
    assert_eq!(
        last,
        format!(r#"{{"id":"{blocked}","mount":"{m}","type":"updated"}}"#)
    );
    let ready = fs::read_to_string(root.join(&m).join("ready")).unwrap();
    assert!(
        ready.contains(&format!("{blocked}\topen\t")),
        "unblocked: {ready}"
    );
    assert!(ready.contains("Retitled\tnow"), "{ready}");
    // A front-matter write without a title empties it (9beads sets it).
    t.write(&format!("{m}/{blocked}"), "---\nstatus: open\n---\n");
    let bead = fs::read_to_string(&path).unwrap();
    assert!(bead.contains("\ntitle: \"\"\n"), "{bead}");
    // Complete, fail, delete: events; a closed bead is readable, not listed.
    t.cmd(&m, "complete", &blocked);
    t.cmd(&m, "fail", &format!("{child} reason=flaky"));
    t.cmd(&m, "delete", &parent);
    let tail: Vec<String> = t
        .beads
        .events()
        .lines()
        .rev()
        .take(3)
        .map(String::from)
        .collect();
    assert_eq!(
        tail,
        [
            format!(r#"{{"id":"{parent}","mount":"{m}","type":"deleted"}}"#),
            format!(r#"{{"id":"{child}","mount":"{m}","type":"failed"}}"#),
            format!(r#"{{"id":"{blocked}","mount":"{m}","type":"completed"}}"#),
        ]
    );
    assert!(fs::read_to_string(&path).is_ok());
    let names: Vec<String> = fs::read_dir(root.join(&m))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.contains(&blocked) && names.contains(&"claim".to_string()),
        "{names:?}"
    );
    assert!(!names.contains(&"ctl".to_string()), "{names:?}");
}
