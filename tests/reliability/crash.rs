//! `kill -9` at random points, and a long SIGSTOP, under a workload of
//! plans and tracker tasks; one reader per session stays open across
//! restarts and records every prompt.
//!
//! The promise checked: every step and task that became ready and is still
//! open is announced; nothing is announced early; a prompt is repeated only
//! across a crash (never twice by one daemon), and a crash repeats at most
//! one prompt (the one written but not yet marked delivered).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::setup::{project, start, Rng, READY};
use super::workload::{Key, Tally, World};
use crate::util::daemon::Daemon;
use crate::util::fifo::{Reader, Receipt};
use crate::util::project::Project;
use crate::util::wait_until;

/// Sessions plans name; tasks and plans without a session comment go to
/// `DEFAULT`.
const SESSIONS: [&str; 2] = ["s-a", "s-b"];
const DEFAULT: &str = "s-t";

/// Every session: the named ones, then the default.
fn sessions() -> impl Iterator<Item = &'static str> {
    SESSIONS.into_iter().chain([DEFAULT])
}

/// One reader per session, in `sessions()` order.
fn readers(proj: &Project) -> Vec<Reader> {
    sessions().map(|s| proj.reader(s)).collect()
}

fn received(readers: &[Reader]) -> Vec<(String, Vec<Receipt>)> {
    sessions()
        .zip(readers)
        .map(|(s, r)| (s.to_string(), r.received()))
        .collect()
}

/// Wait until everything the world expects has arrived and no prompt is
/// pending any more.
fn wait_caught_up(proj: &Project, world: &World, readers: &[Reader], timeout: Duration) {
    wait_until(
        "every ready step, done nudge and open task to be announced",
        timeout,
        || {
            let tally = Tally::of(world, &received(readers));
            tally.missing(world).is_empty().then_some(())
        },
    );
    wait_until("the outboxes to drain", timeout, || {
        proj.pending_counts()
            .values()
            .all(|&n| n == 0)
            .then_some(())
    });
}

/// Nothing was created outside the roots: the temp dir holds only the
/// project's own directories (`harness` holds the configuration, the logs
/// and the notify socket), and session directories only their FIFO.
pub fn assert_nothing_outside_roots(proj: &Project) {
    for f in proj.files() {
        let ok = ["pl", "state", "beads", "harness", "s"]
            .iter()
            .any(|top| f.starts_with(top))
            && match f.strip_prefix("s") {
                Ok(rest) => rest.components().count() <= 1 || rest.ends_with("fifo.in"),
                Err(_) => true,
            };
        assert!(ok, "unexpected file {}", f.display());
    }
    assert!(!proj.root.join("config").exists());
}

