//! Telling the person (`[notify]`, SPEC §12): each notice the engine
//! gives — a session waiting for a person, that wait resolved — is run
//! through the configured command, with the notice in its environment.
//!
//! One worker thread runs them, in the order given, so a `resolved` never
//! overtakes its `waiting`; the daemon only hands a notice over and never
//! waits. A command that cannot start, fails or hangs is logged; one still
//! running after [`KILL_AFTER`] is killed with its whole process group, so
//! a hung notifier delays only the notices after it, never a delivery.

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::config::{Desktop as DesktopSetting, Settings};
use crate::core::effect::Notice;
use crate::core::source::Source;
use crate::shell::desktop::{Desktop, Notifier, Shown};

/// How long a notify command may run.
pub const KILL_AFTER: Duration = Duration::from_secs(10);

/// How often a running command is looked at.
const POLL: Duration = Duration::from_millis(20);

/// One notice as the command gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub argv: Vec<String>,
    pub env: Vec<(&'static str, String)>,
}

/// The environment of a notice's command (SPEC §12).
pub fn environment(project: &str, n: &Notice) -> Vec<(&'static str, String)> {
    vec![
        ("REVEILLE_PROJECT", project.to_string()),
        ("REVEILLE_SESSION", n.session.clone()),
        ("REVEILLE_EVENT", n.event.name().to_string()),
        ("REVEILLE_SUMMARY", n.summary.clone()),
        ("REVEILLE_BODY", n.body.clone()),
        (
            "REVEILLE_PLAN",
            n.plan
                .as_ref()
                .map(|p| Source::journal_name(p).into_owned())
                .unwrap_or_default(),
        ),
        ("REVEILLE_STEP", n.step.clone().unwrap_or_default()),
    ]
}

/// The daemon's notifier: a channel to the command's worker, started with
/// the first notice that has a command to run, and one to the desktop's
/// (its own thread, so a hung command never holds a desktop notification
/// back, nor the other way round).
#[derive(Default)]
pub struct Notices {
    worker: Option<mpsc::Sender<Job>>,
    desktop: Option<mpsc::Sender<Shown>>,
}

impl Notices {
    /// Tell the person `notice`, as `settings` say; returns at once.
    pub fn tell(&mut self, settings: &Settings, notice: &Notice) {
        let argv = &settings.notify.command;
        if !argv.is_empty() {
            let job = Job {
                argv: argv.clone(),
                env: environment(&settings.project.name, notice),
            };
            send(&mut self.worker, job, start_worker);
        }
        let desktop = match settings.notify.desktop {
            DesktopSetting::Off => false,
            DesktopSetting::On => true,
            DesktopSetting::Auto => Desktop::bus_present(),
        };
        if desktop {
            let shown = Shown::of(&settings.project.name, notice);
            send(&mut self.desktop, shown, start_desktop);
        }
    }
}

/// Hand `item` to the worker behind `slot`, starting it if need be.
fn send<T>(slot: &mut Option<mpsc::Sender<T>>, item: T, start: fn() -> mpsc::Sender<T>) {
    let worker = slot.get_or_insert_with(start);
    if let Err(mpsc::SendError(item)) = worker.send(item) {
        // The worker is gone (it cannot panic but by a bug): a new one.
        let fresh = start();
        let _ = fresh.send(item);
        *slot = Some(fresh);
    }
}

fn start_worker() -> mpsc::Sender<Job> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("reveille-notify".into())
        .spawn(move || {
            for job in rx {
                run(&job);
            }
        })
        .expect("a thread for the notify command");
    tx
}

fn start_desktop() -> mpsc::Sender<Shown> {
    let (tx, rx) = mpsc::channel::<Shown>();
    std::thread::Builder::new()
        .name("reveille-desktop".into())
        .spawn(move || {
            let mut notifier = Notifier::default();
            for shown in rx {
                notifier.tell(&shown);
            }
        })
        .expect("a thread for desktop notifications");
    tx
}

/// Run one job to its end (or kill it), and log what went wrong.
pub fn run(job: &Job) {
    let program = &job.argv[0];
    let event = job
        .env
        .iter()
        .find(|(k, _)| *k == "REVEILLE_EVENT")
        .map(|(_, v)| v.as_str());
    let session = job
        .env
        .iter()
        .find(|(k, _)| *k == "REVEILLE_SESSION")
        .map(|(_, v)| v.as_str());
    match run_bounded(job, KILL_AFTER) {
        Ok(status) if status.success() => {
            tracing::debug!(
                SESSION = session,
                "notify command {program} told {}",
                event.unwrap_or("")
            );
        }
        Ok(status) => tracing::warn!(
            SESSION = session,
            "notify command {program} failed telling {}: {status}",
            event.unwrap_or("")
        ),
        Err(why) => tracing::warn!(
            SESSION = session,
            "notify command {program} telling {}: {why}",
            event.unwrap_or("")
        ),
    }
}

/// Run `job`; its exit status, or why there is none (it could not start,
/// or ran past `limit` and was killed).
pub fn run_bounded(job: &Job, limit: Duration) -> Result<ExitStatus, String> {
    let mut child = Command::new(&job.argv[0])
        .args(&job.argv[1..])
        .envs(job.env.iter().map(|(k, v)| (*k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        // Its own process group, so a kill reaches what it started.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("could not be started: {e}"))?;
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                // SAFETY: kill(2) on the child's own process group.
                unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
                let _ = child.wait();
                return Err(format!("still running after {limit:?}: killed"));
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => return Err(format!("cannot be waited for: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(script: &str) -> Job {
        Job {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            env: vec![("REVEILLE_EVENT", "waiting".into())],
        }
    }

    #[test]
    fn a_command_gets_the_notice_in_its_environment() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("env");
        let j = job(&format!("echo \"$REVEILLE_EVENT\" > {}", out.display()));
        assert!(run_bounded(&j, KILL_AFTER).unwrap().success());
        assert_eq!(std::fs::read_to_string(out).unwrap(), "waiting\n");
    }

    #[test]
    fn a_hung_command_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let pid = dir.path().join("pid");
        let j = job(&format!("sleep 300 & echo $! > {}; wait", pid.display()));
        let why = run_bounded(&j, Duration::from_millis(300)).unwrap_err();
        assert!(why.contains("killed"), "{why}");
        let pid: i32 = std::fs::read_to_string(pid)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        gone(pid);
    }

    #[test]
    fn a_missing_program_is_said_in_words() {
        let j = Job {
            argv: vec!["/nonexistent/notifier".into()],
            env: vec![],
        };
        let why = run_bounded(&j, KILL_AFTER).unwrap_err();
        assert!(why.contains("could not be started"), "{why}");
    }

    /// Wait until `pid` is gone or dead (a zombie its new parent has not
    /// reaped yet counts as dead).
    fn gone(pid: i32) {
        let until = Instant::now() + Duration::from_secs(10);
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit(") ").next().is_some_and(|r| !r.starts_with('Z')))
        };
        while alive() {
            assert!(
                Instant::now() < until,
                "the grandchild {pid} outlived the kill"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
