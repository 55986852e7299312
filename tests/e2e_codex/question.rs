//! SPEC §12's question for a Codex user: the agent asks the person through
//! Codex's `request_user_input` (offered outside Plan mode with the
//! `default_mode_request_user_input` feature), the thread's status says
//! `waitingOnUserInput` to every client, and reveille — subscribed to no
//! thread, so never asked itself — shows the wait with its question, warns,
//! tells the person once, and sees it resolved when the person answers in
//! the TUI; the agent then ticks the step.

use super::rig::{Rig, TURN};
use crate::util::civil::unix_ms;
use crate::util::notify::Told;
use crate::util::plans::Step;
use crate::util::wait_until;

const WAITING: &str = "waiting for a person: answer";

#[test]
fn a_question_is_a_wait_told_once_and_resolved_by_the_persons_answer() {
    let mut told = None;
    // The step's prompt makes the fake model ask first, then tick.
    let template = "[reveille] Step {id} is ready: {title}\nASK Which parser for {title}?\n\
                    When it is finished, {close}.\n";
    let Some(rig) = Rig::questioning_tapped(|p| {
        told = Some(Told::configure(p));
        p.set("sessions", "remind_after_ms", "1000");
        p.set("prompt", "template", &format!("{template:?}"));
    }) else {
        return;
    };
    let told = told.unwrap();
    let q = rig.session.clone();
    let title = "Write the lexer";
    let plan = rig.plan("Ask first", &[Step::new(title)]);

    let s = wait_until("status to show the question", TURN, || {
        let s = rig.status_of(&q);
        s["state"].as_str()?.starts_with(WAITING).then(|| s.clone())
    });
    assert_eq!(s["waiting"], "question", "{s}");
    assert!(
        s["state"].as_str().unwrap().contains("Which parser for"),
        "{s}"
    );
    let warning = rig.wait_log(&format!("session {q} waits for a person"));
    for field in ["step=\"s1\"", "waiting=\"question\""] {
        assert!(warning.contains(field), "{field} not in {warning}");
    }
    let first = wait_until("the person to be told", TURN, || {
        told.notices().first().cloned()
    });
    assert_eq!(
        (first["EVENT"].as_str(), first["STEP"].as_str()),
        ("waiting", "s1")
    );
    assert!(first["BODY"].contains("Which parser"), "{first:?}");
    // No reminder while it waits: it outlasts two reminder intervals.
    wait_until("the wait to outlast two reminder intervals", TURN, || {
        let since = rig.status_of(&q)["since_unix_ms"].as_u64()?;
        (unix_ms() > since + 2000).then_some(())
    });
    let d = rig.daemon();
    assert_eq!(d.log_count("reminder="), 0, "{}", d.log());

    // The person picks the first choice in the TUI: resolved, and the
    // agent ticks the step.
    wait_until("the question in the TUI", TURN, || {
        rig.codex.screen().contains("Which parser").then_some(())
    });
    rig.codex.press(&["Enter"]);
    wait_until("the answer told resolved", TURN, || {
        (told.events().len() >= 2).then_some(())
    });
    assert_eq!(
        told.events()[..2],
        ["waiting", "resolved"],
        "{}",
        rig.codex.screen()
    );
    rig.wait_ticked(&plan, title);
    assert_eq!(told.events().len(), 2, "told once: {:?}", told.events());

    // Never a party to the answer, as the server saw it.
    let tap = rig.tap.as_ref().unwrap();
    let called = tap.called();
    assert!(called.iter().any(|m| m == "thread/queue/add"), "{called:?}");
    for subscribing in ["thread/resume", "thread/start", "thread/fork"] {
        assert!(!called.iter().any(|m| m == subscribing), "{called:?}");
    }
    assert_eq!(tap.asked(), Vec::<serde_json::Value>::new());
}
