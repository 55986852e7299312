//! SPEC §12 for a Claude Code user: the session in its default permission
//! mode, so the agent's shell command asks the person first. reveille
//! sees the wait in the session registry (`status: "waiting"`,
//! `waitingFor: "permission prompt"`), says it (status, journal), tells
//! the person once through `[notify]`, and again when the person approves
//! (Enter) or declines (Esc) in the TUI; no reminder comes meanwhile.

use super::rig::{ready, Rig, T};
use crate::util::civil::unix_ms;
use crate::util::notify::Told;
use crate::util::plans::Step;
use crate::util::wait_until;

const WAITING: &str = "waiting for a person: approve";

/// No reminder while the session waits (reminders every second here): the
/// wait outlasts two reminder intervals, and none was sent.
fn no_reminder_while_it_waits(rig: &Rig) {
    wait_until("the wait to outlast two reminder intervals", T, || {
        let since = rig.status()["since_unix_ms"].as_u64()?;
        (unix_ms() > since + 2000).then_some(())
    });
    assert_eq!(rig.daemon().log_count("reminder="), 0, "{}", rig.all_logs());
}

#[test]
fn a_permission_prompt_is_a_wait_told_once_and_resolved_by_the_persons_answer() {
    let mut told = None;
    let Some(rig) = Rig::asking(|p| {
        told = Some(Told::configure(p));
        p.set("sessions", "remind_after_ms", "1000");
    }) else {
        return;
    };
    let told = told.unwrap();
    let q = rig.session();
    let titles = ["Write the lexer", "Write the parser"];
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let name = "20260101T000000_0f0f0f0f--ask__todo.md";
    let (plan, _) = rig.plan(name, "Ask first", &steps);

    let s = crate::util::try_wait_until(T, || {
        let s = rig.status();
        s["state"].as_str()?.starts_with(WAITING).then_some(s)
    });
    let s =
        s.unwrap_or_else(|| panic!("no wait in status; the terminal:\n{}", rig.claude.screen()));
    assert_eq!(s["waiting"], "approval", "{s}");
    // Named by the command from the session's transcript (the registry
    // does not say it): the tick script, whose first line sets the file.
    rig.wait_status("the wait named by its command", |s| {
        s["state"]
            .as_str()
            .is_some_and(|t| t.starts_with(&format!("{WAITING} `f=")))
    });
    let asked = rig.wait_model(&ready(titles[0]));
    let warning = rig.wait_log(&["session", &q, "waits for a person"]);
    if let (Some(done), Some(warned)) = (asked.done, rig.logged_at("waits for a person")) {
        let done_wall = std::time::SystemTime::now() - done.elapsed();
        let d = warned.duration_since(done_wall).unwrap_or_default();
        println!("claude: the model's last byte → the journal's warning: {d:?}");
    }
    for field in [
        format!("session=\"{q}\""),
        "step=\"s1\"".to_string(),
        "plan=\"20260101T000000_0f0f0f0f\"".to_string(),
        "waiting=\"approval\"".to_string(),
    ] {
        assert!(warning.contains(&field), "{field} not in {warning}");
    }
    let first = wait_until("the person to be told", T, || {
        told.notices().first().cloned()
    });
    assert_eq!(first["EVENT"], "waiting");
    assert_eq!(first["SESSION"], q);
    assert_eq!(first["STEP"], "s1");
    assert_eq!(first["PLAN"], "20260101T000000_0f0f0f0f");
    // Told with the command (the registry does not say it; the wait is
    // told once the transcript named it).
    assert!(first["BODY"].contains("f="), "{first:?}");
    no_reminder_while_it_waits(&rig);

    // Approved: resolved, ticked, and the plan goes on.
    rig.claude.press(&["Enter"]);
    wait_until("the wait told resolved", T, || {
        (told.events().len() >= 2).then_some(())
    });
    assert_eq!(told.events()[..2], ["waiting", "resolved"]);
    rig.wait_ticked(&plan, titles[0]);
    // The plan goes on: s2 asks too (Claude Code's registry may flicker
    // out of a wait and back: each is a wait of its own, told once).
    let s2 = |n: &[crate::util::notify::Notice]| {
        n.iter()
            .position(|n| n["STEP"] == "s2" && n["EVENT"] == "waiting")
    };
    let at = wait_until("the wait on s2 to be told", T, || s2(&told.notices()));
    rig.wait_status("the wait on s2", |s| {
        s["state"].as_str().is_some_and(|t| t.starts_with(WAITING))
    });
    // Declined (Esc): resolved too, nothing ticked.
    rig.claude.press(&["Escape"]);
    let resolved = wait_until("the decline told resolved", T, || {
        told.notices().get(at + 1).cloned()
    });
    assert_eq!(
        (resolved["EVENT"].as_str(), resolved["STEP"].as_str()),
        ("resolved", "s2")
    );
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(
        !text.contains("- [x] Write the parser"),
        "declined, yet ticked:\n{text}"
    );
    // Every wait was warned of and told, then resolved: the notices
    // alternate.
    let events = told.events();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e, ["waiting", "resolved"][i % 2], "{events:?}");
    }
    let d = rig.daemon();
    let warned = d.lines_with(&format!("session {q} waits for a person"));
    let told_waits = events.iter().filter(|e| *e == "waiting").count();
    assert!(warned.len() >= told_waits, "{warned:?} {events:?}");
    let reminders = d.lines_with("reminder=");
    assert!(reminders.iter().all(|l| !l.contains("step=\"s1\"")));
}

