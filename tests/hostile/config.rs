//! Broken configurations: unknown keys, wrong types, names that climb out,
//! paths that are not readable regular files (`check` and `run` both exit
//! non-zero at once, naming the key and the file), and roots that do not
//! exist yet (the daemon starts and waits for them).

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use super::world::{World, GOOD, WAIT};
use crate::util::fifo::{mkfifo, Reader};
use crate::util::launch::command;
use crate::util::plans::{fresh_uid, plan_name};

/// Run `reveille <sub> --config <path>`, killed after 10 s (a hang fails).
fn run(sub: &str, config: &Path, uid: Option<u32>) -> Output {
    let mut cmd = command();
    cmd.arg(sub)
        .arg("--config")
        .arg(config)
        .env("REVEILLE_LOG__TARGET", "stderr")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("reveille {sub} --config {} hangs", config.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Both `check` and `run` refuse `config` with a message containing each of
/// `needles`.
fn refused(config: &Path, needles: &[&str], uid: Option<u32>) {
    for sub in ["check", "run"] {
        let out = run(sub, config, uid);
        let err = String::from_utf8_lossy(&out.stderr);
        // EX_CONFIG, which the unit does not restart for.
        assert_eq!(
            out.status.code(),
            Some(78),
            "{sub} on {}: {err}",
            config.display()
        );
        for n in needles {
            assert!(err.contains(n), "{sub}: {n:?} not in {err:?}");
        }
        // One message; `run` may have logged it first (to the journal,
        // under systemd), then it is printed for the terminal.
        let last = err.lines().last().unwrap_or_default();
        assert!(last.starts_with("reveille: "), "{sub}: {err}");
        assert!(err.lines().count() <= 2, "{sub}: {err}");
    }
}

#[test]
fn bad_keys_types_and_names_are_refused_naming_key_and_file() {
    let w = World::new();
    let base = w.config_text();
    let long = "s".repeat(300);
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            "[project]\nplan_dri = \"/x\"\n".into(),
            vec!["project.plan_dri", "unknown key"],
        ),
        ("[bogus]\nx = 1\n".into(), vec!["bogus", "unknown key"]),
        (
            "[project]\nmax_plan_bytes = \"lots\"\n".into(),
            vec!["project.max_plan_bytes", "expected a whole number"],
        ),
        (
            "[sessions]\nframing = 3\n".into(),
            vec!["sessions.framing", "expected a string, found a number"],
        ),
        (
            "[events]\nmounts = \"proj\"\n".into(),
            vec!["events.mounts"],
        ),
        (
            "[events.assignees]\n\"agent-1\" = \"../outside\"\n".into(),
            vec!["events.assignees.agent-1", "contains '/'"],
        ),
        (
            "[events.assignees]\n\"agent-1\" = \"/etc\"\n".into(),
            vec!["events.assignees.agent-1", "contains '/'"],
        ),
        (
            "[events.assignees]\n\"agent-1\" = \"a\\u0000b\"\n".into(),
            vec!["events.assignees.agent-1", "NUL"],
        ),
        (
            format!("[events.assignees]\n\"agent-1\" = \"{long}\"\n"),
            vec!["events.assignees.agent-1", "longer than 255"],
        ),
        (
            "[events]\nmounts = [\"..\"]\n".into(),
            vec!["events.mounts"],
        ),
        (
            "[sessions]\nenqueue = \"../../outside/fifo.in\"\n".into(),
            vec!["sessions.enqueue", "contains '/'"],
        ),
        (
            "[project]\nname = \"/etc\"\n".into(),
            vec!["project.name", "contains '/'"],
        ),
        (
            "[prompt]\ntemplate = \"{nope}\"\n".into(),
            vec!["prompt.template", "unknown placeholder"],
        ),
    ];
    for (i, (extra, needles)) in cases.iter().enumerate() {
        // The bad key in a file of its own, which then names it.
        let path = w.harness.join(format!("bad{i}.toml"));
        let text = if extra.starts_with("[events.assignees]") || extra.starts_with("[bogus]") {
            format!("{base}{extra}")
        } else {
            extra.clone()
        };
        fs::write(&path, text).unwrap();
        let mut needles = needles.clone();
        let file = path.display().to_string();
        if !extra.contains("template") {
            needles.push(&file);
        }
        refused(&path, &needles, None);
    }
    assert!(
        !w.state_dir.exists(),
        "a refused configuration created the state directory"
    );
}

