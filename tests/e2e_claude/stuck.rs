//! Stuck (SPEC §12): a session busy past `[notify] stuck_after_ms` with no
//! step checked is told to the person once. The fake model takes 4 s per
//! answer on this step (`delay=4` in its prompt), so Claude Code's turn on
//! it runs past the 1 s configured.

use super::rig::{ready, Rig, T};
use crate::util::notify::Told;
use crate::util::plans::Step;
use crate::util::wait_until;

const TITLE: &str = "Slow step delay=4";

#[test]
fn a_turn_busy_past_stuck_after_with_nothing_checked_is_told_once() {
    let mut told = None;
    let Some(rig) = Rig::start(|p| {
        told = Some(Told::configure(p));
        p.set("notify", "stuck_after_ms", "1000");
    }) else {
        return;
    };
    let told = told.unwrap();
    let name = "20260101T000000_0c0c0c0c--stuck__todo.md";
    let (path, _) = rig.plan(name, "Slow", &[Step::new(TITLE)]);
    let n = wait_until("the person to be told it looks stuck", T, || {
        told.notices().into_iter().find(|n| n["EVENT"] == "stuck")
    });
    assert_eq!(n["SESSION"], rig.session());
    assert_eq!(n["STEP"], "s1");
    assert_eq!(n["PLAN"], "20260101T000000_0c0c0c0c");
    let warned = rig.wait_log(&["session", &rig.session(), "looks stuck"]);
    assert!(warned.contains("WARN"), "{warned}");
    // Once per stretch: until the step is ticked (which starts a new
    // stretch: the rest of the slow turn may be told once more), no more.
    rig.wait_ticked(&path, TITLE);
    let before_tick = told.events().iter().filter(|e| *e == "stuck").count();
    assert_eq!(before_tick, 1, "{:?}", told.events());
    rig.idle();
    rig.assert_once(&[ready(TITLE)]);
    let all = told.events();
    assert!(
        all.iter().all(|e| e == "stuck") && all.len() <= 2,
        "{all:?}"
    );
}
