//! The wake benchmark's harness, shared by `benches/wake/main.rs` (the
//! command `doc/PERFORMANCE.md` quotes) and the smoke test
//! (`tests/bench_smoke.rs`, which runs it at a tiny size and judges nothing
//! but that it runs and produces figures).
//!
//! Everything runs the real daemon binary against temp directories and real
//! FIFOs; each figure is measured side by side with its baseline in the same
//! run.

#![allow(dead_code)] // the smoke test uses less of it than the benchmark

pub mod agents;
/// The test suite's config writer: the daemon's `reveille.toml` is written
/// here exactly as in the tests.
#[path = "../../../tests/util/config.rs"]
pub mod config;
pub mod doubles;
/// The test suite's FIFO reader (one epoll thread over every session's
/// FIFO, each prompt stamped when its read returned).
#[path = "../../../tests/util/fifo.rs"]
pub mod fifo;
pub mod latency;
/// The test suite's launcher: the daemon starts here exactly as in the tests.
#[path = "../../../tests/util/launch.rs"]
pub mod launch;
pub mod plans;
pub mod process;
pub mod real;
/// The test suite's harness of the real ollie-9p server (`real` runs it).
#[path = "../../../tests/util/realollie.rs"]
pub mod realollie;
pub mod report;
pub mod scale;
pub mod tracker;

pub use report::{machine, percentile, Report};
use report::{max, ms, ratio, us};

// What the shared test harness modules call as `super::…`.
pub use doubles::{try_wait_until, wait_until};

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How big a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// Seconds: only that every part runs (the smoke test).
    Smoke,
    /// About a minute: every figure, smaller scale and shorter idle window.
    Quick,
    /// The sizes the targets are stated for (a few minutes).
    Full,
}

impl Size {
    pub fn parse(s: &str) -> Option<Size> {
        match s {
            "smoke" => Some(Size::Smoke),
            "quick" => Some(Size::Quick),
            "full" => Some(Size::Full),
            _ => None,
        }
    }
}

/// The sizes behind a `Size`.
#[derive(Debug, Clone)]
pub struct Params {
    /// Latency: plans × steps, sequential.
    pub lat_plans: usize,
    pub lat_steps: usize,
    /// Scale: plan counts (sessions = min(plans, max_sessions)).
    pub scale: Vec<usize>,
    pub max_sessions: usize,
    pub scale_trials: usize,
    /// Idle window at the largest scale, and at the others.
    pub idle_largest: Duration,
    pub idle_other: Duration,
    /// Events log sizes.
    pub events: Vec<usize>,
    /// Agent wake-ups through the ollie-9p double; idle session counts
    /// and window.
    pub agent_wakes: usize,
    pub idle_sessions: Vec<usize>,
    pub idle_window: Duration,
    /// Wake-ups per flow through the real ollie-9p server.
    pub real_wakes: usize,
    /// issues.jsonl size and end-to-end trials.
    pub issues: usize,
    pub beads_trials: usize,
}

impl Params {
    pub fn of(size: Size) -> Params {
        match size {
            Size::Smoke => Params {
                lat_plans: 2,
                lat_steps: 4,
                scale: vec![1, 6],
                max_sessions: 3,
                scale_trials: 3,
                idle_largest: Duration::from_millis(500),
                idle_other: Duration::from_millis(200),
                events: vec![2_000],
                issues: 200,
                beads_trials: 2,
                agent_wakes: 3,
                real_wakes: 5,
                idle_sessions: vec![1, 5],
                idle_window: Duration::from_secs(1),
            },
            Size::Quick => Params {
                lat_plans: 5,
                lat_steps: 21,
                scale: vec![1, 100, 1_000],
                max_sessions: 1_000,
                scale_trials: 54,
                idle_largest: Duration::from_secs(10),
                idle_other: Duration::from_secs(3),
                events: vec![100_000],
                issues: 10_000,
                beads_trials: 5,
                agent_wakes: 20,
                real_wakes: 20,
                idle_sessions: vec![1, 20, 100],
                idle_window: Duration::from_secs(5),
            },
            Size::Full => Params {
                lat_plans: 25,
                lat_steps: 21,
                scale: vec![1, 100, 1_000, 10_000],
                max_sessions: 1_000,
                scale_trials: 54,
                idle_largest: Duration::from_secs(60),
                idle_other: Duration::from_secs(10),
                events: vec![100_000, 1_000_000],
                issues: 10_000,
                beads_trials: 10,
                agent_wakes: 100,
                real_wakes: 100,
                idle_sessions: vec![1, 20, 100],
                idle_window: Duration::from_secs(20),
            },
        }
    }
}

