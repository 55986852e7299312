//! Session checklists have one owner: two projects sharing one sessions
//! directory (every project's default is `~/mnt/ollie/s`) announce each
//! step of a session's `plan` once between them, not once each.

use crate::util::daemon::{Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::{plan_text, Step};
use crate::util::project::Project;

#[test]
fn two_projects_sharing_a_sessions_directory_announce_a_checklist_once() {
    let a = Project::new();
    // Project b: its own plan directory and state, a's sessions directory.
    let mut b = Project::new();
    let shared = a.sessions_dir.display().to_string();
    b.set("project", "name", "\"other\"");
    b.set("sessions", "dir", &format!("{shared:?}"));
    // The user's runtime directory, shared by both (systemd sets it).
    let runtime = tempfile::tempdir().unwrap();
    let mut a = a;
    for p in [&mut a, &mut b] {
        p.env.push((
            "XDG_RUNTIME_DIR".into(),
            runtime.path().display().to_string(),
        ));
    }
    let reader = Reader::open(&a.session("agent"));
    let first = Daemon::start(&a);
    let second = Daemon::start(&b);
    second.wait_log("session checklists in", WAIT);
    let checklist = a.sessions_dir.join("agent").join("plan");
    let steps = [
        Step::new("Own step one").after("none"),
        Step::new("Own step two").after("none"),
    ];
    std::fs::write(&checklist, plan_text("checklist", &steps, "")).unwrap();
    let got = [reader.next(WAIT), reader.next(WAIT)];
    assert!(got[0].contains("Own step one"), "{got:?}");
    assert!(got[1].contains("Own step two"), "{got:?}");
    // A barrier through project a's own plan: nothing else came before it.
    crate::util::plans::barrier(&a.plan_dir, &reader, "<!-- session: agent -->\n");
    assert_eq!(
        second.log_count("announced s"),
        0,
        "the second project announced too:\n{}",
        second.log()
    );
    drop(first);
}
