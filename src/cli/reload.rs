//! `reveille reload`: ask the running daemon of a project to re-read its
//! configuration and wait for its answer. The daemon's pid is in its state
//! directory's lock; SIGHUP asks; `reload.json` answers (the daemon writes
//! it after every reload). A refused reload is said with its reason and
//! exits non-zero (78 for a configuration error), so the unit's
//! `ExecReload=`, and with it `systemctl reload`, fails visibly.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use reveille::config::{self, LoadOptions};
use reveille::shell::reload_report::{self, Cause, Outcome, Report};
use reveille::shell::status::running_pid;

use super::args::ConfigFlags;
use super::exit;
use super::output::{print, warn};

/// How long the daemon may take to answer: a reload re-reads every plan
/// when the roots moved, which is quick, but a loaded machine is slow.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// `reveille reload [--config FILE] [--project NAME]`.
pub fn run(flags: &ConfigFlags) -> anyhow::Result<ExitCode> {
    // The state directory of the configuration as it is now: the file may
    // have gone bad (that is what a reload will find out), so its problems
    // are the daemon's to report, and the keys at fault fall back.
    let (loaded, _) = config::load_salvaged(&LoadOptions {
        config: flags.config.clone(),
        project: flags.project.clone(),
        env: None,
    });
    let Some(loaded) = loaded else {
        bail!("no usable configuration to find the daemon by");
    };
    let (project, dir) = (&loaded.settings.project.name, &loaded.settings.state.dir);
    let Some(pid) = running_pid(dir) else {
        bail!(
            "no daemon of project {project:?} is running (no live pid in {})",
            dir.join("lock").display()
        );
    };
    // Until its first answer the daemon may still be starting, and a
    // SIGHUP before it listens for one would end it.
    let before = wait_for(dir, pid, "to finish starting", |_| true)?;
    kill(Pid::from_raw(pid as i32), Signal::SIGHUP)
        .with_context(|| format!("cannot signal the daemon (pid {pid})"))?;
    let answer = wait_for(dir, pid, "to answer the reload", |r| r.seq > before.seq)?;
    match answer.outcome {
        Outcome::Reloaded => print(&format!(
            "reloaded: project {project} runs the new configuration (pid {pid})\n"
        ))?,
        Outcome::Unchanged | Outcome::Started => print(&format!(
            "reloaded: the configuration of project {project} is unchanged (pid {pid})\n"
        ))?,
        Outcome::Refused { cause, error } => {
            warn(format!(
                "reload refused: the daemon of project {project} (pid {pid}) keeps running the previous configuration: {error}"
            ));
            return Ok(match cause {
                Cause::Configuration => ExitCode::from(exit::CONFIG),
                Cause::Watch => ExitCode::FAILURE,
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Polls `reload.json` until the daemon `pid` wrote a report `done` says
/// answers, or the daemon is gone, or [`ANSWER_WITHIN`] has passed.
fn wait_for(
    dir: &Path,
    pid: u32,
    what: &str,
    done: impl Fn(&Report) -> bool,
) -> anyhow::Result<Report> {
    let deadline = Instant::now() + ANSWER_WITHIN;
    let mut delay = Duration::from_millis(2);
    loop {
        if let Some(r) = reload_report::read(dir).filter(|r| r.pid == pid && done(r)) {
            return Ok(r);
        }
        if running_pid(dir) != Some(pid) {
            bail!("the daemon (pid {pid}) stopped before it answered");
        }
        if Instant::now() >= deadline {
            bail!(
                "the daemon (pid {pid}) did not write {} {what} within {ANSWER_WITHIN:?}",
                dir.join(reload_report::FILE).display()
            );
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(50));
    }
}
