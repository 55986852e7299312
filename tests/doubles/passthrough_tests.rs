//! The passthrough mount (`doubles::passthrough`): it serves the directory
//! it covers, changes made through it reach that directory, an inotify
//! watch on it sees another process's writes, and a fault fails the reads
//! of one process only, until healed.

use std::io::{ErrorKind, Write};
use std::process::Command;
use std::time::Duration;

use reveille::shell::inotify::{Inotify, Mask};

use crate::doubles::fuse::fuse_unavailable;
use crate::doubles::passthrough::Passthrough;
use crate::util::wait_until;

/// A shell command's standard output; panics when it fails.
fn sh(script: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(script).output().unwrap();
    assert!(out.status.success(), "{script}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_covered_directory_is_served_and_changed_through_the_mount() {
    if let Some(why) = fuse_unavailable() {
        return eprintln!("skipped: {why}");
    }
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("projects");
    std::fs::create_dir_all(dir.join("p")).unwrap();
    std::fs::write(dir.join("p/s.jsonl"), "one\n").unwrap();
    let mount = Passthrough::over(&dir).unwrap();
    // The root answers as the directory it is (the kernel takes a root
    // whose type changes for a bad inode: EIO for everything after).
    assert!(std::fs::metadata(&dir).unwrap().is_dir());
    let file = dir.join("p/s.jsonl");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n");
    let mut append = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    append.write_all(b"two\n").unwrap();
    drop(append);
    std::fs::create_dir(dir.join("q")).unwrap();
    std::fs::write(dir.join("q/new"), "x").unwrap();
    std::fs::rename(dir.join("q/new"), dir.join("q/renamed")).unwrap();
    assert_eq!(sh(&format!("ls {}", dir.join("q").display())), "renamed\n");
    drop(mount);
    // What was written through the mount is in the directory it covered.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n");
    assert_eq!(std::fs::read_to_string(dir.join("q/renamed")).unwrap(), "x");
}

#[test]
fn a_watch_on_the_mount_sees_another_process_write_through_it() {
    if let Some(why) = fuse_unavailable() {
        return eprintln!("skipped: {why}");
    }
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("projects");
    std::fs::create_dir_all(dir.join("p")).unwrap();
    let _mount = Passthrough::over(&dir).unwrap();
    let mut inotify = Inotify::new().unwrap();
    inotify.add(&dir.join("p"), Mask::FILES).unwrap();
    sh(&format!("echo line >> {}", dir.join("p/s.jsonl").display()));
    let mut names = Vec::new();
    wait_until("an event for s.jsonl", Duration::from_secs(10), || {
        inotify
            .read(|e| names.extend(e.name.map(|n| n.to_os_string())))
            .unwrap();
        names.iter().any(|n| n == "s.jsonl").then_some(())
    });
}

#[test]
fn reads_fail_for_one_process_until_healed() {
    if let Some(why) = fuse_unavailable() {
        return eprintln!("skipped: {why}");
    }
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("projects");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s.jsonl"), "one\n").unwrap();
    std::fs::write(dir.join("other"), "two\n").unwrap();
    let mount = Passthrough::over(&dir).unwrap();
    mount.fail_reads(std::process::id(), ".jsonl");
    let err = std::fs::read_to_string(dir.join("s.jsonl")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    assert_ne!(err.kind(), ErrorKind::NotFound);
    // Its stat still answers, other files read, other processes read.
    assert_eq!(std::fs::metadata(dir.join("s.jsonl")).unwrap().len(), 4);
    assert_eq!(std::fs::read_to_string(dir.join("other")).unwrap(), "two\n");
    let s = dir.join("s.jsonl").display().to_string();
    assert_eq!(sh(&format!("cat {s}")), "one\n");
    sh(&format!("echo more >> {s}"));
    assert_eq!(mount.failed(), 1);
    mount.heal();
    assert_eq!(std::fs::read_to_string(&s).unwrap(), "one\nmore\n");
}
