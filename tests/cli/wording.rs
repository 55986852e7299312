//! The words a user reads first: the default prompt, the first-start line
//! and the baseline rule in `status`.

use std::fs;

use crate::util::daemon::{Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::{task_plan, Step};
use crate::util::project::Project;

#[test]
fn a_session_checklist_prompt_names_its_real_path_and_roots_read_well() {
    let p = Project::new();
    let reader = Reader::open(&p.session("agent"));
    let _d = Daemon::start(&p);
    let checklist = p.sessions_dir.join("agent").join("plan");
    fs::write(&checklist, "# Own work\n\n- [ ] Look around\n").unwrap();
    let got = reader.next(WAIT);
    assert!(
        got.contains(&format!("Plan file: {}\n", checklist.display())),
        "{got}"
    );
    assert!(!got.contains("Plan file: plan\n"), "{got}");
    assert!(got.contains("Completed dependencies: none.\n"), "{got}");
    assert!(!got.contains("dependencies are complete: none"), "{got}");
}

#[test]
fn one_baseline_step_is_counted_in_the_singular() {
    let p = Project::with_default_session("agent");
    let _reader = Reader::open(&p.session("agent"));
    task_plan(&p.plan_dir, "Old", &[Step::new("Only")]);
    let d = Daemon::start(&p);
    let line = d.wait_log("first start:", WAIT);
    assert!(
        line.contains("first start: 1 already-ready step or task recorded as the baseline"),
        "{line}"
    );
    // The rule, where a user meets it: the first-start line and `status`.
    assert!(
        line.contains("what is ready at the very first start wakes nobody, what becomes ready from now on does"),
        "{line}"
    );
    let status = String::from_utf8_lossy(&p.run(&["status"]).stdout).into_owned();
    assert!(
        status.contains("baseline 1 ready at the first start: recorded, never announced"),
        "{status}"
    );
    assert!(status.contains("announced s1\tOnly (baseline)"), "{status}");
}

#[test]
fn status_of_a_project_never_started_says_what_its_first_start_does() {
    let p = Project::new();
    let status = String::from_utf8_lossy(&p.run(&["status"]).stdout).into_owned();
    assert!(
        status.contains("(never started: at the first start, what is already ready is recorded as the baseline, not announced)"),
        "{status}"
    );
}
