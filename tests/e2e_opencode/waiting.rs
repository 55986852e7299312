//! SPEC §12 for an opencode user: the agent's shell tool asks the person
//! first (`"permission": {"bash": "ask"}`), and reveille sees the wait,
//! says it (status, journal), tells the person through `[notify]` once,
//! and tells them again when the person answers in the TUI — approved or
//! rejected — while no reminder comes during the wait.

use std::time::Instant;

use super::plan_watch::ticked;
use super::rig::{Rig, T};
use crate::util::agents::opencode::Mode;
use crate::util::civil::unix_ms;
use crate::util::desktop::NotificationServer;
use crate::util::notify::Told;
use crate::util::plans::Step;
use crate::util::wait_until;

/// The milliseconds into its (UTC) day of a log line's timestamp,
/// `2026-12-03T22:29:40.499512Z …`.
fn ms_of_day(line: &str) -> Option<f64> {
    let time = line.get(11..26)?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(((h * 60.0 + m) * 60.0 + s) * 1000.0)
}

const WAITING: &str = "waiting for a person: approve `";

#[test]
fn a_permission_prompt_is_a_wait_told_once_and_resolved_by_the_persons_answer() {
    let Some(mut rig) = Rig::asking(Mode::Tui) else {
        return;
    };
    let told = Told::configure(&mut rig.project);
    // The shortest there is: one would come during the wait.
    rig.project.set("sessions", "remind_after_ms", "1000");
    let d = rig.daemon();
    let q = rig.q();
    let titles = ["Write the lexer", "Write the parser"];
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let (plan, _) = rig.plan("d4e5f6a7", "Ask first", &steps);

    // The model asks for the tick command: opencode asks the person.
    let seen = wait_until("status to show the session waiting for a person", T, || {
        let s = rig.session_status();
        let state = s["state"].as_str().unwrap_or("").to_string();
        state.starts_with(WAITING).then_some((Instant::now(), s))
    });
    assert_eq!(seen.1["waiting"], "approval", "{}", seen.1);
    let warning = d.wait_log(&format!("session {q} waits for a person"), T);
    // Figures, not checks: from the model's last byte (it asked for the
    // command) to the journal's warning, and to `status` showing it.
    let asked = rig.model.turns_on(&super::rig::ready_line(titles[0]))[0].clone();
    if let Some(done) = asked.done {
        let done_wall = std::time::SystemTime::now() - done.elapsed();
        let done_ms = done_wall
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let day_ms = (done_ms % 86_400_000) as f64;
        if let Some(warned_ms) = ms_of_day(&warning) {
            println!(
                "opencode: the model's last byte → the journal's warning: {:.0} ms",
                warned_ms - day_ms
            );
        }
        println!(
            "opencode: the model's last byte → status shows the wait: {:?}",
            seen.0 - done
        );
    }
    for field in [
        format!("session=\"{q}\""),
        "step=\"s1\"".to_string(),
        "plan=\"20260101T000000_d4e5f6a7\"".to_string(),
        "waiting=\"approval\"".to_string(),
    ] {
        assert!(warning.contains(&field), "{field} not in {warning}");
    }
    assert!(warning.contains("WARN"), "{warning}");
    let first = wait_until("the person to be told", T, || {
        told.notices().first().cloned()
    });
    assert_eq!(first["EVENT"], "waiting");
    assert_eq!(first["SESSION"], q);
    assert_eq!(first["STEP"], "s1");
    assert_eq!(first["PLAN"], "20260101T000000_d4e5f6a7");
    assert_eq!(first["PROJECT"], rig.project.name());
    assert!(first["BODY"].contains("Write the lexer"), "{first:?}");
    // No reminder while it waits, though its step is open: the wait has
    // lasted twice `remind_after`, and none is due.
    wait_until("the wait to outlast two reminder intervals", T, || {
        let since = rig.session_status()["since_unix_ms"].as_u64()?;
        (unix_ms() > since + 2000).then_some(())
    });
    assert_eq!(d.log_count("reminder="), 0, "{}", d.log());
    let open = rig.project.status_json()["reminders"].clone();
    let s1 = open
        .as_array()
        .and_then(|l| l.iter().find(|r| r["id"] == "s1"))
        .cloned()
        .expect("s1 open");
    assert!(s1["next_due_ms"].is_null(), "a reminder is due: {s1}");

    // Approved in the TUI: resolved, and the agent ticks the step.
    rig.oc.press(&["Enter"]);
    wait_until("the wait to be told resolved", T, || {
        (told.events().len() >= 2).then_some(())
    });
    assert_eq!(told.events()[..2], ["waiting", "resolved"]);
    assert_eq!(told.notices()[1]["STEP"], "s1");
    wait_until("the agent to tick s1", T, || {
        ticked(&std::fs::read_to_string(&plan).ok()?, titles[0]).then_some(())
    });

    // The plan goes on: s2 asks too, and the person rejects it (Esc).
    wait_until("the second wait to be told", T, || {
        let n = told.notices();
        (n.len() >= 3).then(|| n[2].clone())
    });
    let third = &told.notices()[2];
    assert_eq!(
        (third["EVENT"].as_str(), third["STEP"].as_str()),
        ("waiting", "s2")
    );
    wait_until("status to show the second wait", T, || {
        let s = rig.session_status();
        s["state"].as_str()?.starts_with(WAITING).then_some(())
    });
    rig.oc.press(&["Escape"]);
    wait_until("the rejection to be told resolved", T, || {
        (told.events().len() >= 4).then_some(())
    });
    let fourth = &told.notices()[3];
    assert_eq!(
        (fourth["EVENT"].as_str(), fourth["STEP"].as_str()),
        ("resolved", "s2")
    );
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(!ticked(&text, titles[1]), "rejected, yet ticked:\n{text}");
    // s1's wait was warned of and told once, and s1 never reminded of (a
    // reminder of the rejected s2 may come now: its session is idle).
    let s1_waits = d.lines_with(&format!("session {q} waits for a person"));
    let s1_waits = s1_waits.iter().filter(|l| l.contains("step=\"s1\""));
    assert_eq!(s1_waits.count(), 1, "{}", d.log());
    let s1_told = told.notices();
    let s1_told = s1_told
        .iter()
        .filter(|n| n["STEP"] == "s1" && n["EVENT"] == "waiting");
    assert_eq!(s1_told.count(), 1);
    assert!(
        d.lines_with("reminder=")
            .iter()
            .all(|l| !l.contains("step=\"s1\"")),
        "{}",
        d.log()
    );
}

