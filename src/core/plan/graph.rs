//! The dependency graph of a plan: validation (missing references, self
//! references, cycles) shared by both parsers, and the questions the engine
//! asks — which steps are ready, in what order queue mode enqueues them, is
//! everything done.
//!
//! These are `impl Plan` methods so the engine reads `plan.ready()`. All of
//! them are iterative: plans may have thousands of steps, and a recursive
//! walk would turn a long chain into a stack overflow.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::types::{Plan, PlanError, Step, StepStatus};

impl Plan {
    /// Checks what the parsers cannot see line by line: every dependency
    /// points at another existing step, and the graph has no cycle.
    ///
    /// A cycle is reported at the line of its lowest-numbered step, listing
    /// the steps in dependency direction (`s2 → s4` = s2 waits for s4).
    /// O(steps + edges).
    pub fn validate(&self) -> Result<(), PlanError> {
        let mut backward = true;
        for (i, step) in self.steps.iter().enumerate() {
            for &d in &step.deps {
                check_target(&self.steps, i, d, step.line)?;
                backward &= d < i;
            }
        }
        // Every edge points to an earlier step (a stock, sequential plan):
        // no cycle can exist, and Kahn's five arrays are not needed.
        if backward {
            return Ok(());
        }
        let order = kahn(&self.steps, Pick::Any);
        if order.len() == self.steps.len() {
            return Ok(());
        }
        Err(cycle_error(&self.steps, &order))
    }

