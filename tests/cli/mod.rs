//! The command line as a user meets it: output that survives a closed
//! pipe and a full disk, `status` and `check` that say what they looked
//! at, configuration errors all at once, `why`, and plan files ignored for
//! their names, and the live view of `status --watch`. Every test runs the
//! real binary.

mod demo;
mod manners;
mod names;
mod project;
mod quickstart;
mod reload;
mod watch;
mod why;
mod wording;

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::util::daemon::{command, WAIT};

/// `cmd` run with its stdout going to `out`, bounded by `WAIT`.
pub fn run_into(mut cmd: Command, out: Stdio) -> Output {
    let child = cmd
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn reveille");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    rx.recv_timeout(WAIT)
        .unwrap_or_else(|_| {
            // SAFETY: plain kill(2) of the child we spawned.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("reveille did not exit within {WAIT:?}")
        })
        .expect("wait for reveille")
}

/// A stdout whose reader has already gone: every write fails with EPIPE.
pub fn closed_pipe() -> Stdio {
    let (read, write): (OwnedFd, OwnedFd) = nix::unistd::pipe().expect("pipe");
    drop(read);
    Stdio::from(write)
}

/// A stdout on `/dev/full`: every write fails with ENOSPC.
pub fn full_disk() -> Stdio {
    Stdio::from(
        File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full"),
    )
}

/// `reveille <args>` with `HOME` in `home` and no XDG variables, so the
/// default configuration and state paths are inside the test's own dir.
pub fn at_home(home: &Path, args: &[&str]) -> Command {
    let mut cmd = command();
    cmd.args(args).env("HOME", home);
    for var in ["XDG_CONFIG_HOME", "XDG_STATE_HOME"] {
        cmd.env_remove(var);
    }
    cmd
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
