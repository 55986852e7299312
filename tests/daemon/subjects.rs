//! Every journal entry names what it is about, and plans that cannot wake
//! anyone say why, once, and are listed by `status`: plan files with no
//! readable step (`- [] A`, `-[ ] B`, an empty file), a plan that cannot
//! be read; `FILE=` is a whole path and `PLAN_NAME=` the bare name.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::Stdio;

use crate::util::daemon::{command, Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::{barrier, file_name, write_in_place};
use crate::util::project::Project;
use crate::util::wait_until;

fn plan_path(p: &Project, uid: &str, slug: &str) -> std::path::PathBuf {
    p.plan_dir
        .join(format!("20260101T000000_{uid}--{slug}__todo.md"))
}

#[test]
fn plans_without_steps_are_reported_once_with_the_line_and_listed_in_status() {
    let p = Project::with_default_session("agent");
    let reader = Reader::open(&p.session("agent"));
    let d = Daemon::start(&p);
    let bracket = plan_path(&p, "0a000001", "bracket");
    let dash = plan_path(&p, "0a000002", "dash");
    let empty = plan_path(&p, "0a000003", "empty");
    write_in_place(&bracket, b"# Bracket\n\n- [] A\n");
    write_in_place(&dash, b"# Dash\n\n-[ ] B\n");
    write_in_place(&empty, b"");
    for (plan, hint) in [
        (&bracket, "line 3 \"- [] A\" is not a step"),
        (&dash, "line 3 \"-[ ] B\" is not a step"),
        (&empty, "no `- [ ] title` line"),
    ] {
        let line = d.wait_log(&format!("plan {} has no steps", plan.display()), WAIT);
        assert!(line.contains("WARN"), "{line}");
        assert!(line.contains(hint), "{line}");
        assert!(line.contains("wakes nobody until it has one"), "{line}");
        // FILE= is the whole path, PLAN_NAME= the bare name.
        assert!(
            line.contains(&format!("file=\"{}\"", plan.display())),
            "{line}"
        );
        assert!(
            line.contains(&format!("plan_name=\"{}\"", file_name(plan))),
            "{line}"
        );
    }
    assert!(d
        .wait_log(&format!("plan {} has no steps", bracket.display()), WAIT)
        .contains("line=3"));

    // The same content again: said once.
    write_in_place(&bracket, b"# Bracket\n\n- [] A\n");
    barrier(&p.plan_dir, &reader, "");
    assert_eq!(
        d.log_count(&format!("plan {} has no steps", bracket.display())),
        1,
        "{}",
        d.log()
    );

    // Listed, with the reason, in both forms of `status`.
    let text = String::from_utf8_lossy(&p.run(&["status"]).stdout).into_owned();
    assert!(
        text.contains("    INVALID: line 3 \"- [] A\" is not a step"),
        "{text}"
    );
    let status = p.status_json();
    for plan in [&bracket, &dash, &empty] {
        let entry = status["plans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["path"] == plan.display().to_string())
            .unwrap_or_else(|| panic!("{} not in {status:#}", plan.display()));
        assert!(entry["error"].is_string(), "{entry:#}");
    }

    // Fixed: it says so, and wakes its session.
    write_in_place(&bracket, b"# Bracket\n\n- [ ] A\n");
    assert!(reader.next(WAIT).contains("A"));
    d.wait_log(&format!("plan {} is valid again", bracket.display()), WAIT);
}

/// An unreadable plan is tracked with its error: one journal entry naming
/// it, and `status` lists it. Root reads anything, so the daemon and
/// `status` run as `nobody`.
#[test]
fn an_unreadable_plan_is_reported_once_and_listed_in_status() {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        eprintln!("SKIPPED: not root, cannot run as nobody against an unreadable file");
        return;
    }
    let p = Project::new();
    for dir in [&p.root, &p.plan_dir, &p.sessions_dir] {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o777)).unwrap();
    }
    let plan = plan_path(&p, "0a000004", "secret");
    fs::write(&plan, "# Secret\n\n- [ ] hidden\n").unwrap();
    fs::set_permissions(&plan, fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(&p.config, fs::Permissions::from_mode(0o644)).unwrap();
    let log = p.root.join("nobody.log");
    fs::File::create(&log).unwrap();
    fs::set_permissions(&log, fs::Permissions::from_mode(0o666)).unwrap();
    let mut child = command()
        .args(["run", "--config"])
        .arg(&p.config)
        .stdout(Stdio::null())
        .stderr(fs::File::options().append(true).open(&log).unwrap())
        .uid(65534)
        .gid(65534)
        .spawn()
        .unwrap();
    let needle = format!("cannot read plan {}", plan.display());
    let line = wait_until("the daemon to report the unreadable plan", WAIT, || {
        let text = fs::read_to_string(&log).ok()?;
        text.contains("ready:").then_some(())?;
        text.lines()
            .find(|l| l.contains(&needle))
            .map(str::to_string)
    });
    assert!(
        line.contains("ERROR") && line.contains("Permission denied"),
        "{line}"
    );
    let status = command()
        .args(["status", "--json", "--config"])
        .arg(&p.config)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let entry = &json["plans"][0];
    assert_eq!(entry["path"], plan.display().to_string(), "{json:#}");
    assert!(
        entry["error"]
            .as_str()
            .unwrap_or_default()
            .contains("Permission denied"),
        "{json:#}"
    );
    let text = fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches(&needle).count(), 1, "{text}");
}