/// Where things are.
pub struct Env {
    /// The `reveille` binary.
    pub daemon: PathBuf,
    /// `benches/diy-waker.sh`.
    pub diy_script: PathBuf,
    /// `benches/python-waker.py`.
    pub python_script: PathBuf,
    /// Keep temp directories (REVEILLE_KEEP_TMP).
    pub keep: bool,
}

impl Env {
    pub fn tempdir(&self, tag: &str) -> tempfile::TempDir {
        let mut d = tempfile::Builder::new()
            .prefix(&format!("reveille-bench-{tag}-"))
            .tempdir()
            .unwrap();
        if self.keep {
            d.disable_cleanup(true);
            eprintln!("keeping {}", d.path().display());
        }
        d
    }
}

/// Which parts to run.
pub const PARTS: [&str; 6] = ["latency", "scale", "events", "beads", "agents", "real"];

/// Run the parts named in `only` (all when empty) at `size`.
pub fn run(env: &Env, size: Size, only: &[String]) -> Report {
    let started = Instant::now();
    let p = Params::of(size);
    let want = |part: &str| only.is_empty() || only.iter().any(|o| o == part);
    let full = size == Size::Full;
    let mut r = Report {
        machine: machine(),
        ..Report::default()
    };
    raise_fd_limit();

    if want("latency") {
        let lat_tmp = env.tempdir("rewrite");
        let cost = latency::rewrite_cost(lat_tmp.path());
        let mut diy = None;
        if has("inotifywait") {
            diy = Some(latency::measure(env, latency::Waker::Diy, p.lat_plans, p.lat_steps).wakes);
        } else {
            r.notes.push(
                "inotifywait not installed: no DIY baseline (apt-get install inotify-tools)".into(),
            );
        }
        let floor_run = latency::measure(env, latency::Waker::Floor, p.lat_plans, p.lat_steps);
        let durable = latency::measure(env, latency::Waker::FloorDurable, p.lat_plans, p.lat_steps);
        let floor = floor_run.wakes;
        let py = has("python3")
            .then(|| latency::measure(env, latency::Waker::Python, p.lat_plans, p.lat_steps));
        if py.is_none() {
            r.notes
                .push("python3 not installed: no plain-Python baseline for CPU per wake".into());
        }
        let rs = latency::measure(env, latency::Waker::Reveille, p.lat_plans, p.lat_steps);
        let rev = rs.wakes.clone();
        let n = rev.len();
        for (name, q) in [("p50", 50.0), ("p99", 99.0)] {
            let (a, f) = (percentile(&rev, q), percentile(&floor, q));
            if let Some(d) = &diy {
                let b = percentile(d, q);
                let (limit, t) = if q == 50.0 {
                    (10.0, "≤ 1/10 of DIY")
                } else {
                    (5.0, "≤ 1/5 of DIY")
                };
                let x = ratio(b, a);
                r.row(
                    &format!("wake latency {name} ({n} steps) vs DIY waker"),
                    us(a),
                    &us(b),
                    &format!("{x:.1}× faster"),
                    t,
                    Some(x >= limit),
                );
            }
            let x = ratio(a, f);
            let (limit, t) = if q == 50.0 {
                (3.0, "≤ 3× floor")
            } else {
                (5.0, "≤ 5× floor")
            };
            r.row(
                &format!("wake latency {name} vs inotify+write floor"),
                us(a),
                &us(f),
                &format!("{x:.2}× floor"),
                t,
                Some(x <= limit),
            );
        }
        let mut maxrow = us(max(&rev));
        if let Some(d) = &diy {
            maxrow = format!("{maxrow} (DIY {})", us(max(d)));
        }
        r.row("wake latency max", maxrow, &us(max(&floor)), "", "", None);
        if let (Some(cpu), Some(py)) = (rs.cpu_per_wake, py.as_ref()) {
            let base = py.cpu_per_wake.unwrap_or_default();
            let x = ratio(cpu, base);
            r.row(
                "CPU time per wake (all threads) vs plain-Python waker",
                us(cpu),
                &format!("Python {}", us(base)),
                &format!("{x:.2}× Python"),
                "≤ 1/2 of Python",
                Some(x <= 0.5),
            );
            if let Some(f) = floor_run.cpu_per_wake {
                r.row(
                    "CPU time per wake vs the floor's (diagnostic: the floor's system calls and wake-up alone)",
                    us(cpu),
                    &format!("floor {}, Python {:.2}× floor", us(f), ratio(base, f)),
                    &format!("{:.2}× floor", ratio(cpu, f)),
                    "",
                    None,
                );
            }
            if let Some(f) = durable.cpu_per_wake {
                r.row(
                    "CPU time per wake vs the durable floor's (diagnostic: the floor plus every system call reveille's promises make, no work between them)",
                    us(cpu),
                    &format!("durable floor {}, {:.2}× Python", us(f), ratio(f, base)),
                    &format!("{:.2}× durable floor", ratio(cpu, f)),
                    "",
                    None,
                );
            }
            r.row(
                "plain-Python waker latency p50 / p99 (diagnostic)",
                format!(
                    "{} / {}",
                    us(percentile(&rev, 50.0)),
                    us(percentile(&rev, 99.0))
                ),
                &format!(
                    "{} / {}",
                    us(percentile(&py.wakes, 50.0)),
                    us(percentile(&py.wakes, 99.0))
                ),
                &format!(
                    "{:.2}× Python",
                    ratio(percentile(&rev, 50.0), percentile(&py.wakes, 50.0))
                ),
                "",
                None,
            );
        }
        if let (Some(cpu), Some(n)) = (rs.cpu_per_wake, rs.notify_per_wake) {
            r.row(
                "reveille CPU time per wake (all threads) / sd_notify datagrams per wake",
                format!("{} / {n:.1}", us(cpu)),
                "",
                "",
                "",
                None,
            );
        }
        r.notes.push(format!(
            "wake latency runs from just before the rewrite's close(2) (where IN_CLOSE_WRITE is queued) to the reader's read(2) returning the whole prompt; so it includes close itself ({} median here; the whole open+truncate+write+close takes {})",
            us(cost.1),
            us(cost.0)
        ));
    }

    if want("scale") {
        let largest = *p.scale.iter().max().unwrap();
        for &plans in &p.scale {
            let sessions = plans.min(p.max_sessions);
            let idle = if plans == largest {
                p.idle_largest
            } else {
                p.idle_other
            };
            eprintln!("scale: {plans} plans, {sessions} sessions …");
            r.scale
                .push(scale::measure(env, plans, sessions, p.scale_trials, idle));
        }
        let one = r.scale.iter().find(|s| s.plans == 1).cloned();
        let big = r.scale.last().cloned().unwrap();
        let at = |n: usize| format!("{n} plans");
        let target_size = full && big.plans >= 10_000;
        if let Some(one) = &one {
            let x = ratio(big.p50(), one.p50());
            r.row(
                &format!("wake p50 with {} vs 1 plan", big.plans),
                us(big.p50()),
                &us(one.p50()),
                &format!("{x:.2}"),
                "≤ 1.5",
                Some(x <= 1.5),
            );
        }
        r.row(
            &format!("READY, first start, {}", at(big.plans)),
            ms(big.ready_first),
            "",
            "",
            "< 1 s",
            target_size.then_some(big.ready_first < Duration::from_secs(1)),
        );
        r.row(
            &format!("READY, second start (reconcile), {}", at(big.plans)),
            ms(big.ready_second),
            "",
            "",
            "< 1 s",
            target_size.then_some(big.ready_second < Duration::from_secs(1)),
        );
        r.row(
            &format!(
                "peak RSS (VmHWM), {} + {} sessions",
                at(big.plans),
                big.sessions
            ),
            format!("{:.1} MiB", big.rss_peak_kib as f64 / 1024.0),
            "",
            "",
            "< 64 MiB",
            target_size.then_some(big.rss_peak_kib < 64 * 1024),
        );
        r.row(
            &format!(
                "idle {:.0} s, {}: context switches",
                big.idle_secs,
                at(big.plans)
            ),
            format!("{} ({})", big.idle_switches, big.idle_threads.join(", ")),
            "",
            "",
            "0 periodic wake-ups",
            Some(big.idle_switches == 0),
        );
        r.row(
            &format!("idle {:.0} s, {}: CPU time", big.idle_secs, at(big.plans)),
            format!("{:.0} ms", big.idle_cpu_ms),
            "",
            "",
            "",
            None,
        );
        r.row(
            &format!(
                "burst: one step unblocked in each of {} sessions",
                big.sessions
            ),
            ms(big.burst_total),
            "",
            "",
            "",
            None,
        );
        r.notes.push(
            "polling trackers and orchestrators notice work every few seconds to minutes; beads' own `bd ready` was reported at 5 s for 132 issues".into(),
        );
    }

    if want("events") {
        for &n in &p.events {
            eprintln!("events: {n} …");
            let e = tracker::events(env, n);
            let rate = n as f64 / e.daemon.as_secs_f64();
            let (base, x) = match e.jq {
                Some(j) => (
                    format!("jq: {:.0}/s ({})", n as f64 / j.as_secs_f64(), ms(j)),
                    format!("{:.1}× jq", ratio(j, e.daemon)),
                ),
                None => ("jq not installed".into(), String::new()),
            };
            r.row(
                &format!("events log, {n} lines ({:.1} MB)", e.bytes as f64 / 1e6),
                format!(
                    "{rate:.0}/s ({}; CPU {}, {:.0}/CPU-s)",
                    ms(e.daemon),
                    ms(e.cpu),
                    n as f64 / e.cpu.as_secs_f64().max(1e-3)
                ),
                &base,
                &x,
                "≥ 1,000,000/s",
                (full && n >= 1_000_000
                    || n == *p.events.iter().max().unwrap() && size != Size::Smoke)
                    .then_some(rate >= 1e6),
            );
            r.notes.push(format!(
                "events {n}: the one write(2) appending the log took {}; the clock starts when it returns",
                ms(e.append)
            ));
        }
    }

    if want("beads") {
        eprintln!("beads: {} issues …", p.issues);
        let b = tracker::beads(env, p.issues, p.beads_trials);
        let total = b.parse + b.ready;
        r.row(
            &format!(
                "issues.jsonl {} issues ({:.1} MB): parse + ready after one closes",
                b.issues,
                b.bytes as f64 / 1e6
            ),
            format!(
                "{} ({} parse, {} ready)",
                ms(total),
                ms(b.parse),
                us(b.ready)
            ),
            "bd ready: 5 s for 132 issues (reported)",
            "",
            "< 20 ms",
            (size != Size::Smoke).then_some(total < Duration::from_millis(20)),
        );
        r.row(
            "issues.jsonl: close → prompt at the FIFO, through the daemon (p50 / max)",
            format!("{} / {}", ms(percentile(&b.e2e, 50.0)), ms(max(&b.e2e))),
            "",
            "",
            "",
            None,
        );
    }
    if want("agents") {
        agent_rows(env, &p, &mut r);
    }
    if want("real") {
        real_rows(env, &p, &mut r);
    }
    r.elapsed = started.elapsed();
    r
}

