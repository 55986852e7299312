//! reveille killed -9 mid-plan, at three points, and started again each
//! time: every step of the plan still runs, with at most one repeat per
//! kill (the Codex backend finds a prompt already in the thread's history
//! or queue by its id, so in practice none).
//!
//! The points: while the first step's turn runs (delivered, perhaps not
//! yet recorded so); the moment the agent ticked the second step (reveille
//! is announcing the third, or not yet); right after the fourth was
//! accepted (queued behind the third's running turn in Codex's durable
//! queue, or its turn just starting).

use super::rig::{step_line, Rig, TURN};
use crate::util::plans::Step;

const GOAL: &str = "Build the compiler";
const TITLES: [&str; 4] = [
    "Lex the input",
    "Parse the tokens",
    "Check the types",
    "Emit the code",
];

fn line(i: usize) -> String {
    step_line(&format!("s{}", i + 1), GOAL, TITLES[i])
}

#[test]
fn every_step_still_runs_after_reveille_is_killed_mid_plan() {
    let Some(mut rig) = Rig::start(|_| {}) else {
        return;
    };
    let plan = rig.plan(GOAL, &TITLES.map(Step::new));

    rig.at_turn(&line(0));
    rig.kill9();
    rig.start_daemon();

    rig.at_ticked(&plan, TITLES[1]);
    rig.kill9();
    rig.start_daemon();

    let session = rig.session.clone();
    rig.at_log(&[
        &format!("queued s4 behind the running turn of {session}"),
        &format!("woke idle session {session} for s4"),
        &format!("turn started on s4 in session {session}"),
    ]);
    rig.kill9();
    rig.start_daemon();

    for title in TITLES {
        rig.wait_ticked(&plan, title);
    }
    rig.wait_turn(&line(3));
    let counts: Vec<usize> = (0..TITLES.len())
        .map(|i| rig.turns(&line(i)).len())
        .collect();
    println!("codex e2e, 3 kills -9 of reveille: turns per step {counts:?}");
    for (i, n) in counts.iter().enumerate() {
        assert!((1..=2).contains(n), "s{} ran {n} times", i + 1);
    }
    let repeats: usize = counts.iter().map(|n| n - 1).sum();
    assert!(repeats <= 3, "{repeats} repeats after 3 kills");
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        format!(
            "# {GOAL}\n\n{}",
            TITLES.map(|t| format!("- [x] {t}\n")).concat()
        )
    );
}

/// The one window a crash can repeat a prompt in: after the prompt reached
/// Codex, before reveille's `delivered` record. Made deterministic by
/// killing reveille mid-turn and dropping that record from its journal (as
/// if the kill had come a moment earlier): the restarted reveille delivers
/// the step again, and the backend finds it in the thread's history by its
/// id — the model is not asked again.
#[test]
fn a_prompt_whose_delivered_record_was_lost_in_a_crash_is_not_given_again() {
    let Some(mut rig) = Rig::start(|_| {}) else {
        return;
    };
    let title = "Tag the release";
    // delay=3: the model takes 1.5 s before it ticks the step.
    let plan = rig.plan("Release it", &[Step::new(title).desc("delay=3")]);
    let line = step_line("s1", "Release it", title);
    rig.at_turn(&line);
    rig.wait_log(&format!("woke idle session {} for s1", rig.session));
    rig.kill9();
    assert_eq!(
        rig.ticked_at(&plan, title),
        None,
        "s1 was ticked before the kill"
    );
    let journal = rig.project.state_dir.join("journal.jsonl");
    let kept = drop_delivered(&std::fs::read_to_string(&journal).unwrap());
    std::fs::write(&journal, kept).unwrap();

    rig.start_daemon();
    rig.wait_log(&format!("turn started on s1 in session {}", rig.session));
    rig.wait_ticked(&plan, title);
    rig.wait_after_tool(&line);
    rig.codex.wait_status("idle", TURN);
    assert_eq!(rig.turns(&line).len(), 1, "{:#?}", rig.model.requests());
    let ids: Vec<String> = rig
        .codex
        .user_messages()
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    assert_eq!(
        ids.iter().filter(|id| id.starts_with("reveille:")).count(),
        1,
        "{ids:?}"
    );
}

/// The journal without its `delivered` records (there must be one).
fn drop_delivered(journal: &str) -> String {
    let is_delivered =
        |l: &str| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["r"] == "delivered");
    assert!(
        journal.lines().any(is_delivered),
        "no delivered record:\n{journal}"
    );
    journal
        .lines()
        .filter(|l| !is_delivered(l))
        .map(|l| format!("{l}\n"))
        .collect()
}