#[test]
fn config_paths_that_are_not_readable_regular_files_are_refused_at_once() {
    let w = World::new();
    let fifo = w.harness.join("fifo.toml");
    mkfifo(&fifo);
    let dir = w.harness.join("dir.toml");
    fs::create_dir(&dir).unwrap();
    let latin1 = w.harness.join("latin1.toml");
    fs::write(&latin1, b"[project]\nname = \"caf\xe9\"\n").unwrap();
    let f = fifo.display().to_string();
    refused(&fifo, &[&f, "not a regular file"], None);
    refused(
        Path::new("/dev/zero"),
        &["/dev/zero", "not a regular file"],
        None,
    );
    let d = dir.display().to_string();
    refused(&dir, &[&d, "is a directory"], None);
    let l = latin1.display().to_string();
    refused(&latin1, &[&l, "UTF-8"], None);
    // Unreadable: root reads anything, so run as `nobody` against a file
    // only root may read.
    let secret = w.harness.join("secret.toml");
    fs::write(&secret, w.config_text()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
    fs::set_permissions(&w.root, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&w.harness, fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        eprintln!("SKIPPED the unreadable-file case: not root, cannot switch to nobody");
        return;
    }
    let s = secret.display().to_string();
    refused(&secret, &[&s, "Permission denied"], Some(65534));
}

#[test]
fn missing_roots_are_waited_for_and_never_created() {
    let mut w = World::new();
    for d in [&w.plan_dir, &w.sessions_dir, &w.beads] {
        fs::remove_dir(d).unwrap();
    }
    let d = w.start();
    for root in [&w.plan_dir, &w.sessions_dir] {
        let line = d.wait_log(&format!("{} does not exist yet", root.display()), WAIT);
        // No fault: a root may not exist yet (the README says so).
        assert!(line.contains("INFO"), "{line}");
    }
    d.wait_log("does not exist (yet); waiting for it", WAIT);
    assert!(!w.plan_dir.exists() && !w.sessions_dir.exists() && !w.beads.exists());
    // The roots appear (sessions first, with a FIFO), then a plan.
    fs::create_dir(&w.sessions_dir).unwrap();
    fs::create_dir(w.sessions_dir.join(GOOD)).unwrap();
    let fifo = w.sessions_dir.join(GOOD).join("fifo.in");
    mkfifo(&fifo);
    w.made(&fifo);
    let good = Reader::open(&fifo);
    fs::create_dir(&w.plan_dir).unwrap();
    let plans = w.plan_dir.clone();
    w.made(&plans);
    let name = plan_name(fresh_uid(), "late");
    w.write_plan(
        &name,
        "# Late\n<!-- session: good -->\n\n- [ ] after the roots appeared\n",
    );
    good.wait_for("after the roots appeared", WAIT);
    w.assert_alive(&good);
    // Said once each, however the roots came to be.
    for root in [&w.plan_dir, &w.sessions_dir] {
        let said = format!("{} does not exist yet", root.display());
        assert_eq!(d.log_count(&said), 1, "{}", d.log());
    }
    assert!(!w.beads.exists(), "the daemon created beads_root");
    d.assert_running();
    w.assert_contained();
}

/// Regression: a root that is a regular file was "does not exist yet". It
/// is its own error, in `check` (status 78) and in the daemon's journal,
/// and once it is replaced by a directory the daemon watches it.
#[test]
fn a_root_that_is_a_file_is_not_a_directory_in_check_and_in_the_journal() {
    let mut w = World::new();
    fs::remove_dir(&w.plan_dir).unwrap();
    fs::write(&w.plan_dir, "not a directory").unwrap();
    fs::write(&w.config, w.config_text()).unwrap();
    let out = run("check", &w.config, None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(78), "{err}");
    assert!(
        err.contains("project.plan_dir") && err.contains("is not a directory but a regular file"),
        "{err}"
    );
    assert!(err.contains(&w.config.display().to_string()), "{err}");

    let d = w.start();
    let line = d.wait_log(
        &format!(
            "{} is not a directory but a regular file",
            w.plan_dir.display()
        ),
        WAIT,
    );
    assert!(line.contains("ERROR"), "{line}");
    assert_eq!(d.log_count("does not exist yet"), 0, "{}", d.log());
    fs::remove_file(&w.plan_dir).unwrap();
    fs::create_dir(&w.plan_dir).unwrap();
    let plans = w.plan_dir.clone();
    w.made(&plans);
    d.wait_log(
        &format!("watching {} with inotify", w.plan_dir.display()),
        WAIT,
    );
    d.assert_running();
}

/// Regression: a plan directory configured beneath a regular file was
/// waited for for ever ("does not exist yet"), though it cannot appear.
/// Said in `check` (status 78) and in the journal; once the file is
/// replaced by a directory and the plan directory made, it is watched.
#[test]
fn a_root_beneath_a_file_cannot_appear_in_check_and_in_the_journal() {
    let mut w = World::new();
    fs::remove_dir(&w.plan_dir).unwrap();
    let file = w.plan_dir.clone();
    fs::write(&file, "not a directory").unwrap();
    w.plan_dir = file.join("pl");
    let dir = format!("{:?}", w.plan_dir.display().to_string());
    w.set("project", "plan_dir", &dir);
    let out = run("check", &w.config, None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(78), "{err}");
    let words = format!(
        "cannot appear: {} is not a directory but a regular file",
        file.display()
    );
    assert!(
        err.contains("project.plan_dir") && err.contains(&words),
        "{err}"
    );

    let d = w.start();
    let line = d.wait_log(&words, WAIT);
    assert!(line.contains("ERROR"), "{line}");
    assert_eq!(d.log_count("does not exist yet"), 0, "{}", d.log());
    fs::remove_file(&file).unwrap();
    fs::create_dir_all(&w.plan_dir).unwrap();
    d.wait_log(
        &format!("watching {} with inotify", w.plan_dir.display()),
        WAIT,
    );
    d.assert_running();
}