/// Through the ollie-9p double over FUSE: an idle agent's wake latency
/// beside a bare Submit, and the idle cost of a session tree by size.
fn agent_rows(env: &Env, p: &Params, r: &mut Report) {
    if let Some(why) = agents::unavailable() {
        r.notes.push(format!(
            "no ollie-9p double (needs FUSE: {why}): agent rows skipped"
        ));
        return;
    }
    eprintln!(
        "agents: {} wake-ups through the ollie-9p double …",
        p.agent_wakes
    );
    let bare = agents::bare_submit(p.agent_wakes);
    let rev = agents::reveille(env, p.agent_wakes);
    for (name, q) in [("p50", 50.0), ("p99", 99.0)] {
        let (a, b) = (percentile(&rev, q), percentile(&bare, q));
        let (target, pass) = if q == 50.0 {
            ("≤ 50 ms", Some(a <= Duration::from_millis(50)))
        } else {
            ("", None)
        };
        r.row(
            &format!("ollie agent: plan close → idle agent's turn starts, {name}"),
            us(a),
            &format!("{} (bare Submit)", us(b)),
            &format!("{:.1}×", ratio(a, b)),
            target,
            pass,
        );
    }
    let mut one = None;
    for &n in &p.idle_sessions {
        eprintln!("agents: {n} idle sessions for {:?} …", p.idle_window);
        let c = agents::idle(env, n, p.idle_window);
        let base = *one.get_or_insert(c.ops_per_s);
        let (target, pass) = if n >= 100 {
            ("≤ 10/s in total", Some(c.ops_per_s <= 10.0))
        } else {
            ("", None)
        };
        r.row(
            &format!("idle ollie session tree, {n} sessions: FUSE requests/s"),
            format!("{:.1}/s", c.ops_per_s),
            &format!("{base:.1}/s (1 session)"),
            &format!("{:.2}×", c.ops_per_s / base.max(1e-9)),
            target,
            pass,
        );
        r.row(
            &format!("idle ollie session tree, {n} sessions: daemon context switches/s"),
            format!("{:.1}/s", c.switches_per_s),
            "",
            "",
            "",
            None,
        );
    }
}

