//! Gave up (SPEC §12): a step still open after its last reminder is told
//! to the person once through `[notify]`. Claude Code answers the step's
//! prompt and its one reminder in words only (templates without the close
//! instruction), so the step stays open.

use super::rig::{ready, toml, Rig, T};
use crate::util::notify::Told;
use crate::util::plans::Step;
use crate::util::wait_until;

const TITLE: &str = "Left open e2e-g1";

#[test]
fn a_step_still_open_after_its_last_reminder_is_told_to_the_person_once() {
    let mut told = None;
    let Some(rig) = Rig::start(|p| {
        told = Some(Told::configure(p));
        p.set("sessions", "remind_after_ms", "1000");
        p.set("sessions", "remind_max", "1");
        let step = "[reveille] Step {id} of \"{goal}\" is ready: {title}\nPlan file: {path}\n";
        p.set("prompt", "template", &toml(step));
        let remind = "[reveille] Reminder {n} of {max}: {id} is still open: {title}\n";
        p.set("prompt", "remind_template", &toml(remind));
    }) else {
        return;
    };
    let told = told.unwrap();
    let name = "20260101T000000_0d0d0d0d--gave-up__todo.md";
    let (path, _) = rig.plan(name, "Give up", &[Step::new(TITLE)]);
    rig.wait_model(&ready(TITLE));
    let reminder = format!("Reminder 1 of 1: s1 is still open: {TITLE}");
    rig.wait_model(&reminder);
    let n = wait_until("the person to be told it was given up on", T, || {
        told.notices().into_iter().find(|n| n["EVENT"] == "gave-up")
    });
    assert_eq!(n["SESSION"], rig.session());
    assert_eq!(n["STEP"], "s1");
    assert_eq!(n["PLAN"], "20260101T000000_0d0d0d0d");
    assert!(n["BODY"].contains(TITLE), "{n:?}");
    let warned = rig.wait_log(&["gave up on s1 for session", &rig.session()]);
    assert!(warned.contains("WARN"), "{warned}");
    // Once: the reminder was the last, and the person was told once.
    rig.assert_once(&[ready(TITLE), reminder]);
    assert_eq!(told.events(), ["gave-up"]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("- [ ] {TITLE}")), "{text}");
}
