//! SPEC §12 for a Codex user: approvals on (`on-request` and a `prompt`
//! rule for `sed`), the fake model ticks each step with one `sed`, so
//! Codex asks the person first. reveille sees the wait (from the status
//! Codex broadcasts to every client), says it (status, journal), tells the person once through `[notify]`, and again when the
//! person approves (`y`) or declines (Esc) in the TUI; no reminder comes
//! during the wait. reveille is never asked itself: it subscribes to no
//! thread.

use std::time::Instant;

use super::rig::{step_line, Rig, TURN};
use crate::util::civil::unix_ms;
use crate::util::notify::Told;
use crate::util::plans::Step;
use crate::util::wait_until;

const GOAL: &str = "Ask first";
const WAITING: &str = "waiting for a person: approve `sed -i";

#[test]
fn an_approval_is_a_wait_told_once_and_resolved_by_the_persons_answer() {
    let mut told = None;
    let Some(rig) = Rig::asking_tapped(|p| {
        told = Some(Told::configure(p));
        p.set("sessions", "remind_after_ms", "1000");
    }) else {
        return;
    };
    let told = told.unwrap();
    let q = rig.session.clone();
    let titles = ["Write the lexer", "Write the parser"];
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let plan = rig.plan(GOAL, &steps);

    let (seen, s) = wait_until("status to show the wait", TURN, || {
        let s = rig.status_of(&q);
        s["state"]
            .as_str()?
            .starts_with(WAITING)
            .then(|| (Instant::now(), s.clone()))
    });
    assert_eq!(s["waiting"], "approval", "{s}");
    let warning = rig.wait_log(&format!("session {q} waits for a person"));
    let asked = rig.wait_turn(&step_line("s1", GOAL, titles[0]));
    println!(
        "codex: the model's last byte → status shows the wait: {:?}",
        seen - asked.done.unwrap()
    );
    for field in [
        format!("session=\"{q}\""),
        "step=\"s1\"".to_string(),
        "waiting=\"approval\"".to_string(),
    ] {
        assert!(warning.contains(&field), "{field} not in {warning}");
    }
    assert!(warning.contains("WARN"), "{warning}");
    let first = wait_until("the person to be told", TURN, || {
        told.notices().first().cloned()
    });
    assert_eq!(first["EVENT"], "waiting");
    assert_eq!(first["SESSION"], q);
    assert_eq!(first["STEP"], "s1");
    assert!(!first["PLAN"].is_empty(), "{first:?}");
    assert!(
        warning.contains(&format!("plan=\"{}\"", first["PLAN"])),
        "{warning}"
    );
    // Codex tells the command only to the thread's subscribers, and
    // reveille is none: it reads it from the thread's rollout, so the
    // person is told which.
    assert!(first["SUMMARY"].contains(&q), "{first:?}");
    assert!(first["BODY"].contains("sed -i"), "{first:?}");
    assert!(warning.contains("approve `sed -i"), "{warning}");
    let s = rig.wait_status("status to name the command", |s| {
        s["state"].as_str().is_some_and(|t| t.starts_with(WAITING))
    });
    assert!(
        s["state"].as_str().unwrap().contains("Write the lexer"),
        "{s}"
    );
    // No reminder while it waits: it outlasts two reminder intervals.
    wait_until("the wait to outlast two reminder intervals", TURN, || {
        let since = rig.status_of(&q)["since_unix_ms"].as_u64()?;
        (unix_ms() > since + 2000).then_some(())
    });
    assert_eq!(
        rig.daemon().log_count("reminder="),
        0,
        "{}",
        rig.daemon().log()
    );

    // Approved: resolved, the step ticked, and the plan goes on.
    rig.codex.press(&["y"]);
    wait_until("the wait told resolved", TURN, || {
        (told.events().len() >= 2).then_some(())
    });
    assert_eq!(told.events()[..2], ["waiting", "resolved"]);
    rig.wait_ticked(&plan, titles[0]);
    wait_until("the second wait to be told", TURN, || {
        let n = told.notices();
        (n.len() >= 3).then(|| n[2].clone())
    });
    let third = &told.notices()[2];
    assert_eq!(
        (third["EVENT"].as_str(), third["STEP"].as_str()),
        ("waiting", "s2")
    );
    rig.wait_status("the second wait in status", |s| {
        s["state"].as_str().is_some_and(|t| t.starts_with(WAITING))
    });
    // Declined (Esc interrupts the turn): resolved too, nothing ticked.
    rig.codex.press(&["Escape"]);
    wait_until("the decline told resolved", TURN, || {
        (told.events().len() >= 4).then_some(())
    });
    let fourth = &told.notices()[3];
    assert_eq!(
        (fourth["EVENT"].as_str(), fourth["STEP"].as_str()),
        ("resolved", "s2")
    );
    assert!(
        rig.ticked_at(&plan, titles[1]).is_none(),
        "declined, yet ticked"
    );
    let d = rig.daemon();
    let s1_waits = d.lines_with(&format!("session {q} waits for a person"));
    assert_eq!(
        s1_waits
            .iter()
            .filter(|l| l.contains("step=\"s1\""))
            .count(),
        1
    );
    assert!(d
        .lines_with("reminder=")
        .iter()
        .all(|l| !l.contains("step=\"s1\"")));
    // Never a party to the person's answer: reveille subscribed to no
    // thread, and the server asked it nothing (as the server saw it).
    let tap = rig.tap.as_ref().unwrap();
    let called = tap.called();
    assert!(called.iter().any(|m| m == "thread/queue/add"), "{called:?}");
    for subscribing in ["thread/resume", "thread/start", "thread/fork"] {
        assert!(!called.iter().any(|m| m == subscribing), "{called:?}");
    }
    assert_eq!(tap.asked(), Vec::<serde_json::Value>::new());
    assert_eq!(d.log_count("codex asked reveille"), 0, "{}", d.log());
}
