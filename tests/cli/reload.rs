//! `reveille reload` against the real daemon: a good change, an unchanged
//! file and a refused one each get their answer and exit status, a refusal
//! shows in `status` until a good reload, and with no daemon it says so.

use crate::util::daemon::{Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::{task_plan, Step};
use crate::util::project::Project;

use super::{stderr, stdout};

#[test]
fn reload_waits_for_the_answer_and_a_refusal_exits_non_zero_with_the_reason() {
    let mut p = Project::with_default_session("one");
    let one = Reader::open(&p.session("one"));
    let two = Reader::open(&p.session("two"));
    let d = Daemon::start(&p);

    // Unchanged.
    let out = p.run_bounded(&["reload"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("unchanged"), "{}", stdout(&out));

    // Refused: an unknown key. The reason, with file and line, and EX_CONFIG.
    let good = p.config_text();
    p.write_config_raw(&good.replacen("[project]\n", "[project]\ncolour = \"blue\"\n", 1));
    let out = p.run_bounded(&["reload"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(78), "{err}");
    assert!(err.starts_with("reveille: reload refused"), "{err}");
    assert!(
        err.contains("keeps running the previous configuration"),
        "{err}"
    );
    assert!(
        err.contains("project.colour = \"blue\": unknown key"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}, line ", p.config.display())),
        "{err}"
    );
    d.wait_log("reload failed, keeping the running configuration", WAIT);
    // `status` says what runs; the old default session still routes.
    let status = p.run_bounded(&["status"]);
    assert!(
        stdout(&status).contains("the last reload was refused; the previous configuration runs: "),
        "{}",
        stdout(&status)
    );
    assert_eq!(
        p.status_json()["reload"]["outcome"],
        "refused",
        "{:#}",
        p.status_json()
    );
    task_plan(&p.plan_dir, "Still one", &[Step::new("To one")]);
    assert!(one.next(WAIT).contains("To one"));

    // A good change: applied, and the refusal is gone.
    p.write_config_raw(&good);
    p.set("project", "default_session", "\"two\"");
    let out = p.run_bounded(&["reload"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("runs the new configuration"),
        "{}",
        stdout(&out)
    );
    assert_eq!(p.status_json()["reload"]["outcome"], "reloaded");
    assert!(!stdout(&p.run_bounded(&["status"])).contains("refused"));
    task_plan(&p.plan_dir, "Now two", &[Step::new("To two")]);
    assert!(two.next(WAIT).contains("To two"));
    assert_eq!(d.log_count("configuration reloaded"), 1, "{}", d.log());
}

#[test]
fn reload_without_a_daemon_says_so() {
    let p = Project::new();
    let out = p.run_bounded(&["reload"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("no daemon of project \"it\" is running"),
        "{err}"
    );
    assert!(
        err.contains(&p.state_dir.join("lock").display().to_string()),
        "{err}"
    );
}
