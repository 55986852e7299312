//! Bad input and hostile data never stop the daemon or steer it: invalid
//! plans, a second instance, a broken reload, session ids and symlinks that
//! point outside the sessions directory (SPEC §2, §4, §5, §6).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::daemon::{Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::{
    barrier, file_name, plan_text, task_complete, task_plan, task_plan_with, write_in_place, Step,
};
use crate::util::project::Project;

#[test]
fn an_invalid_plan_is_reported_once_wakes_nobody_and_resumes_when_fixed() {
    let p = Project::with_default_session("agent");
    let reader = Reader::open(&p.session("agent"));
    let d = Daemon::start(&p);

    // Line 4 refers to a step that does not exist.
    let missing = task_plan(
        &p.plan_dir,
        "Missing dependency",
        &[
            Step::new("Missing one"),
            Step::new("Missing two").after("s5"),
        ],
    );
    // Lines 3 and 4 wait for each other.
    let cycle = task_plan(
        &p.plan_dir,
        "Cycle",
        &[
            Step::new("Cycle one").after("2"),
            Step::new("Cycle two").after("1"),
            Step::new("Cycle root").after("none"),
        ],
    );
    let good = task_plan(&p.plan_dir, "Fine", &[Step::new("Fine one")]);
    assert!(reader.next(WAIT).contains("Fine one"));

    let m = d.wait_log(&format!("invalid plan {}", missing.display()), WAIT);
    assert!(m.contains("ERROR"), "{m}");
    assert!(m.contains("line=4"), "{m}");
    assert!(m.contains("step 5, which does not exist"), "{m}");
    let c = d.wait_log(&format!("invalid plan {}", cycle.display()), WAIT);
    assert!(
        c.contains("line=3") && c.contains("dependency cycle"),
        "{c}"
    );

    // Rewritten with the same error: still one error; and no wake-ups from
    // either (their first steps would be ready if they were valid).
    let text = fs::read_to_string(&missing).unwrap();
    write_in_place(&missing, text.as_bytes());
    barrier(&p.plan_dir, &reader, "");
    assert_eq!(
        d.log_count(&format!("invalid plan {}", missing.display())),
        1
    );
    assert_eq!(d.log_count(&format!("invalid plan {}", cycle.display())), 1);
    // Other plans are unaffected.
    task_complete(&good, "Fine one");
    barrier(&p.plan_dir, &reader, "");

    // Fixing a plan resumes its wake-ups.
    write_in_place(
        &missing,
        plan_text(
            "Missing dependency",
            &[Step::new("Missing one"), Step::new("Missing two")],
            "",
        )
        .as_bytes(),
    );
    let got = reader.next(WAIT);
    assert!(got.contains("s1") && got.contains("Missing one"), "{got}");
    write_in_place(
        &cycle,
        plan_text(
            "Cycle",
            &[
                Step::new("Cycle one").after("none"),
                Step::new("Cycle two").after("1"),
                Step::new("Cycle root").after("none"),
            ],
            "",
        )
        .as_bytes(),
    );
    let a = reader.next(WAIT);
    let b = reader.next(WAIT);
    assert!(
        a.contains("Cycle one") && b.contains("Cycle root"),
        "{a}\n{b}"
    );
    d.wait_log(&format!("plan {} is valid again", missing.display()), WAIT);
    barrier(&p.plan_dir, &reader, "");
}

#[test]
fn a_second_instance_for_the_same_state_dir_exits_at_once_naming_the_first() {
    let p = Project::with_default_session("agent");
    let first = Daemon::start(&p);
    let started = Instant::now();
    let out = p.run_bounded(&["run"]);
    let took = started.elapsed();
    assert!(!out.status.success(), "the second instance ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("pid {}", first.pid())),
        "the message does not name pid {}: {stderr}",
        first.pid()
    );
    assert!(took < Duration::from_secs(3), "took {took:?} to give up");
    // The first one is unharmed.
    let reader = Reader::open(&p.session("agent"));
    barrier(&p.plan_dir, &reader, "");
}

