//! Which project `status`, `why` and `ready` are about when no flag says:
//! the only configured project; with several, the one whose plan
//! directory holds the file, and for `status` a message naming them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use super::{at_home, run_into, stderr, stdout};
use crate::util::config::Config;
use crate::util::daemon::WAIT;
use crate::util::fifo::Reader;
use crate::util::plans::{task_plan, Step};
use crate::util::wait_until;

/// `~/.config/reveille/<name>.toml` for a project living in `~/<name>/`.
/// `tweak` adds to the stock settings.
fn configure(home: &Path, name: &str, tweak: impl FnOnce(&mut Config)) -> PathBuf {
    let root = home.join(name);
    fs::create_dir_all(root.join("pl")).unwrap();
    fs::create_dir_all(root.join("s")).unwrap();
    let conf = home.join(".config/reveille");
    fs::create_dir_all(&conf).unwrap();
    let mut c = Config::new();
    c.plan_dir(&root.join("pl"))
        .default_session("agent")
        .sessions_dir(&root.join("s"))
        .state_dir(&root.join("state"))
        .events(None)
        .str("log", "target", "stderr");
    tweak(&mut c);
    c.write(&conf.join(format!("{name}.toml")));
    root
}

/// `reveille run --project NAME` at `home`, killed when dropped.
struct Running(Child);

impl Running {
    fn start(home: &Path, name: &str) -> Running {
        let log = home.join(format!("{name}.log"));
        let child = at_home(home, &["run", "--project", name])
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let running = Running(child);
        wait_until("the daemon to be ready", WAIT, || {
            fs::read_to_string(&log)
                .ok()?
                .contains("ready:")
                .then_some(())
        });
        running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_only_configured_project_needs_no_flag() {
    let home = tempfile::tempdir().unwrap();
    configure(home.path(), "alpha", |_| {});
    let out = run_into(at_home(home.path(), &["status"]), Stdio::piped());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("project alpha "),
        "{}",
        stdout(&out)
    );
    let out = run_into(at_home(home.path(), &["check"]), Stdio::piped());
    assert!(
        stdout(&out).contains("# the only configured project, "),
        "{}",
        stdout(&out)
    );
}

#[test]
fn with_several_projects_why_and_ready_find_the_one_holding_the_file() {
    let home = tempfile::tempdir().unwrap();
    configure(home.path(), "alpha", |_| {});
    let beta = configure(home.path(), "beta", |c| {
        c.num("project", "max_plan_bytes", 1024);
    });
    // `status` cannot guess: it says which projects there are.
    let out = run_into(at_home(home.path(), &["status"]), Stdio::piped());
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("2 projects are configured (alpha, beta): choose one with --project"),
        "{err}"
    );

    let fifo = beta.join("s/agent/fifo.in");
    fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let reader = Reader::open(&fifo);
    let _d = Running::start(home.path(), "beta");
    let plan = task_plan(&beta.join("pl"), "Beta work", &[Step::new("Do it")]);
    assert!(reader.next(WAIT).contains("Do it"));

    // `why` on beta's plan, with no flag, knows what beta's daemon did.
    let file = plan.display().to_string();
    let out = run_into(at_home(home.path(), &["why", &file]), Stdio::piped());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("  announced; delivered to session agent\n"),
        "{}",
        stdout(&out)
    );
    // `ready` applies beta's own plan size limit.
    let big = beta.join("pl/20260101T000000_0a0b0c0d--big__todo.md");
    fs::write(&big, format!("# Big\n\n- [ ] {}\n", "x".repeat(2000))).unwrap();
    let out = run_into(
        at_home(home.path(), &["ready", &big.display().to_string()]),
        Stdio::piped(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("1024"), "{}", stderr(&out));
    // The same file elsewhere is no project's: the offline limit.
    let loose = home.path().join("20260101T000000_0a0b0c0d--big__todo.md");
    fs::copy(&big, &loose).unwrap();
    let out = run_into(
        at_home(home.path(), &["ready", &loose.display().to_string()]),
        Stdio::piped(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
}
