//! Enqueue files that are not a reader's FIFO: a symlink out of the roots,
//! a directory, a regular file, a missing file, a read-only file.

use std::fs;
use std::os::unix::fs::symlink;
use std::process::Command;

use super::world::{World, GOOD, WAIT};
use crate::util::fifo::{mkfifo, Reader};
use crate::util::plans::{fresh_uid, plan_name};

/// A plan routed to `session` whose first step is titled `title`.
fn plan_for(w: &mut World, session: &str, title: &str) {
    w.write_plan(
        &plan_name(fresh_uid(), "to"),
        format!(
            "# Goal for {session}\n<!-- session: {session} -->\n\n- [ ] {title}\n- [ ] later\n"
        ),
    );
}

#[test]
fn symlinked_enqueue_files_and_session_dirs_are_never_written_through() {
    let mut w = World::new();
    let good = w.fifo_session(GOOD);
    // sessions/link/fifo.in -> outside/fifo.in (regular file)
    let dir = w.session_dir("link");
    symlink(w.outside.join("fifo.in"), dir.join("fifo.in")).unwrap();
    w.made(&dir.join("fifo.in"));
    // sessions/linkpipe/fifo.in -> outside/pipe (a FIFO with a reader)
    let dir = w.session_dir("linkpipe");
    symlink(w.outside.join("pipe"), dir.join("fifo.in")).unwrap();
    w.made(&dir.join("fifo.in"));
    let outside_pipe = Reader::open(&w.outside.join("pipe"));
    // sessions/linkdir -> outside/s (holding a regular fifo.in)
    symlink(w.outside.join("s"), w.sessions_dir.join("linkdir")).unwrap();
    let linkdir = w.sessions_dir.join("linkdir");
    w.made(&linkdir);
    let d = w.start();
    plan_for(&mut w, "link", "via file link");
    plan_for(&mut w, "linkpipe", "via pipe link");
    plan_for(&mut w, "linkdir", "via dir link");
    d.wait_log("never writes through symlinks", WAIT);
    crate::util::wait_until("all three refused", WAIT, || {
        (d.log_count("cannot deliver to session") >= 3).then_some(())
    });
    w.assert_alive(&good);
    assert!(
        outside_pipe.texts().is_empty(),
        "wrote through a symlink to a FIFO"
    );
    assert_eq!(fs::read(w.outside.join("s").join("fifo.in")).unwrap(), b"");
    // Refused once per session, not once per retry; kept pending.
    for s in ["link", "linkpipe", "linkdir"] {
        let lines = d.lines_with(&format!("session=\"{s}\""));
        let refusals = lines
            .iter()
            .filter(|l| l.contains("cannot deliver"))
            .count();
        assert_eq!(refusals, 1, "{s}: {lines:#?}");
    }
    d.assert_running();
    w.assert_contained();
}

#[test]
fn a_directory_or_a_missing_enqueue_file_keeps_the_prompt_until_a_fifo_appears() {
    let mut w = World::new();
    let good = w.fifo_session(GOOD);
    let dir = w.session_dir("isdir");
    fs::create_dir(dir.join("fifo.in")).unwrap();
    w.made(&dir.join("fifo.in"));
    let missing = w.session_dir("missing");
    let d = w.start();
    plan_for(&mut w, "isdir", "into a directory");
    plan_for(&mut w, "missing", "into nothing yet");
    d.wait_log("is a directory", WAIT);
    d.wait_log("no enqueue file", WAIT);
    w.assert_alive(&good);
    // Replace the directory by a FIFO, create the missing one: delivered.
    fs::remove_dir(dir.join("fifo.in")).unwrap();
    mkfifo(&dir.join("fifo.in"));
    let isdir = Reader::open(&dir.join("fifo.in"));
    mkfifo(&missing.join("fifo.in"));
    w.made(&missing.join("fifo.in"));
    let late = Reader::open(&missing.join("fifo.in"));
    isdir.wait_for("into a directory", WAIT);
    late.wait_for("into nothing yet", WAIT);
    assert_eq!(isdir.texts().len(), 1);
    assert_eq!(late.texts().len(), 1);
    assert_eq!(d.log_count("is a directory"), 1, "{}", d.log());
    d.assert_running();
    w.assert_contained();
}

#[test]
fn a_regular_enqueue_file_gets_whole_prompts_with_message_framing() {
    let mut w = World::new();
    let good = w.fifo_session(GOOD);
    let dir = w.session_dir("plain");
    let file = dir.join("fifo.in");
    fs::write(&file, "").unwrap();
    w.made(&file);
    let d = w.start();
    // Two plans, two prompts, one after the other.
    plan_for(
        &mut w,
        "plain",
        "first prompt into a regular file, rather long",
    );
    crate::util::wait_until("the first prompt", WAIT, || {
        let t = fs::read_to_string(&file).unwrap();
        t.contains("rather long").then_some(())
    });
    plan_for(&mut w, "plain", "second");
    crate::util::wait_until("the second prompt", WAIT, || {
        let t = fs::read_to_string(&file).unwrap();
        t.contains("ready: second").then_some(())
    });
    let text = fs::read_to_string(&file).unwrap();
    // message framing: no NUL, no JSON; both prompts whole, in order.
    assert!(!text.contains('\0'), "{text:?}");
    let first = text
        .find("rather long")
        .expect("first prompt lost or overwritten");
    let second = text.find("ready: second").unwrap();
    assert!(first < second, "{text}");
    assert_eq!(text.matches("[reveille] Step").count(), 2, "{text}");
    w.assert_alive(&good);
    d.assert_running();
    w.assert_contained();
}

/// Root ignores file modes, so "unwritable" is made with a read-only bind
/// mount of the session directory.
#[test]
fn a_read_only_enqueue_file_keeps_the_prompt_until_it_is_writable() {
    let mut w = World::new();
    let good = w.fifo_session(GOOD);
    let dir = w.session_dir("ro");
    let file = dir.join("fifo.in");
    fs::write(&file, "").unwrap();
    w.made(&file);
    let mount = |args: &[&str]| {
        Command::new("mount")
            .args(args)
            .status()
            .is_ok_and(|s| s.success())
    };
    let d = dir.display().to_string();
    if !(mount(&["--bind", &d, &d]) && mount(&["-o", "remount,bind,ro", &d])) {
        let _ = Command::new("umount").arg(&d).status();
        eprintln!("SKIPPED: cannot make a read-only bind mount here (not root or no CAP_SYS_ADMIN); chmod 000 does not stop root");
        return;
    }
    struct Unmount(String);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let guard = Unmount(d);
    assert!(
        fs::OpenOptions::new().write(true).open(&file).is_err(),
        "still writable"
    );
    let daemon = w.start();
    plan_for(&mut w, "ro", "onto read-only");
    let line = daemon.wait_log("Read-only file system", WAIT);
    assert!(line.contains("session=\"ro\""), "{line}");
    w.assert_alive(&good);
    drop(guard);
    crate::util::wait_until("delivery once writable", WAIT, || {
        fs::read_to_string(&file)
            .unwrap()
            .contains("onto read-only")
            .then_some(())
    });
    assert_eq!(
        daemon.log_count("Read-only file system"),
        1,
        "{}",
        daemon.log()
    );
    daemon.assert_running();
    w.assert_contained();
}
