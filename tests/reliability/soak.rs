//! Soak: random activity for a long while — plans appearing, steps checked,
//! renames, deletions, tracker tasks, readers coming and going — while the
//! daemon's RSS and open file descriptors are sampled. Ignored by default:
//!
//! ```text
//! REVEILLE_SOAK_SECS=1800 cargo test --release -- --ignored soak --nocapture
//! ```
//!
//! (120 seconds without the variable.) It asserts no growth trend: the
//! last third's maximum is not above the first third's by more than a small
//! margin; and at the end, with every reader back, everything still open is
//! announced and nothing was announced twice.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::setup::{project, start, Rng};
use super::workload::{Tally, World};
use crate::util::fifo::{Reader, Receipt};
use crate::util::wait_until;

const SESSIONS: [&str; 2] = ["s-a", "s-b"];
const DEFAULT: &str = "s-t";

#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Duration,
    rss_kb: u64,
    fds: usize,
}

fn max_of(samples: &[Sample], f: impl Fn(&Sample) -> u64) -> u64 {
    samples.iter().map(f).max().unwrap_or(0)
}

#[test]
#[ignore = "long: REVEILLE_SOAK_SECS=1800 cargo test --release -- --ignored soak --nocapture"]
fn soak_random_activity_shows_no_growth_in_memory_or_file_descriptors() {
    let secs: u64 = std::env::var("REVEILLE_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let every = Duration::from_secs((secs / 100).clamp(1, 5));
    let mut rng = Rng::from_env("soak");
    let mut proj = project("soak");
    proj.configure(|c| {
        c.default_session(DEFAULT);
    });
    let mut readers: BTreeMap<&str, Option<Reader>> = SESSIONS
        .iter()
        .chain([&DEFAULT])
        .map(|s| (*s, Some(proj.reader(s))))
        .collect();
    let mut closed: Vec<(String, Vec<Receipt>)> = Vec::new();
    let d = start(&proj);
    let mut world = World::new(&proj, &SESSIONS, DEFAULT);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let mut next_sample = start;
    let mut samples = Vec::new();
    let (mut ops, mut comings, mut goings) = (0u64, 0u64, 0u64);
    while Instant::now() < deadline {
        if Instant::now() >= next_sample {
            samples.push(Sample {
                at: start.elapsed(),
                rss_kb: d.rss_kb(),
                fds: d.fd_count(),
            });
            next_sample += every;
        }
        // Done plans are archived (deleted) often enough that the plan
        // directory stays small: a steady state, not a growing workload.
        let done = world.plans.iter().filter(|p| !p.gone && !p.live()).count();
        if rng.chance(8) || done > 8 {
            world.delete_plan(&mut rng);
        } else {
            world.act(&proj, &mut rng);
        }
        ops += 1;
        // Readers of the named sessions come and go; the default stays.
        if rng.chance(2) {
            let s = SESSIONS[rng.below(2) as usize];
            let slot = readers.get_mut(s).unwrap();
            match slot.take() {
                Some(r) => {
                    closed.push((s.to_string(), r.close()));
                    goings += 1;
                }
                None => {
                    *slot = Some(proj.reader(s));
                    comings += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(rng.below(40)));
    }
    for (s, slot) in readers.iter_mut() {
        if slot.is_none() {
            *slot = Some(proj.reader(s));
        }
    }
    let all = |readers: &BTreeMap<&str, Option<Reader>>| {
        let mut v = closed.clone();
        v.extend(
            readers
                .iter()
                .map(|(s, r)| (s.to_string(), r.as_ref().unwrap().received())),
        );
        v
    };
    wait_until(
        "every open step and task announced",
        Duration::from_secs(60),
        || {
            Tally::of(&world, &all(&readers))
                .missing(&world)
                .is_empty()
                .then_some(())
        },
    );
    let pid_alive = !d.exited();
    d.stop();
    let tally = Tally::of(&world, &all(&readers));

    let n = samples.len();
    assert!(n >= 6, "too few samples: {n}");
    let first = &samples[..n / 3];
    let last = &samples[n - n / 3..];
    let (rss0, rss1) = (max_of(first, |s| s.rss_kb), max_of(last, |s| s.rss_kb));
    let (fd0, fd1) = (
        max_of(first, |s| s.fds as u64),
        max_of(last, |s| s.fds as u64),
    );
    let min_rss = samples.iter().map(|s| s.rss_kb).min().unwrap();
    let steps: usize = world.plans.iter().map(|p| p.steps.len()).sum();
    eprintln!(
        "soak: {secs}s, {ops} operations, {} plans / {steps} steps, {} tasks, readers came {comings} / went {goings} times; \
         {} prompts ({} distinct); {n} samples every {every:?}",
        world.plans.len(),
        world.tasks.len(),
        tally.total,
        tally.by_key.len()
    );
    eprintln!(
        "soak: RSS min {min_rss} KiB, first-third max {rss0} KiB, last-third max {rss1} KiB; \
         fds first-third max {fd0}, last-third max {fd1}"
    );
    for s in samples.iter().step_by((n / 10).max(1)) {
        eprintln!(
            "soak sample: t={:>5}s rss={} KiB fds={}",
            s.at.as_secs(),
            s.rss_kb,
            s.fds
        );
    }
    assert!(pid_alive);
    tally.assert_exact(&world);
    assert!(
        rss1 <= rss0 + rss0 / 10 + 2048,
        "RSS grew: first third max {rss0} KiB, last third max {rss1} KiB"
    );
    assert!(fd1 <= fd0 + 2, "fds grew: {fd0} → {fd1}");
}
