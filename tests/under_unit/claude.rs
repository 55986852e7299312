//! Claude Code under the unit: a real `claude` TUI run by the manager's
//! user (as a person's Claude Code runs as the person), its registry in
//! `[claude] config_dir`, and its messaging socket wherever its own
//! `TMPDIR` put it: the daemon under the unit, with the unit's
//! environment (no `TMPDIR` of its own), finds it through the registry.

use std::time::Duration;

use super::{ready_line, wait_ticked, Deployed};
use crate::util::agents::claude::{one_at_a_time, Claude};
use crate::util::fakemodel::{messages::Messages, FakeModel};
use crate::util::plans::Step;
use crate::util::systemd::{unavailable, user_ids};

/// How long anything the agent does may take here (a loaded machine).
const T: Duration = Duration::from_secs(30);

#[test]
fn claude_code_runs_a_three_step_plan_under_the_unit() {
    let _one = one_at_a_time();
    if let Some(why) = unavailable() {
        eprintln!("SKIPPED: systemd tests need {why}");
        return;
    }
    let model = FakeModel::start(vec![Box::new(Messages)], Duration::from_millis(20));
    let mut claude = match Claude::new_owned(&model, Some(user_ids())) {
        Ok(c) => c,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let reg = claude.start();
    let uid = std::fs::read_to_string(format!("/proc/{}/status", reg.pid)).unwrap();
    let uid = uid.lines().find_map(|l| l.strip_prefix("Uid:")).unwrap();
    assert_eq!(
        uid.split_whitespace().next(),
        Some(user_ids().0.to_string().as_str()),
        "Claude Code runs as the unit's user"
    );
    let q = format!("claude:{}", reg.session_id);
    let sections = format!(
        "[claude]\nconfig_dir = {:?}\n",
        claude.config_dir.display().to_string()
    );
    let Some(unit) = Deployed::start(&q, &sections) else {
        return;
    };
    unit.wait_state(&q, "idle", T);
    let titles = ["Outline the talk", "Write the slides", "Rehearse the talk"];
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let plan = unit.plan("c3d4e5f6", "Give the talk", &steps);
    wait_ticked(&plan, &titles, T, || {
        format!(
            "{}\nthe terminal:\n{}",
            unit.said().join("\n"),
            claude.screen()
        )
    });
    claude.wait_idle(&reg.session_id, T);
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
    assert_eq!(s["kind"], "claude", "{s}");
    unit.still_running();
}
