//! Codex under the unit: a real `codex app-server --listen
//! ws://127.0.0.1:P`, reached over a WebSocket by the daemon the unit runs
//! (`[codex] endpoint`; this needs `AF_INET`).

use std::time::Duration;

use super::{ready_line, wait_ticked, Deployed};
use crate::util::agents::codex::{CodexHome, ListeningServer};
use crate::util::fakemodel::{responses::Responses, FakeModel};
use crate::util::plans::Step;

/// A turn of the real Codex on a loaded machine.
const T: Duration = Duration::from_secs(60);

#[test]
fn codex_over_ws_runs_a_three_step_plan_under_the_unit() {
    let model = FakeModel::start(vec![Box::new(Responses)], Duration::from_millis(20));
    let home = match CodexHome::new(&model) {
        Ok(home) => home,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let server = ListeningServer::ws(&home);
    let thread = server.new_thread(&home.work());
    let q = format!("codex:{thread}");
    let sections = format!("[codex]\nendpoint = {:?}\n", server.endpoint);
    let Some(unit) = Deployed::start(&q, &sections) else {
        return;
    };
    let titles = ["Sketch the API", "Build the API", "Document the API"];
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let plan = unit.plan("b2c3d4e5", "Ship the API", &steps);
    wait_ticked(&plan, &titles, T, || unit.said().join("\n"));
    for title in titles {
        let n = model.turns_on(&ready_line(title)).len();
        assert_eq!(n, 1, "{title:?} reached the model {n} times");
    }
    for step in ["s1", "s2", "s3"] {
        unit.wait_said(&[&format!("announced {step} to session {q}")], T);
    }
    unit.wait_state(&q, "idle", T);
    unit.wait_last_delivery(&q, "s3", T);
    let s = unit.session_status(&q);
    assert_eq!(s["kind"], "codex", "{s}");
    unit.still_running();
}