#[test]
fn sighup_keeps_the_old_configuration_when_the_new_one_is_broken() {
    let mut p = Project::with_default_session("agent");
    let reader = Reader::open(&p.session("agent"));
    let d = Daemon::start(&p);
    let plan = task_plan(
        &p.plan_dir,
        "Reload",
        &[Step::new("R one"), Step::new("R two"), Step::new("R three")],
    );
    assert!(reader.next(WAIT).starts_with("[reveille] Step s1"));

    // An unknown key (and a new template that must not take effect).
    p.set("prompt", "template", "\"BROKEN {id}\"");
    p.set("prompt", "no_such_key", "1");
    d.hup();
    let line = d.wait_log("reload failed, keeping the running configuration", WAIT);
    assert!(line.contains("no_such_key"), "{line}");
    assert!(line.contains(&p.config.display().to_string()), "{line}");
    task_complete(&plan, "R one");
    let got = reader.next(WAIT);
    assert!(got.starts_with("[reveille] Step s2"), "old template: {got}");

    // A valid change takes effect, and the reload re-announces nothing.
    p.unset("prompt", "no_such_key");
    p.set("prompt", "template", "\"CUSTOM {id} {title} in {file}\"");
    d.hup();
    d.wait_log("configuration reloaded", WAIT);
    barrier(&p.plan_dir, &reader, "");
    task_complete(&plan, "R two");
    let got = reader.next(WAIT);
    assert_eq!(got, format!("CUSTOM s3 R three in {}", file_name(&plan)));
}

/// Every file and symlink under `root` (not following links) with its size,
/// except the daemon's own state, plans and logs.
fn outside_files(root: &Path) -> BTreeMap<PathBuf, u64> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, u64>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                walk(&path, out);
            } else {
                out.insert(path, meta.len());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, &mut out);
    out.retain(|path, _| {
        let rel = path.strip_prefix(root).unwrap();
        !(rel.starts_with("state")
            || rel.starts_with("pl")
            || file_name(rel).starts_with("daemon-"))
    });
    out
}

#[test]
fn session_ids_and_symlinks_never_lead_a_write_outside_the_sessions_dir() {
    let p = Project::new();
    // What `../escape` would reach: <root>/escape/fifo.in.
    fs::create_dir(p.root.join("escape")).unwrap();
    fs::write(p.root.join("escape/fifo.in"), "").unwrap();
    // A session whose enqueue file is a symlink to a file outside.
    fs::write(p.root.join("outside.txt"), "").unwrap();
    fs::create_dir(p.sessions_dir.join("linked")).unwrap();
    symlink(
        p.root.join("outside.txt"),
        p.sessions_dir.join("linked/fifo.in"),
    )
    .unwrap();
    // A session directory that is itself a symlink to a directory outside.
    fs::create_dir(p.root.join("outside_dir")).unwrap();
    fs::write(p.root.join("outside_dir/fifo.in"), "").unwrap();
    symlink(p.root.join("outside_dir"), p.sessions_dir.join("dirlink")).unwrap();
    let reader = Reader::open(&p.session("good"));
    let before = outside_files(&p.root);

    let d = Daemon::start(&p);
    for session in ["../escape", "linked", "dirlink"] {
        task_plan_with(
            &p.plan_dir,
            &format!("Hostile {session}"),
            &[Step::new("Hostile step")],
            &format!("<!-- session: {session} -->\n\n"),
        );
    }
    let escape = d.wait_log("session id \"../escape\"", WAIT);
    assert!(
        escape.contains("ERROR") && escape.contains("wakes nobody"),
        "{escape}"
    );
    let linked = d.wait_log("linked/fifo.in is a symlink", WAIT);
    assert!(linked.contains("never writes through symlinks"), "{linked}");
    let dirlink = d.wait_log("the session directory is a symlink", WAIT);
    assert!(dirlink.contains("session=\"dirlink\""), "{dirlink}");
    // A well-behaved session still works, after all of the above.
    barrier(&p.plan_dir, &reader, "<!-- session: good -->\n\n");

    assert_eq!(outside_files(&p.root), before, "a file outside changed");
    // The refused prompts are kept, not written anywhere.
    let status = p.status_json();
    for session in ["linked", "dirlink"] {
        let pending = status["outbox"][session].as_array().map_or(0, Vec::len);
        assert_eq!(pending, 1, "{session}: {status:#}");
    }
    assert!(status["outbox"].get("../escape").is_none(), "{status:#}");
}
