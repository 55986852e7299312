//! The kill -9 loop through the real server: three real agents work
//! through their plans while reveille is killed with SIGKILL at random
//! points and started again. Every plan finishes; a kill can repeat at
//! most the one prompt it interrupted in each session (at-least-once, no
//! loss: each session's lane has at most one prompt between its record
//! and its delivered mark, and the three lanes deliver side by side).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{ticked, Rig, AGENT, T, TICKING};
use crate::util::daemon::Daemon;
use crate::util::plans::Step;
use crate::util::realollie::Options;
use crate::util::{try_wait_until, wait_until};

const AGENTS: [&str; 3] = [AGENT, "a2", "a3"];
const PLANS_PER_AGENT: usize = 2;
const STEPS: usize = 2;
const KILLS: usize = 4;

/// xorshift64*: enough randomness for kill points, and a seed to replay.
struct Dice(u64);

impl Dice {
    fn new() -> Dice {
        let seed = std::env::var("REVEILLE_KILL9_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        eprintln!("kill -9 loop: seed {seed} (REVEILLE_KILL9_SEED replays it)");
        Dice(seed)
    }
    /// A number in `1..=n`.
    fn roll(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n + 1
    }
}

#[test]
fn agents_finish_every_plan_while_reveille_is_killed_at_random_points() {
    let Some(mut rig) = Rig::new(Options { fake_delay: 0.1 }, TICKING) else {
        return;
    };
    rig.project.set("sessions", "state_poll_ms", "100");
    for agent in &AGENTS[1..] {
        rig.ollie.create(agent, &rig.ollie.work());
    }
    let mut daemon = Some(Daemon::start(&rig.project));
    let mut plans = Vec::new();
    for agent in AGENTS {
        for p in 0..PLANS_PER_AGENT {
            let titles: Vec<String> = (1..=STEPS)
                .map(|s| format!("{agent} plan {p} step {s}"))
                .collect();
            let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
            let (path, _) = rig.plan_with(
                &format!("{agent} {p}"),
                &steps,
                &format!("<!-- session: {agent} -->\n"),
            );
            plans.push((path, titles));
        }
    }
    let all_done = || {
        plans
            .iter()
            .all(|(path, titles)| titles.iter().all(|t| ticked(path, t)))
    };
    let mut dice = Dice::new();
    let mut kills = 0;
    while kills < KILLS && !all_done() {
        // A random point: after a random number of further model requests.
        let at = rig.ollie.requests().len() as u64 + dice.roll(5);
        let reached = try_wait_until(T, || {
            (rig.ollie.requests().len() as u64 >= at || all_done()).then_some(())
        });
        assert!(
            reached.is_some(),
            "the agents stopped working\n{}",
            rig.ollie.describe()
        );
        daemon.take().expect("running").kill9();
        kills += 1;
        daemon = Some(Daemon::start(&rig.project));
    }
    wait_until("every plan to finish", Duration::from_secs(25), || {
        all_done().then_some(())
    });
    let turns = rig.ollie.wait_quiet(T);
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    for (_, title) in turns.iter().flat_map(|t| t.ticks()) {
        *runs.entry(title.clone()).or_default() += 1;
    }
    let repeats: usize = runs.values().map(|n| n - 1).sum();
    eprintln!(
        "kill -9 loop: {kills} kills, {} turns, {repeats} repeated prompt(s)",
        turns.len()
    );
    let log = daemon.as_ref().map(Daemon::log).unwrap_or_default();
    for (_, titles) in &plans {
        for t in titles {
            assert!(
                runs.contains_key(t),
                "{t} never reached its agent\n{}\n{log}",
                rig.ollie.describe()
            );
        }
    }
    // Per session: its steps' titles begin with its name.
    let mut per_session: BTreeMap<&str, usize> = BTreeMap::new();
    for (title, n) in &runs {
        let session = title.split(" plan ").next().unwrap_or(title);
        *per_session.entry(session).or_default() += n - 1;
    }
    assert!(
        per_session.values().all(|&r| r <= kills),
        "more repeats in a session than {kills} kills: {per_session:?} {runs:?}\n{}",
        rig.ollie.describe()
    );
    assert_eq!(
        turns.len(),
        runs.values().sum::<usize>(),
        "a turn that was no step's: {turns:?}"
    );
}
