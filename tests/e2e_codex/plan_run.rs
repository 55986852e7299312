//! A plan of three dependent steps, run to its end by the agent itself:
//! with the default prompt, each step reaches the model once, the agent
//! ticks it in the plan file with its own shell tool, and reveille
//! announces the next — measured from the moment each step became ready
//! to the model request of its turn, beside the agent's own fastest path
//! (`thread/queue/add` sent straight to the daemon) in the same run.

use std::time::{Duration, Instant};

use super::rig::{ms, p50_max, step_line, Rig, TURN};
use crate::util::plans::Step;

const GOAL: &str = "Ship the parser";
const TITLES: [&str; 3] = ["Write the lexer", "Write the parser", "Write the checker"];

#[test]
fn a_three_step_plan_runs_to_its_end_with_the_agent_ticking_each_step() {
    let Some(rig) = Rig::start(|_| {}) else {
        return;
    };
    let own = own_fastest_path(&rig, 5);
    let own_busy = own_path_behind_a_turn(&rig, 3);
    let plan = rig.plan(GOAL, &TITLES.map(Step::new));
    for title in TITLES {
        rig.wait_ticked(&plan, title);
    }
    let written = rig
        .files
        .of(&plan)
        .first()
        .expect("the plan's write seen")
        .at;
    let mut latencies = Vec::new();
    let mut after_turn = Vec::new();
    for (i, title) in TITLES.iter().enumerate() {
        let line = step_line(&format!("s{}", i + 1), GOAL, title);
        let ready = match i {
            0 => written,
            _ => rig.ticked_at(&plan, TITLES[i - 1]).unwrap(),
        };
        let turns = rig.turns(&line);
        assert_eq!(
            turns.len(),
            1,
            "s{} reached the model {} times",
            i + 1,
            turns.len()
        );
        assert!(turns[0].at > ready, "s{} ran before it was ready", i + 1);
        let waited = turns[0].at - ready;
        println!(
            "s{}: ready → its turn's model request {}",
            i + 1,
            ms(waited)
        );
        latencies.push(waited);
        if i > 0 {
            // The step became ready mid-turn (the agent ticking the one
            // before): its own turn follows that turn's last answer.
            let previous = step_line(&format!("s{i}"), GOAL, TITLES[i - 1]);
            let last = rig.wait_after_tool(&previous).done.unwrap();
            after_turn.push(turns[0].at - last);
        }
    }
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        format!(
            "# {GOAL}\n\n{}",
            TITLES.map(|t| format!("- [x] {t}\n")).concat()
        )
    );
    let (p50, max) = p50_max(latencies.clone());
    let (own50, own_max) = p50_max(own);
    let (busy50, busy_max) = p50_max(own_busy);
    println!(
        "codex e2e, 3 dependent steps: step ready → its turn's model request p50 {}, max {}; \
         for s2 and s3, ready mid-turn, the previous turn's last answer → the step's request \
         {} and {}. The agent's own fastest path, sent by the test: thread/queue/add to the \
         idle thread → model request p50 {}, max {}; queued behind a running turn, that \
         turn's last answer → the prompt's request p50 {}, max {}",
        ms(p50),
        ms(max),
        ms(after_turn[0]),
        ms(after_turn[1]),
        ms(own50),
        ms(own_max),
        ms(busy50),
        ms(busy_max)
    );
    // The figures are printed for doc/PERFORMANCE.md; what is checked is
    // that each step reached the agent through its own prompt.
    rig.wait_log(&format!("woke idle session {} for s1", rig.session));
    for s in ["s2", "s3"] {
        rig.wait_log(&format!(
            "queued {s} behind the running turn of {}",
            rig.session
        ));
        rig.wait_log(&format!("turn started on {s} in session {}", rig.session));
    }
}

/// The agent's own fastest path: the test queues a prompt on the idle
/// thread itself (`thread/queue/add`, as reveille does) and times it to
/// the model request of its turn; one warm-up, then `n` samples.
fn own_fastest_path(rig: &Rig, n: usize) -> Vec<Duration> {
    let mut direct = rig.codex.client().expect("the codex daemon serves");
    let mut samples = Vec::new();
    for i in 0..=n {
        rig.codex.wait_status("idle", TURN);
        let text = format!("direct queue prompt {i} of {n}");
        let sent = Instant::now();
        direct
            .queue(&rig.codex.thread, &text, &format!("direct-{i}"))
            .expect("thread/queue/add");
        let request = rig.wait_turn(&text);
        if i > 0 {
            samples.push(request.at - sent);
        }
    }
    rig.codex.wait_status("idle", TURN);
    samples
}

/// The agent's own path behind a running turn, as the steps meet it: the
/// test queues a turn in which the agent ticks a line of a scratch file
/// with its shell tool (`TICK`), and right behind it a second prompt, and
/// times the first turn's last answer to the second one's model request.
fn own_path_behind_a_turn(rig: &Rig, n: usize) -> Vec<Duration> {
    let scratch = rig.codex.cwd.join("scratch.md");
    let lines: String = (0..n).map(|i| format!("- [ ] Scratch {i}\n")).collect();
    std::fs::write(&scratch, format!("# Scratch\n\n{lines}")).unwrap();
    let mut direct = rig.codex.client().expect("the codex daemon serves");
    let mut samples = Vec::new();
    for i in 0..n {
        rig.codex.wait_status("idle", TURN);
        let tool_turn = format!(
            "direct tool turn {i}\nTICK {} :: Scratch {i}",
            scratch.display()
        );
        let behind = format!("direct behind {i}");
        for (text, id) in [(&tool_turn, "tool"), (&behind, "behind")] {
            direct
                .queue(&rig.codex.thread, text, &format!("direct-{id}-{i}"))
                .expect("thread/queue/add");
        }
        let next = rig.wait_turn(&behind);
        let last = rig
            .wait_after_tool(&format!("direct tool turn {i}"))
            .done
            .unwrap();
        assert!(
            next.at > last,
            "the queued prompt was folded into the running turn"
        );
        samples.push(next.at - last);
    }
    rig.codex.wait_status("idle", TURN);
    samples
}