    /// Indices, in file order, of the open steps whose dependencies are all
    /// checked. `Doing` steps are never ready: someone is already on them.
    /// O(steps + edges).
    pub fn ready(&self) -> Vec<usize> {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.status == StepStatus::Open)
            .filter(|(_, s)| {
                s.deps
                    .iter()
                    .all(|&d| self.steps.get(d).map(|t| t.status) == Some(StepStatus::Checked))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Every step once, dependencies first; among the steps available at any
    /// moment the lowest index goes first, so a stock file (already in
    /// topological order) comes out in file order. On an invalid plan the
    /// steps on or behind a cycle are left out.
    ///
    /// O(edges + steps·log steps): the heap is what makes the order stable.
    pub fn topo_order(&self) -> Vec<usize> {
        kahn(&self.steps, Pick::Smallest)
    }

    /// True when the plan has steps and every one of them is checked.
    pub fn all_checked(&self) -> bool {
        !self.steps.is_empty() && self.steps.iter().all(|s| s.status == StepStatus::Checked)
    }
}

/// Checks that step `from` may depend on the step at index `target`, and
/// reports the problem at `line` otherwise. The markdown parser calls it with
/// the line of the annotation, so the error points where the user wrote it.
pub(crate) fn check_target(
    steps: &[Step],
    from: usize,
    target: usize,
    line: usize,
) -> Result<(), PlanError> {
    let Some(step) = steps.get(from) else {
        return Err(PlanError {
            line,
            message: format!("internal: no step at index {from}"),
        });
    };
    let message = if target == from {
        format!("step {} \"{}\" depends on itself", step.num, step.title)
    } else if target >= steps.len() {
        format!(
            "step {} \"{}\" depends on step {}, which does not exist (the plan has {} step{})",
            step.num,
            step.title,
            target.wrapping_add(1), // `after: 0` arrives as usize::MAX
            steps.len(),
            if steps.len() == 1 { "" } else { "s" }
        )
    } else {
        return Ok(());
    };
    Err(PlanError { line, message })
}

#[derive(Clone, Copy)]
enum Pick {
    /// Any available step: O(steps + edges), enough to detect cycles.
    Any,
    /// The lowest-index available step: a stable order for queue mode.
    Smallest,
}

/// Kahn's algorithm over `deps` (dependency → dependent edges). Returns the
/// steps it could order; fewer than all means a cycle. Out-of-range deps are
/// ignored here — `validate` reports them first.
fn kahn(steps: &[Step], pick: Pick) -> Vec<usize> {
    let n = steps.len();
    // Dependents in compressed form: one allocation however many edges.
    let mut indegree = vec![0usize; n];
    let mut start = vec![0usize; n + 1];
    for s in steps {
        for &d in s.deps.iter().filter(|&&d| d < n) {
            start[d + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut dependents = vec![0usize; start[n]];
    for (i, s) in steps.iter().enumerate() {
        for &d in s.deps.iter().filter(|&&d| d < n) {
            dependents[fill[d]] = i;
            fill[d] += 1;
            indegree[i] += 1;
        }
    }

    let mut order = Vec::with_capacity(n);
    let mut stack: Vec<usize> = Vec::new();
    let mut heap: BinaryHeap<Reverse<usize>> = BinaryHeap::new();
    let roots = (0..n).filter(|&i| indegree[i] == 0);
    match pick {
        Pick::Any => stack.extend(roots),
        Pick::Smallest => heap.extend(roots.map(Reverse)),
    }
    loop {
        let next = match pick {
            Pick::Any => stack.pop(),
            Pick::Smallest => heap.pop().map(|Reverse(i)| i),
        };
        let Some(i) = next else { break };
        order.push(i);
        for &j in &dependents[start[i]..start[i + 1]] {
            indegree[j] -= 1;
            if indegree[j] == 0 {
                match pick {
                    Pick::Any => stack.push(j),
                    Pick::Smallest => heap.push(Reverse(j)),
                }
            }
        }
    }
    order
}

/// Names one cycle among the steps Kahn's algorithm could not order.
///
/// Each such step still waits for at least one other unordered step, so
/// following those dependencies from any of them must come back to a step
/// already seen: that loop is a cycle.
fn cycle_error(steps: &[Step], ordered: &[usize]) -> PlanError {
    let n = steps.len();
    let mut done = vec![false; n];
    for &i in ordered {
        done[i] = true;
    }
    let mut seen_at = vec![usize::MAX; n];
    let mut path = Vec::new();
    let mut cur = (0..n).find(|&i| !done[i]);
    while let Some(i) = cur {
        if seen_at[i] != usize::MAX {
            break;
        }
        seen_at[i] = path.len();
        path.push(i);
        cur = steps[i].deps.iter().copied().find(|&d| d < n && !done[d]);
    }
    let cycle: Vec<usize> = match cur {
        Some(i) => path[seen_at[i]..].to_vec(),
        None => path, // unreachable on a well-formed Step list; keep a message anyway
    };
    let low = cycle
        .iter()
        .enumerate()
        .min_by_key(|&(_, &s)| s)
        .map_or(0, |(p, _)| p);
    let mut names: Vec<&str> = cycle[low..]
        .iter()
        .chain(&cycle[..low])
        .map(|&i| steps[i].label.as_str())
        .collect();
    let first = names.first().copied().unwrap_or("?");
    names.push(first);
    PlanError {
        line: cycle.get(low).map_or(0, |&i| steps[i].line),
        message: format!(
            "dependency cycle: {} (each step waits for the next)",
            names.join(" → ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn step(num: usize, status: StepStatus, deps: &[usize]) -> Step {
        Step {
            num,
            key: format!("step {num}"),
            label: format!("s{num}"),
            title: format!("step {num}"),
            written: None,
            description: String::new(),
            status,
            deps: deps.to_vec(),
            line: num * 2,
        }
    }

    fn plan(steps: Vec<Step>) -> Plan {
        Plan {
            goal: String::new(),
            session: None,
            steps,
        }
    }

    use StepStatus::{Checked as C, Doing as D, Open as O};

    #[test]
    fn ready_table() {
        // (statuses, deps per step, expected ready)
        type Case = (
            &'static [StepStatus],
            &'static [&'static [usize]],
            &'static [usize],
        );
        let cases: &[Case] = &[
            (&[], &[], &[]),
            (&[O, O, O], &[&[], &[0], &[1]], &[0]),
            (&[C, O, O], &[&[], &[0], &[1]], &[1]),
            (&[C, C, O], &[&[], &[0], &[1]], &[2]),
            (&[O, O, O, O], &[&[], &[0], &[0], &[1, 2]], &[0]),
            (&[C, O, O, O], &[&[], &[0], &[0], &[1, 2]], &[1, 2]),
            (&[C, C, O, O], &[&[], &[0], &[0], &[1, 2]], &[2]),
            (&[C, C, C, O], &[&[], &[0], &[0], &[1, 2]], &[3]),
            (&[D, O], &[&[], &[0]], &[]),
            (&[C, D, O], &[&[], &[], &[0]], &[2]),
            (&[O, C, O], &[&[], &[0], &[1]], &[0, 2]),
        ];
        for (statuses, deps, want) in cases {
            let p = plan(
                statuses
                    .iter()
                    .zip(deps.iter())
                    .enumerate()
                    .map(|(i, (&st, d))| step(i + 1, st, d))
                    .collect(),
            );
            assert_eq!(p.ready(), *want, "{statuses:?} {deps:?}");
        }
    }

    #[test]
    fn topo_order_prefers_lowest_index() {
        let p = plan(vec![
            step(1, O, &[2]),
            step(2, O, &[]),
            step(3, O, &[]),
            step(4, O, &[1]),
        ]);
        assert_eq!(p.topo_order(), vec![1, 2, 0, 3]);
    }

    #[test]
    fn all_checked_needs_steps() {
        assert!(!plan(vec![]).all_checked());
        assert!(!plan(vec![step(1, C, &[]), step(2, D, &[])]).all_checked());
        assert!(plan(vec![step(1, C, &[]), step(2, C, &[0])]).all_checked());
    }

    #[test]
    fn validate_reports_cycle_from_lowest_step() {
        let p = plan(vec![
            step(1, O, &[]),
            step(2, O, &[3]),
            step(3, O, &[1]),
            step(4, O, &[1]),
            step(5, O, &[3]),
        ]);
        let err = p.validate().unwrap_err();
        assert_eq!(
            err.message,
            "dependency cycle: s2 → s4 → s2 (each step waits for the next)"
        );
        assert_eq!(err.line, 4);
    }

    #[test]
    fn validate_reports_missing_and_self() {
        let p = plan(vec![step(1, O, &[]), step(2, O, &[7])]);
        let err = p.validate().unwrap_err();
        assert_eq!(
            err.message,
            "step 2 \"step 2\" depends on step 8, which does not exist (the plan has 2 steps)"
        );
        let p = plan(vec![step(1, O, &[0])]);
        assert_eq!(
            p.validate().unwrap_err().message,
            "step 1 \"step 1\" depends on itself"
        );
    }

    #[test]
    fn long_chain_does_not_overflow_the_stack() {
        let n = 200_000;
        let mut steps: Vec<Step> = (0..n)
            .map(|i| step(i + 1, C, if i == 0 { &[] } else { &[0] }))
            .collect();
        for (i, s) in steps.iter_mut().enumerate().skip(1) {
            s.deps = vec![i - 1];
        }
        steps[0].deps = vec![n - 1];
        let err = plan(steps.clone()).validate().unwrap_err();
        assert_eq!(err.line, 2);
        steps[0].deps.clear();
        let p = plan(steps);
        assert!(p.validate().is_ok());
        assert_eq!(p.topo_order().len(), n);
    }

    /// A random acyclic plan: edges go from a higher to a lower position in a
    /// random permutation, so some references point forward in file order.
    fn arb_dag() -> impl Strategy<Value = Plan> {
        (0usize..40)
            .prop_flat_map(|n| {
                (
                    Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
                    proptest::collection::vec(
                        proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
                        n,
                    ),
                    proptest::collection::vec(prop_oneof![Just(O), Just(D), Just(C)], n),
                )
            })
            .prop_map(|(perm, picks, statuses)| {
                let n = perm.len();
                // rank[i] = position of step i in the hidden topological order
                let mut steps: Vec<Step> = (0..n).map(|i| step(i + 1, statuses[i], &[])).collect();
                for i in 0..n {
                    let r = perm[i];
                    if r == 0 {
                        continue;
                    }
                    let mut deps: Vec<usize> = picks[i]
                        .iter()
                        .map(|ix| {
                            let lower_rank = ix.index(r);
                            perm.iter().position(|&p| p == lower_rank).unwrap_or(0)
                        })
                        .collect();
                    deps.sort_unstable();
                    deps.dedup();
                    steps[i].deps = deps;
                }
                plan(steps)
            })
    }

    proptest! {
        #[test]
        fn ready_steps_have_only_checked_deps(p in arb_dag()) {
            prop_assert!(p.validate().is_ok());
            for i in p.ready() {
                prop_assert_eq!(p.steps[i].status, O);
                for &d in &p.steps[i].deps {
                    prop_assert_eq!(p.steps[d].status, C);
                }
            }
            // and nothing that qualifies is missed
            let expected = (0..p.steps.len())
                .filter(|&i| p.steps[i].status == O && p.steps[i].deps.iter().all(|&d| p.steps[d].status == C))
                .count();
            prop_assert_eq!(p.ready().len(), expected);
        }

        #[test]
        fn topo_order_is_a_permutation_respecting_edges(p in arb_dag()) {
            let order = p.topo_order();
            let n = p.steps.len();
            let mut pos = vec![usize::MAX; n];
            for (k, &i) in order.iter().enumerate() {
                prop_assert_eq!(pos[i], usize::MAX, "step {} twice", i);
                pos[i] = k;
            }
            prop_assert_eq!(order.len(), n);
            for (i, s) in p.steps.iter().enumerate() {
                for &d in &s.deps {
                    prop_assert!(pos[d] < pos[i], "edge {} -> {} violated", d, i);
                }
            }
        }

        #[test]
        fn topo_order_is_lexicographically_smallest(p in arb_dag()) {
            // Naive O(n²) reference: repeatedly take the smallest available step.
            let n = p.steps.len();
            let mut taken = vec![false; n];
            let mut want = Vec::new();
            while let Some(i) = (0..n).find(|&i| !taken[i] && p.steps[i].deps.iter().all(|&d| taken[d])) {
                taken[i] = true;
                want.push(i);
            }
            prop_assert_eq!(p.topo_order(), want);
        }

        #[test]
        fn a_back_edge_is_a_cycle(p in arb_dag(), a in any::<prop::sample::Index>()) {
            // Close a cycle through an existing edge d -> i by adding i -> d.
            let edges: Vec<(usize, usize)> = p.steps.iter().enumerate()
                .flat_map(|(i, s)| s.deps.iter().map(move |&d| (i, d)))
                .collect();
            prop_assume!(!edges.is_empty());
            let (i, d) = edges[a.index(edges.len())];
            let mut q = p.clone();
            q.steps[d].deps.push(i);
            let err = q.validate().unwrap_err();
            prop_assert!(err.message.starts_with("dependency cycle: "), "{}", err.message);
            prop_assert!(q.topo_order().len() < q.steps.len());
        }

        // The parsers feed this module; whatever they accept must be a valid
        // graph, and nothing a file holds may panic them.
        #[test]
        fn markdown_never_panics_on_arbitrary_text(text in any::<String>()) {
            if let Ok(p) = crate::core::plan::markdown::parse(&text) {
                prop_assert!(p.validate().is_ok());
            }
        }

        #[test]
        fn markdown_plan_shaped_text_parses_to_a_valid_graph(
            text in r"(# [a-z ]{0,8}\r?\n|[-*+] \[[ xX]\] [a-z ]{0,6}( \((after|AFTER): ?([sq]?[1-4][, ]{0,2}){1,3}\))?\r?\n|[ \t]{1,3}(after: ([1-3]|none)|<!-- session: [a-z]{0,3} -->|[a-z]{0,5})\r?\n|---\n|```\n|[0-9]{1,3}[.)] \[ \] x\n|\n){0,30}"
        ) {
            match crate::core::plan::markdown::parse(&text) {
                Ok(p) => {
                    prop_assert!(p.validate().is_ok());
                    prop_assert_eq!(p.topo_order().len(), p.steps.len());
                    for (i, s) in p.steps.iter().enumerate() {
                        prop_assert_eq!(s.num, i + 1);
                        prop_assert!(!s.deps.contains(&i));
                    }
                }
                Err(e) => {
                    // every error points at a real line of the file
                    prop_assert!(e.line >= 1 && e.line <= text.split('\n').count(), "{:?}", e);
                    prop_assert!(!e.message.is_empty());
                }
            }
        }

        #[test]
        fn parse_plan_never_panics_on_arbitrary_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            json in any::<bool>(),
        ) {
            use crate::core::plan::{parse_plan, PlanFormat};
            let format = if json { PlanFormat::Json } else { PlanFormat::Markdown };
            let _ = parse_plan(format, &bytes, 150);
        }
    }
}