#[test]
fn kill_9_at_random_points_loses_nothing_and_repeats_at_most_one_prompt_per_kill() {
    let kills: u64 = std::env::var("REVEILLE_CRASH_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let started = Instant::now();
    let mut rng = Rng::from_env("crash campaign");
    let mut proj = project("crash");
    proj.configure(|c| {
        c.default_session(DEFAULT);
    });
    let readers = readers(&proj);
    let mut d = start(&proj);
    let mut world = World::new(&proj, &SESSIONS, DEFAULT);
    let mut ops = 0u64;
    let mut mid_startup = 0u64;
    for k in 1..=kills {
        for _ in 0..1 + rng.below(8) {
            world.act(&proj, &mut rng);
            ops += 1;
        }
        // A random kill point: right away, or some way into the work.
        std::thread::sleep(Duration::from_micros(rng.below(15_000)));
        d.kill9();
        for r in &readers {
            r.mark_epoch(k);
        }
        // Work happens while it is down too.
        for _ in 0..rng.below(3) {
            world.act(&proj, &mut rng);
            ops += 1;
        }
        d = Daemon::spawn(&proj);
        // Half the time the next kill may land during the start-up scan.
        if rng.chance(50) {
            d.wait_ready(READY);
        } else {
            mid_startup += 1;
        }
    }
    d.wait_ready(READY);
    wait_caught_up(&proj, &world, &readers, Duration::from_secs(60));
    d.stop();
    for r in &readers {
        r.mark_epoch(kills + 1);
    }

    let tally = Tally::of(&world, &received(&readers));
    assert!(tally.errors.is_empty(), "{:#?}", tally.errors);
    assert_eq!(tally.missing(&world), Vec::<Key>::new());
    // Each repeat must cross a crash: a copy read in epoch e was written by
    // the daemon that kill e+1 ended, so the repeat is that kill's.
    let mut per_kill: BTreeMap<u64, Vec<&Key>> = BTreeMap::new();
    for (key, copies) in tally.duplicates() {
        for pair in copies.windows(2) {
            assert!(
                pair[1].epoch > pair[0].epoch,
                "{key:?} repeated by one daemon (epoch {}), no crash in between",
                pair[0].epoch
            );
            per_kill.entry(pair[0].epoch + 1).or_default().push(key);
        }
    }
    let repeats: usize = per_kill.values().map(Vec::len).sum();
    let worst = per_kill.values().map(Vec::len).max().unwrap_or(0);
    let steps: usize = world.plans.iter().map(|p| p.steps.len()).sum();
    eprintln!(
        "crash campaign: {kills} kills ({mid_startup} during start-up), {ops} operations, \
         {} plans / {steps} steps, {} tasks, {} prompts, {} distinct, \
         {repeats} repeated (at most {worst} per kill), {:.1}s",
        world.plans.len(),
        world.tasks.len(),
        tally.total,
        tally.by_key.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        worst <= 1,
        "a kill repeated more than one prompt: {per_kill:?}"
    );
    let log = proj.logs();
    assert!(!log.contains("panicked"), "the daemon panicked");
    assert_nothing_outside_roots(&proj);
}

/// The state of a process from `/proc/<pid>/stat` (`T` = stopped).
fn proc_state(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(") ")
        .next()
        .and_then(|s| s.chars().next())
        .unwrap_or('?')
}

#[test]
fn a_long_sigstop_pause_catches_up_with_nothing_lost_or_repeated() {
    let mut rng = Rng::from_env("sigstop");
    let mut proj = project("pause");
    proj.configure(|c| {
        c.default_session(DEFAULT);
    });
    let readers = readers(&proj);
    let d = start(&proj);
    let mut world = World::new(&proj, &SESSIONS, DEFAULT);
    for _ in 0..4 {
        world.new_plan(&mut rng);
    }
    world.add_task(&proj);
    wait_caught_up(&proj, &world, &readers, Duration::from_secs(20));
    let before = Tally::of(&world, &received(&readers)).total;

    d.sigstop();
    wait_until("the daemon to be stopped", Duration::from_secs(5), || {
        (proc_state(d.pid()) == 'T').then_some(())
    });
    let paused = Instant::now();
    let mut ops = 0;
    while paused.elapsed() < Duration::from_secs(4) {
        world.act(&proj, &mut rng);
        ops += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    // Nothing can have moved while it was stopped.
    assert_eq!(Tally::of(&world, &received(&readers)).total, before);
    assert_eq!(proc_state(d.pid()), 'T');
    d.sigcont();
    let resumed = Instant::now();
    let pause = resumed - paused;
    wait_caught_up(&proj, &world, &readers, Duration::from_secs(30));
    let caught_up = resumed.elapsed();
    d.stop();
    for r in &readers {
        r.mark_epoch(1);
    }
    let tally = Tally::of(&world, &received(&readers));
    tally.assert_exact(&world);
    eprintln!(
        "sigstop: paused {:.1}s during {ops} operations; caught up {:.0} ms after SIGCONT; \
         {} prompts, none repeated",
        pause.as_secs_f64(),
        caught_up.as_secs_f64() * 1000.0,
        tally.total
    );
    assert_nothing_outside_roots(&proj);
}
