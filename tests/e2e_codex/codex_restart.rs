//! The agent's program stopped (the TUI and its app-server daemon) and
//! started again (`codex resume <thread>`) mid-plan: the step announced
//! while it was down waits in reveille's outbox — `status` and the journal
//! say why — and is delivered once when it is back.
//!
//! The prompt template here has no close instruction, so the agent
//! answers without ticking and the test ticks each step itself (a person,
//! another agent): the plan waits where the test wants it.

use super::rig::{step_line, toml, Rig, TURN};
use crate::util::plans::{task_complete, Step};

const GOAL: &str = "Port the build";
const TITLES: [&str; 3] = ["Move the sources", "Fix the paths", "Run the tests"];
/// The default template's first line, no close instruction.
pub const NO_CLOSE: &str =
    "[reveille] Step {id} of \"{goal}\" is ready: {title}\nPlan file: {path}\n";

#[test]
fn a_step_announced_while_codex_is_down_is_delivered_once_when_it_is_back() {
    let Some(mut rig) = Rig::start(|p| p.set("prompt", "template", &toml(NO_CLOSE))) else {
        return;
    };
    let line = |i: usize| step_line(&format!("s{}", i + 1), GOAL, TITLES[i]);
    let plan = rig.plan(GOAL, &TITLES.map(Step::new));
    rig.wait_turn(&line(0));
    rig.codex.wait_status("idle", TURN);
    let idle = rig.wait_status("status: idle, s1's turn started", |s| {
        s["state"] == "idle" && s["last_delivery"]["outcome"] == "turn_started"
    });
    assert_eq!(idle["kind"], "codex", "{idle:#}");
    assert_eq!(idle["last_delivery"]["step"], "s1", "{idle:#}");
    rig.wait_log(&format!("woke idle session {} for s1", rig.session));

    rig.codex.stop();
    rig.wait_status("status: gone", |s| s["state"].is_null());
    task_complete(&plan, TITLES[0]);
    rig.wait_log(&format!(
        "cannot deliver to session {}: codex app-server",
        rig.session
    ));
    let down = rig.wait_status("status: s2 refused and pending", |s| {
        s["last_delivery"]["step"] == "s2" && s["pending"] == serde_json::json!(["s2"])
    });
    let why = down["last_delivery"]["outcome"]
        .as_str()
        .unwrap_or_default();
    assert!(why.starts_with("refused: codex app-server"), "{down:#}");
    println!("codex e2e, down: status says {why:?}");
    assert!(rig.turns(&line(1)).is_empty());

    rig.codex.start_again();
    rig.wait_turn(&line(1));
    rig.wait_log(&format!("session {} is reachable again", rig.session));
    rig.wait_log(&format!("woke idle session {} for s2", rig.session));
    rig.wait_status("status: back, s2's turn started, nothing pending", |s| {
        s["last_delivery"]["step"] == "s2"
            && s["last_delivery"]["outcome"] == "turn_started"
            && s["pending"] == serde_json::json!([])
    });
    task_complete(&plan, TITLES[1]);
    rig.wait_turn(&line(2));
    for i in 0..TITLES.len() {
        assert_eq!(
            rig.turns(&line(i)).len(),
            1,
            "s{}: {:#?}",
            i + 1,
            rig.model.requests()
        );
    }
    // The thread holds each of reveille's prompts once, in order.
    let held = rig.codex.user_messages();
    let ours: Vec<String> = held
        .iter()
        .filter(|(_, id)| id.starts_with("reveille:it:"))
        .map(|(t, _)| t.lines().next().unwrap_or("").to_string())
        .collect();
    let want: Vec<String> = (0..3).map(|i| format!("[reveille] {}", line(i))).collect();
    assert_eq!(ours, want, "{held:#?}");
}