/// A question (AskUserQuestion) waits even in a session that bypasses
/// permissions: the registry says `waitingFor: "input needed"`, and the
/// question itself is in the transcript's last tool call.
#[test]
fn a_question_is_a_wait_told_once_and_resolved_by_the_persons_answer() {
    let mut told = None;
    let Some(rig) = Rig::start(|p| {
        told = Some(Told::configure(p));
        p.set("sessions", "remind_after_ms", "1000");
        // The step's prompt makes the fake model ask through Claude
        // Code's question tool first, and tick once answered.
        let template = "[reveille] Step {id} is ready: {title}\nASK Which parser for {title}?\n\
                        When it is finished, {close}.\n";
        p.set("prompt", "template", &format!("{template:?}"));
    }) else {
        return;
    };
    let told = told.unwrap();
    let q = rig.session();
    let titles = ["Write the lexer", "Write the parser"];
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let name = "20260101T000000_0e0e0e0e--question__todo.md";
    let (plan, _) = rig.plan(name, "Ask a question", &steps);

    let question = |title: &str| format!("Which parser for {title}?");
    let asked = |title: &str| {
        let question = question(title);
        let s = crate::util::try_wait_until(T, || {
            let s = rig.status();
            let state = s["state"].as_str()?;
            (state.starts_with("waiting for a person: answer") && state.contains(&question))
                .then_some(s)
        });
        s.unwrap_or_else(|| {
            panic!(
                "no question in status ({}); the terminal:\n{}",
                rig.status(),
                rig.claude.screen()
            )
        })
    };
    let s = asked(titles[0]);
    assert_eq!(s["waiting"], "question", "{s}");
    let warning = rig.wait_log(&["session", &q, "waits for a person"]);
    for field in [
        format!("session=\"{q}\""),
        "step=\"s1\"".to_string(),
        "waiting=\"question\"".to_string(),
    ] {
        assert!(warning.contains(&field), "{field} not in {warning}");
    }
    let first = wait_until("the person to be told", T, || {
        told.notices().first().cloned()
    });
    assert_eq!(
        (first["EVENT"].as_str(), first["STEP"].as_str()),
        ("waiting", "s1")
    );
    assert!(first["BODY"].contains(&question(titles[0])), "{first:?}");
    no_reminder_while_it_waits(&rig);

    // Answered in the TUI (Enter picks the first choice): the answer goes
    // to the model, the wait is told resolved, once, and the agent ticks
    // the step; the plan goes on to the next, which asks too.
    rig.claude.press(&["Enter"]);
    let answered = wait_until("the answer to reach the model", T, || {
        rig.model
            .requests()
            .into_iter()
            .find(|r| r.after_tool && r.last_user.contains(&question(titles[0])))
    });
    assert!(
        answered.tool_output.contains("Yes"),
        "the person's choice is not in the tool result: {:?}",
        answered.tool_output
    );
    wait_until("the answer told resolved", T, || {
        (told.events().len() >= 2).then_some(())
    });
    assert_eq!(told.events()[..2], ["waiting", "resolved"]);
    rig.wait_ticked(&plan, titles[0]);
    asked(titles[1]);
    rig.claude.press(&["Enter"]);
    rig.wait_ticked(&plan, titles[1]);
    rig.wait_status("the session out of its wait", |s| s["waiting"].is_null());
    let events = told.events();
    assert_eq!(events, ["waiting", "resolved", "waiting", "resolved"]);
    let steps: Vec<_> = told.notices().iter().map(|n| n["STEP"].clone()).collect();
    assert_eq!(steps, ["s1", "s1", "s2", "s2"]);
}