/// Through the real ollie-9p server: an idle agent's wake latency in each
/// flow beside a bare Submit in the same run.
fn real_rows(env: &Env, p: &Params, r: &mut Report) {
    if let Some(why) = real::unavailable() {
        r.notes.push(format!(
            "no real ollie-9p server ({why}): real-server rows skipped"
        ));
        return;
    }
    eprintln!(
        "real: {} wake-ups per flow through the real ollie-9p server …",
        p.real_wakes
    );
    let f = real::run(env, p.real_wakes);
    let secs = |v: &[f64]| -> Vec<Duration> {
        v.iter()
            .map(|s| Duration::from_secs_f64(s.max(0.0)))
            .collect()
    };
    let bare = secs(&f.bare);
    let flows = [
        ("new plan", secs(&f.new_plan)),
        (
            "a step ticked right after a chain of two turns",
            secs(&f.after_chain),
        ),
        ("a claim in the 9beads events log (polled)", secs(&f.claim)),
    ];
    for (flow, v) in flows {
        for (name, q) in [("p50", 50.0), ("p99", 99.0)] {
            let (a, b) = (percentile(&v, q), percentile(&bare, q));
            let (target, pass) = if q == 99.0 {
                ("< 250 ms", Some(a < Duration::from_millis(250)))
            } else {
                ("", None)
            };
            r.row(
                &format!("real ollie-9p: {flow} → idle agent's turn starts, {name}"),
                ms(a),
                &format!("{} (bare Submit)", ms(b)),
                &format!("{:.1}×", ratio(a, b)),
                target,
                pass,
            );
        }
    }
}

fn has(tool: &str) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool} >/dev/null"))
        .status()
        .is_ok_and(|s| s.success())
}

/// One FIFO per session is held open: lift the soft fd limit to the hard one.
fn raise_fd_limit() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain get/setrlimit on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}
