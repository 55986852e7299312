//! opencode under the unit: a real `opencode serve` on 127.0.0.1, reached
//! over HTTP by the daemon the unit runs (this needs `AF_INET`).

use std::time::Duration;

use super::{ready_line, wait_ticked, Deployed};
use crate::util::agents::opencode::{Home, Mode, Opencode};
use crate::util::fakemodel::{chat::Chat, FakeModel};
use crate::util::plans::Step;

/// A turn of the fake model with opencode's own overhead, on a loaded
/// machine.
const T: Duration = Duration::from_secs(40);

#[test]
fn opencode_serve_runs_a_three_step_plan_under_the_unit() {
    if let Some(why) = Opencode::unavailable(Mode::Serve) {
        eprintln!("skipped: {why}");
        return;
    }
    let model = FakeModel::start(vec![Box::new(Chat)], Duration::from_millis(20));
    let oc = Opencode::start(Home::new(&model.url()), Mode::Serve);
    let session = oc.create_session();
    let q = format!("opencode:{session}");
    let Some(unit) = Deployed::start(&q, &format!("[opencode]\nurl = {:?}\n", oc.url())) else {
        return;
    };
    unit.wait_state(&q, "idle", T);
    let titles = ["Write the lexer", "Write the parser", "Write the tests"];
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let plan = unit.plan("a1b2c3d4", "Ship the parser", &steps);
    wait_ticked(&plan, &titles, T, || unit.said().join("\n"));
    oc.wait_idle(&session, T);
    for title in titles {
        let n = model.turns_on(&ready_line(title)).len();
        assert_eq!(n, 1, "{title:?} reached the model {n} times");
    }
    for step in ["s1", "s2", "s3"] {
        unit.wait_said(&[&format!("announced {step} to session {q}")], T);
    }
    unit.wait_state(&q, "idle", T);
    unit.wait_last_delivery(&q, "s3", T);
    // Its turn starting is told after its post's answer: shown a moment
    // later on a loaded machine.
    let mut s = serde_json::Value::Null;
    let started = crate::util::try_wait_until(T, || {
        s = unit.session_status(&q);
        (s["last_delivery"]["outcome"] == "turn_started").then_some(())
    });
    assert!(started.is_some(), "{s}");
    unit.still_running();
}
