//! The engine's invariants over random DAG plans and random edit
//! sequences (doc/ARCHITECTURE.md, Invariants).

use super::*;

#[derive(Debug, Clone)]
enum Op {
    Check(usize),
    Uncheck(usize),
    Insert(usize),
    Rename(usize),
    Delete,
    Restart,
    Reader(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..12usize).prop_map(Op::Check),
        1 => (0..12usize).prop_map(Op::Uncheck),
        1 => (0..12usize).prop_map(Op::Insert),
        1 => (0..4usize).prop_map(Op::Rename),
        1 => Just(Op::Delete),
        1 => Just(Op::Restart),
        1 => any::<bool>().prop_map(Op::Reader),
    ]
}

/// A plan model: titles, checked flags and explicit dependencies by title.
#[derive(Debug, Clone)]
struct Model {
    titles: Vec<String>,
    checked: Vec<bool>,
    /// deps[i]: indices < i.
    deps: Vec<Vec<usize>>,
    state: &'static str,
    exists: bool,
}

impl Model {
    fn render(&self) -> String {
        let mut s = String::from("# Goal\n\n");
        for i in 0..self.titles.len() {
            let refs: Vec<String> = self.deps[i].iter().map(|d| (d + 1).to_string()).collect();
            let ann = if refs.is_empty() {
                "none".to_string()
            } else {
                refs.join(", ")
            };
            s.push_str(&format!(
                "- [{}] {}\n  after: {ann}\n",
                if self.checked[i] { "x" } else { " " },
                self.titles[i]
            ));
        }
        s
    }
    fn name(&self) -> String {
        format!("20261130T101500_a1b2c3d4--p__{}.md", self.state)
    }
    fn ready(&self) -> Vec<String> {
        (0..self.titles.len())
            .filter(|&i| !self.checked[i] && self.deps[i].iter().all(|&d| self.checked[d]))
            .map(|i| self.titles[i].clone())
            .collect()
    }
    fn live(&self) -> bool {
        self.exists && (self.state == "todo" || self.state == "wip")
    }
}

fn dag() -> impl Strategy<Value = Model> {
    (1..10usize)
        .prop_flat_map(|n| {
            let deps = (0..n)
                .map(|i| proptest::collection::vec(0..i.max(1), 0..3))
                .collect::<Vec<_>>();
            (Just(n), deps, proptest::collection::vec(any::<bool>(), n))
        })
        .prop_map(|(n, deps, checked)| {
            let deps = deps
                .into_iter()
                .enumerate()
                .map(|(i, d)| {
                    let mut d: Vec<usize> = d.into_iter().filter(|&x| x < i).collect();
                    d.sort();
                    d.dedup();
                    d
                })
                .collect();
            Model {
                titles: (0..n).map(|i| format!("Task {i}")).collect(),
                checked,
                deps,
                state: "todo",
                exists: true,
            }
        })
}

proptest! {
    // 200 cases by default; PROPTEST_CASES=20000 for a long run.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200),
        .. ProptestConfig::default()
    })]

    /// Never early, never lost, never repeated (except after a crash that
    /// interrupted a write), never for ended plans, renames never re-announce.
    #[test]
    fn wakeups_are_exact(mut model in dag(), ops in proptest::collection::vec(op(), 1..30)) {
        let mut config = EngineConfig::new(PLAN_DIR, SESSIONS);
        config.default_session = Some("s1".into());
        config.nudge_done = false;
        let mut rig = Rig::new(config.clone(), Some(Memory::started()));
        rig.world.readers.insert("s1".into(), true);
        // Reads as the daemon's: a file written within the settle time is
        // fresh.
        rig.world.fresh_reads = true;
        rig.startup();
        rig.write(&model.name(), &model.render());
        // Titles announced (delivered or pending) and not checked since.
        let mut outstanding: std::collections::BTreeSet<String> = Default::default();
        for (_, _, text) in std::mem::take(&mut rig.world.delivered) {
            let title = model.titles.iter().find(|t| text.contains(&format!("ready: {t}\n")));
            outstanding.insert(title.expect("prompt names a step").clone());
        }
        let mut next_title = 100;
        for op in ops {
            let before = model.name();
            match op {
                Op::Check(i) if model.exists && !model.titles.is_empty() => {
                    let i = i % model.titles.len();
                    model.checked[i] = true;
                    outstanding.remove(&model.titles[i]);
                    rig.write(&model.name(), &model.render());
                }
                Op::Uncheck(i) if model.exists && !model.titles.is_empty() => {
                    let i = i % model.titles.len();
                    if model.checked[i] {
                        model.checked[i] = false;
                        rig.write(&model.name(), &model.render());
                    }
                }
                Op::Insert(i) if model.exists => {
                    // Insert at the end, depending on an earlier step: keeps
                    // refs by number valid.
                    let dep = if model.titles.is_empty() { vec![] } else { vec![i % model.titles.len()] };
                    model.titles.push(format!("Task {next_title}"));
                    next_title += 1;
                    model.checked.push(false);
                    model.deps.push(dep);
                    rig.write(&model.name(), &model.render());
                }
                Op::Rename(s) if model.exists => {
                    model.state = ["todo", "wip", "done", "abandoned"][s];
                    if model.name() != before {
                        rig.rename(&before, &model.name());
                        rig.settle();
                    }
                }
                Op::Delete if model.exists => {
                    model.exists = false;
                    rig.delete(&before);
                    rig.settle();
                    outstanding.clear();
                }
                Op::Restart => {
                    let memory = rig.engine.memory().clone();
                    let mut again = Rig::new(config.clone(), Some(memory));
                    again.world.readers = rig.world.readers.clone();
                    again.world.files = rig.world.files.clone();
                    again.world.written = rig.world.written.clone();
                    again.world.fresh_reads = true;
                    again.now = rig.now;
                    rig = again;
                    rig.startup();
                }
                Op::Reader(on) => {
                    rig.world.readers.insert("s1".into(), on);
                    rig.settle();
                }
                _ => {}
            }
            // Every delivered prompt was ready at the time, and new.
            for (_, _, text) in std::mem::take(&mut rig.world.delivered) {
                let title = model.titles.iter().find(|t| text.contains(&format!("ready: {t}\n"))).cloned();
                let title = title.expect("prompt names a step");
                let i = model.titles.iter().position(|t| *t == title).unwrap();
                prop_assert!(model.live(), "announced for an ended plan");
                prop_assert!(!model.checked[i], "announced a checked step {title}");
                prop_assert!(model.deps[i].iter().all(|&d| model.checked[d]), "announced {title} early");
                prop_assert!(outstanding.insert(title.clone()), "announced {title} twice");
            }
            // Nothing ready is left unannounced (delivered or pending).
            if model.live() {
                let pending: std::collections::BTreeSet<String> = rig
                    .engine
                    .memory()
                    .outbox.prompts()
                    .filter_map(|p| model.titles.iter().find(|t| p.text.contains(&format!("ready: {t}\n"))).cloned())
                    .collect();
                for title in model.ready() {
                    prop_assert!(
                        outstanding.contains(&title) || pending.contains(&title),
                        "ready step {title} never announced"
                    );
                }
            }
            // Pending prompts are delivered once the reader comes back; then
            // they count as outstanding like any other delivery.
            for title in rig.engine.memory().outbox.prompts()
                .filter_map(|p| model.titles.iter().find(|t| p.text.contains(&format!("ready: {t}\n"))).cloned()) {
                outstanding.remove(&title);
            }
        }
    }
}
