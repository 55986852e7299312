//! The plan.json parser on arbitrary bytes: never panics, and what it
//! accepts is a valid plan (dependencies exist, no cycle) whose ready set,
//! topological order and `all_checked` can be computed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reveille::core::plan::{parse_plan, PlanFormat, StepStatus};

fuzz_target!(|data: &[u8]| {
    let Ok(plan) = parse_plan(PlanFormat::Json, data, 1 << 20) else {
        return;
    };
    check(&plan);
});

fn check(plan: &reveille::core::plan::Plan) {
    let n = plan.steps.len();
    for (i, step) in plan.steps.iter().enumerate() {
        assert_eq!(step.num, i + 1);
        assert!(step.deps.iter().all(|&d| d < n && d != i), "{step:?}");
    }
    assert!(plan.validate().is_ok());
    let order = plan.topo_order();
    assert_eq!(order.len(), n);
    for r in plan.ready() {
        let step = &plan.steps[r];
        assert_eq!(step.status, StepStatus::Open);
        assert!(step
            .deps
            .iter()
            .all(|&d| plan.steps[d].status == StepStatus::Checked));
    }
    let _ = plan.all_checked();
}
