//! Reminders through the real program: an idle agent that answered its
//! step's prompt without ticking it is reminded after
//! `sessions.remind_after_ms`, the reminder reaches the model — and,
//! carrying the close instruction, the agent acts on it and ticks the
//! step. The reminder comes from a reveille started after the delivery
//! (the first was killed -9), which has delivered nothing to the session
//! in its run: it follows the session from its start (`Backend::observe`).

use std::time::{Duration, Instant};

use super::codex_restart::NO_CLOSE;
use super::rig::{ms, step_line, toml, Rig};
use crate::util::plans::Step;

const GOAL: &str = "Write the report";
const TITLE: &str = "Summarise the findings";
const REMIND_AFTER: Duration = Duration::from_secs(2);

#[test]
fn an_idle_agent_with_its_step_open_is_reminded_after_a_restart_and_acts_on_it() {
    let Some(mut rig) = Rig::start(|p| {
        p.set("prompt", "template", &toml(NO_CLOSE));
        p.set(
            "sessions",
            "remind_after_ms",
            &REMIND_AFTER.as_millis().to_string(),
        );
    }) else {
        return;
    };
    let line = step_line("s1", GOAL, TITLE);
    let plan = rig.plan(GOAL, &[Step::new(TITLE)]);
    rig.wait_turn(&line);
    let first_log = rig.daemon().log_path.clone();
    rig.kill9();
    let first = std::fs::read_to_string(first_log).unwrap();
    assert!(
        !first.contains("reminded session"),
        "reminded before the kill:\n{first}"
    );

    let restarted = Instant::now();
    rig.start_daemon();
    let reminder = rig.wait_turn("Reminder 1 of 3: s1 is still open");
    rig.wait_log(&format!(
        "reminded session {} of s1 (reminder 1 of 3)",
        rig.session
    ));
    rig.wait_ticked(&plan, TITLE);
    let after = reminder.at - restarted;
    println!(
        "codex e2e: reminder 1 reached the model {} after the restart",
        ms(after)
    );
    assert!(after >= REMIND_AFTER, "reminded after {}", ms(after));
    assert_eq!(rig.turns(&line).len(), 1, "{:#?}", rig.model.requests());
    assert_eq!(rig.turns("Reminder 1 of 3").len(), 1);
    assert!(rig.turns("Reminder 2 of 3").is_empty());
}
