//! The README's quick start, run as written (with the built binary for
//! `cargo run --release --`): it must not take a baseline for the
//! example's project in the user's real state directory, which would make
//! the later, real first start of that project announce nothing.

use std::fs;
use std::path::Path;
use std::process::Stdio;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::util::daemon::{bin, WAIT};
use crate::util::launch::command_for;
use crate::util::wait_until;

/// The first command of the README's quick start.
fn quick_start_command() -> String {
    let readme = include_str!("../../README.md");
    let section = &readme[readme.find("## Quick start").expect("a quick start")..];
    let block = &section[section.find("```sh\n").expect("a sh block") + 6..];
    block.lines().next().unwrap().to_string()
}

#[test]
fn the_quick_start_records_no_baseline_in_the_real_state_directory() {
    let line = quick_start_command();
    let cargo = "cargo run --release --";
    assert!(line.contains(cargo), "{line}");
    let home = tempfile::tempdir().unwrap();
    let tmp = home.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let log = home.path().join("daemon.log");
    // The shell line as a user types it.
    let script = line.replace(cargo, bin());
    let child = command_for(Path::new("/bin/sh"))
        .args(["-c", &script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HOME", home.path())
        .env("TMPDIR", &tmp)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut shell = Shell(child);
    let ready = wait_until("the quick-start daemon to be ready", WAIT, || {
        let text = fs::read_to_string(&log).ok()?;
        text.contains("ready:").then_some(text)
    });
    // The daemon (the shell's child, or the shell itself) holds the lock
    // of whichever state directory it used: stopped before any verdict.
    let real = home.path().join(".local/state/reveille/myproj");
    let made: Vec<_> = fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let lock = made
        .iter()
        .chain([&real])
        .map(|d| d.join("lock"))
        .find(|l| l.exists());
    let pid: i32 = fs::read_to_string(lock.expect("a state directory with a lock"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    kill(Pid::from_raw(pid), Signal::SIGTERM).unwrap();
    let status = shell.0.wait().unwrap();
    assert!(status.success(), "{status}: {ready}");
    assert!(
        !real.exists(),
        "the quick start took a baseline in {}",
        real.display()
    );
    assert_eq!(made.len(), 1, "{ready}");
    // Its state went to the throw-away directory, and the journal said so.
    assert!(made[0].join("state.json").exists(), "{ready}");
    assert!(
        ready.contains(&format!(
            "first start: state directory {} created",
            made[0].display()
        )),
        "{ready}"
    );
}

/// The shell running the quick start, killed if the test fails early.
struct Shell(std::process::Child);

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