#[test]
fn a_question_is_a_wait_told_once_and_resolved_when_the_person_dismisses_it() {
    let Some(mut rig) = Rig::new(Mode::Tui) else {
        return;
    };
    let told = Told::configure(&mut rig.project);
    // A real desktop notification service on a session bus of the
    // test's own: the wait is shown there too, and withdrawn once over.
    let desktop = NotificationServer::start_or_skip();
    if let Some(server) = &desktop {
        rig.project.set("notify", "desktop", "\"on\"");
        let bus = ("DBUS_SESSION_BUS_ADDRESS".to_string(), server.bus.clone());
        rig.project.env.push(bus);
    }
    // The step's prompt makes the fake model ask through opencode's
    // question tool.
    let template = "[reveille] Step {id} is ready: {title}\nASK Which parser for {title}?\n";
    rig.project
        .set("prompt", "template", &format!("{template:?}"));
    let d = rig.daemon();
    let q = rig.q();
    let (_plan, _) = rig.plan(
        "e5f6a7b8",
        "Ask a question",
        &[Step::new("Write the lexer")],
    );
    let s = wait_until("status to show the question", T, || {
        let s = rig.session_status();
        let state = s["state"].as_str()?.to_string();
        state
            .starts_with("waiting for a person: answer:")
            .then_some(s)
    });
    assert_eq!(s["waiting"], "question", "{s}");
    assert!(
        s["state"]
            .as_str()
            .unwrap()
            .contains("Which parser for Write the lexer?"),
        "{s}"
    );
    let warning = d.wait_log(&format!("session {q} waits for a person"), T);
    assert!(warning.contains("waiting=\"question\""), "{warning}");
    let first = wait_until("the person to be told", T, || {
        told.notices().first().cloned()
    });
    assert_eq!(
        (first["EVENT"].as_str(), first["STEP"].as_str()),
        ("waiting", "s1")
    );
    assert!(first["BODY"].contains("Which parser"), "{first:?}");
    if let Some(server) = &desktop {
        wait_until("the wait on the desktop", T, || {
            (server.displayed() == 1).then_some(())
        });
    }
    // Dismissed in the TUI (Esc: `question.rejected`): resolved.
    rig.oc.press(&["Escape"]);
    wait_until("the question told resolved", T, || {
        (told.events().len() >= 2).then_some(())
    });
    assert_eq!(told.events()[..2], ["waiting", "resolved"]);
    wait_until("status to show it no longer waits", T, || {
        let s = rig.session_status();
        s["waiting"].is_null().then_some(())
    });
    // The desktop's notification withdrawn: closed, never shown twice.
    if let Some(server) = &desktop {
        let history = wait_until("the desktop notification closed", T, || {
            let h = server.history();
            (server.displayed() == 0 && !h.is_empty()).then_some(h)
        });
        assert_eq!(history.len(), 1, "{history:?}");
        let shown = &history[0];
        assert_eq!(shown.app, "reveille");
        assert!(
            shown
                .summary
                .starts_with(&format!("{}: ", rig.project.name())),
            "{shown:?}"
        );
        assert!(shown.body.contains("Which parser"), "{shown:?}");
    }
}
