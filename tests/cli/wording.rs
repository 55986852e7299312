//! The words a user reads first: the default prompt, the first-start line.

use std::fs;

use crate::util::daemon::{task_plan, Daemon, Project, Reader, Step, WAIT};

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
}
