//! Fan-out through the real server: parallel steps of a plan go to real
//! child sessions reveille creates with `s/new`; each child runs its one
//! step (and ticks it itself), the parent hears of each completion, the
//! join comes back to the parent, idle children are killed.

use std::path::Path;

use super::{plan_path, ticked, toml, Rig, AGENT, T};
use crate::util::daemon::Daemon;
use crate::util::plans::{plan_text, write_in_place, Step};
use crate::util::realollie::Options;
use crate::util::wait_until;

/// The step prompt shows the description, which carries what the agent
/// needs (the child's prompt, not configurable, shows it too).
const DESCRIBED: &str = "[reveille] {id} {title}\n{description}\n";

/// Three parallel steps and a join. Each description holds the step's TICK
/// line, and a `delay=` that staggers the agents' ticks: the tick script
/// rewrites the whole file, and two at one instant would undo each other
/// (a hazard of any shared plan, doc/FANOUT.md, not what this is about).
fn parallel_plan(path: &Path) {
    let step = |title: &str, after: &str, delay: &str| {
        let tick = format!("TICK {} :: {title}", path.display());
        Step::new(title).desc(&format!("after: {after}\ndelay={delay}\n{tick}"))
    };
    let steps = [
        step("Alpha", "none", "0.2"),
        step("Beta", "none", "0.5"),
        step("Gamma", "none", "0.8"),
        step("Join", "1, 2, 3", "0.2"),
    ];
    write_in_place(path, plan_text("fan out", &steps, "").as_bytes());
}

/// Runs the parallel plan with `max_children = 2` to its end and checks
/// what every agent did.
fn fan_out(mut rig: Rig) {
    rig.project.set("fanout", "max_children", "2");
    rig.project.set("sessions", "state_poll_ms", "100");
    rig.project.set("prompt", "template", &toml(DESCRIBED));
    let daemon = Daemon::start(&rig.project);
    let plan = plan_path(&rig.plans, "fan out");
    parallel_plan(&plan);
    // Distinct ids: a read of `idx` while it changes can come back with a
    // row twice (upstream: reading to end of file is not atomic).
    let children = wait_until("two child sessions in s/idx", T, || {
        let ids: std::collections::BTreeSet<String> = rig
            .ollie
            .idx()
            .into_iter()
            .map(|r| r.id)
            .filter(|id| id != AGENT)
            .collect();
        (ids.len() == 2).then(|| ids.into_iter().collect::<Vec<_>>())
    });
    wait_until("every step ticked and both completions told", T, || {
        let done = ["Alpha", "Beta", "Gamma", "Join"]
            .iter()
            .all(|t| ticked(&plan, t));
        let told = ["s2", "s3"].iter().all(|s| {
            !rig.ollie
                .turns_with(&format!("{s} was completed by child"))
                .is_empty()
        });
        (done && told).then_some(())
    });
    let turns = rig.ollie.wait_quiet(T);
    let context = || format!("{}\n{}", rig.ollie.describe(), daemon.log());
    for title in ["Alpha", "Beta", "Gamma", "Join"] {
        let ran: Vec<_> = turns
            .iter()
            .filter(|t| t.ticks().iter().any(|(_, s)| s == title))
            .collect();
        assert_eq!(
            ran.len(),
            1,
            "{title} ran {} times\n{}",
            ran.len(),
            context()
        );
        let by_child = ran[0]
            .prompt
            .contains(&format!("sub-agent of session {AGENT}"));
        assert_eq!(
            by_child,
            title == "Beta" || title == "Gamma",
            "{title}: {:?}",
            ran[0].prompt
        );
    }
    for (step, child) in ["s2", "s3"].iter().zip(&children) {
        let told = rig
            .ollie
            .turns_with(&format!("{step} was completed by child"));
        assert_eq!(
            told.len(),
            1,
            "the parent told of {step} once\n{}",
            context()
        );
        assert!(
            children.iter().any(|c| told[0].prompt.contains(c.as_str())),
            "{child}: {:?}",
            told[0].prompt
        );
    }
    wait_until("the idle children to be killed", T, || {
        rig.ollie.idx().iter().all(|r| r.id == AGENT).then_some(())
    });
}

#[test]
fn parallel_steps_run_in_real_children_each_once_and_the_parent_hears_of_each() {
    let Some(rig) = Rig::new(Options::default(), DESCRIBED) else {
        return;
    };
    fan_out(rig);
}

/// The same with the children's backend configured: what works through
/// the real server once `s/new` gets a backend it accepts.
#[test]
fn with_fanout_backend_configured_parallel_steps_run_in_real_children() {
    let Some(mut rig) = Rig::new(Options::default(), DESCRIBED) else {
        return;
    };
    rig.project.set("fanout", "backend", &toml("openai"));
    fan_out(rig);
}
