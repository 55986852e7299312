//! The wake benchmark (`benches/wake`) at a tiny size, so it keeps working:
//! every part runs against the real daemon and produces figures. Speed is
//! not judged here — benchmarks are not timed assertions.

// The harness brings its own copy of the ollie-9p double (the benchmark
// binary has no tests/doubles); in this crate that double is also doubles::ollie.
#[allow(clippy::duplicate_mod)]
#[path = "../benches/wake/harness/mod.rs"]
mod harness;

use std::path::PathBuf;

#[test]
fn the_wake_benchmark_runs_at_smoke_size_and_produces_every_figure() {
    let env = harness::Env {
        daemon: PathBuf::from(env!("CARGO_BIN_EXE_reveille")),
        diy_script: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/diy-waker.sh"),
        python_script: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/python-waker.py"),
        keep: std::env::var_os("REVEILLE_KEEP_TMP").is_some(),
    };
    let report = harness::run(&env, harness::Size::Smoke, &[]);
    let md = report.markdown();
    for figure in [
        "wake latency p50",
        "wake latency p99",
        "inotify+write floor",
        "wake p50 with 6 vs 1 plan",
        "READY, first start",
        "READY, second start",
        "peak RSS",
        "context switches",
        "burst",
        "events log, 2000 lines",
        "issues.jsonl 200 issues",
        "through the daemon",
    ] {
        assert!(
            report.rows.iter().any(|r| r.figure.contains(figure)),
            "no figure {figure:?} in\n{md}"
        );
    }
    // CPU per wake against Python and both floors, where Python runs.
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if python {
        for figure in [
            "CPU time per wake (all threads) vs plain-Python waker",
            "CPU time per wake vs the floor's",
            "CPU time per wake vs the durable floor's",
        ] {
            assert!(
                report.rows.iter().any(|r| r.figure.contains(figure)),
                "no figure {figure:?} in\n{md}"
            );
        }
    }
    // The agent rows need the ollie-9p double, which needs FUSE.
    if harness::agents::unavailable().is_none() {
        for figure in [
            "idle agent's turn starts, p50",
            "5 sessions: FUSE requests/s",
        ] {
            assert!(
                report.rows.iter().any(|r| r.figure.contains(figure)),
                "no figure {figure:?} in\n{md}"
            );
        }
    }
    assert_eq!(report.scale.len(), 2, "{md}");
    for s in &report.scale {
        assert!(
            !s.wakes.is_empty() && s.ready_second > std::time::Duration::ZERO,
            "{md}"
        );
        assert!(s.rss_peak_kib > 0, "{md}");
    }
}
