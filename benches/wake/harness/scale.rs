//! Scale: many plans routed round-robin to many sessions. Per size: time to
//! READY on the first start (the baseline is taken) and on the second (the
//! reconcile path every restart takes), peak RSS, idle cost, the wake
//! latency of one step, and one burst that unblocks a step in every session.

use std::time::{Duration, Instant};

use super::fifo::Reader;
use super::plans::Plans;
use super::process::{switches, Daemon, Setup};
use super::{percentile, Env};

/// What one size measured.
#[derive(Debug, Clone)]
pub struct ScaleRun {
    pub plans: usize,
    pub sessions: usize,
    pub ready_first: Duration,
    pub ready_second: Duration,
    /// VmHWM after the second start's READY, and at the end.
    pub rss_ready_kib: u64,
    pub rss_peak_kib: u64,
    pub idle_secs: f64,
    pub idle_cpu_ms: f64,
    pub idle_switches: u64,
    /// Per-thread switches during the idle window.
    pub idle_threads: Vec<String>,
    pub wakes: Vec<Duration>,
    /// From the first rewrite of the burst to the last prompt delivered.
    pub burst_total: Duration,
    /// How long the burst's rewrites themselves took.
    pub burst_writes: Duration,
}

impl ScaleRun {
    pub fn p50(&self) -> Duration {
        percentile(&self.wakes, 50.0)
    }
}

pub const STEPS: usize = 20;

pub fn measure(
    env: &Env,
    plans: usize,
    sessions: usize,
    trials: usize,
    idle: Duration,
) -> ScaleRun {
    let tmp = env.tempdir(&format!("scale-{plans}"));
    let setup = Setup::new(tmp.path());
    let ids: Vec<String> = (0..sessions).map(|s| format!("sess-{s:04}")).collect();
    let fifos: Vec<_> = ids.iter().map(|id| setup.add_session(id)).collect();
    let mut p = Plans {
        dir: setup.plan_dir.clone(),
        tag: "scale".into(),
        steps: STEPS,
        checked: vec![0; plans],
        sessions: (0..plans).map(|i| ids[i % sessions].clone()).collect(),
    };
    p.write_all();
    let readers = Reader::open_all(&fifos);

    // First start: what is ready now is the baseline, announced to no one.
    let mut d = Daemon::start(&env.daemon, &setup);
    let ready_first = d.wait_ready(Duration::from_secs(120));
    d.stop();
    // Second start: every plan read again and diffed against the state.
    let mut d = Daemon::start(&env.daemon, &setup);
    let ready_second = d.wait_ready(Duration::from_secs(120));
    let rss_ready_kib = d.vm_hwm_kib();
    assert!(
        readers.drain().is_empty(),
        "a restart with nothing new announced something"
    );

    // Idle: let start-up work (group commit, thread-pool keep-alive) pass.
    std::thread::sleep(Duration::from_secs(2).min(idle));
    let a = d.usage();
    let t = Instant::now();
    std::thread::sleep(idle);
    let b = d.usage();
    let idle_secs = t.elapsed().as_secs_f64();
    let (vol, nonvol, idle_threads) = switches(&a, &b);

    // Wake latency of one step at a time, on up to 3 plans.
    let used = plans.min(3);
    let trials = trials.min(used * (STEPS - 2));
    let mut wakes = Vec::with_capacity(trials);
    for t in 0..trials {
        let i = t % used;
        std::thread::sleep(Duration::from_millis(3));
        let t0 = p.complete_next(i);
        let prompt = loop {
            let Some(prompt) = readers.try_next_receipt(Duration::from_secs(10)) else {
                panic!(
                    "no prompt after ticking plan {i} with {plans} plans; stderr:\n{}",
                    d.log_tail()
                );
            };
            if prompt.fifo == i % sessions {
                break prompt;
            }
        };
        let next = p.checked[i] + 1;
        assert!(
            prompt.text.contains(&format!("Step s{next} ")),
            "expected step {next} of plan {i}, got {:?}",
            prompt.text
        );
        wakes.push(prompt.at.saturating_duration_since(t0));
    }

    // Burst: one script ticks one plan in each session.
    std::thread::sleep(Duration::from_millis(50));
    readers.drain();
    let t0 = Instant::now();
    for i in 0..sessions {
        p.complete_next(i);
    }
    let burst_writes = t0.elapsed();
    let mut seen = vec![false; sessions];
    let mut left = sessions;
    let mut last = t0;
    while left > 0 {
        let Some(prompt) = readers.try_next_receipt(Duration::from_secs(60)) else {
            panic!(
                "burst: {left} of {sessions} sessions got no prompt; stderr:\n{}",
                d.log_tail()
            );
        };
        if !seen[prompt.fifo] {
            seen[prompt.fifo] = true;
            left -= 1;
            last = last.max(prompt.at);
        }
    }
    let burst_total = last - t0;
    let rss_peak_kib = d.vm_hwm_kib();
    d.stop();
    ScaleRun {
        plans,
        sessions,
        ready_first,
        ready_second,
        rss_ready_kib,
        rss_peak_kib,
        idle_secs,
        idle_cpu_ms: b.cpu_ms - a.cpu_ms,
        idle_switches: vol + nonvol,
        idle_threads,
        wakes,
        burst_total,
        burst_writes,
    }
}
