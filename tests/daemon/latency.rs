//! Wake latency, measured not asserted (`#[ignore]`): from the return of a
//! `task_complete` write to the prompt being readable at the FIFO. Run with
//! `cargo test --release -- --ignored latency --nocapture`.

use std::fs::OpenOptions;
use std::io::Read;
use std::time::{Duration, Instant};

use crate::util::daemon::{task_complete, task_plan, Daemon, Project, Step};

const STEPS: usize = 201;

#[test]
#[ignore = "a measurement for doc/PERFORMANCE.md, not a check"]
fn latency_from_task_complete_to_prompt() {
    let mut p = Project::with_default_session("agent");
    p.set("log", "level", "\"info\"");
    let fifo = p.session("agent");
    // Read on this thread, blocking, so the measurement has no hand-off.
    let mut pipe = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let mut read_prompt = move || -> String {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            let n = pipe.read(&mut chunk).unwrap();
            buf.extend_from_slice(&chunk[..n]);
            if buf.last() == Some(&0) {
                buf.pop();
                return String::from_utf8(buf).unwrap();
            }
        }
    };
    let _d = Daemon::start(&p);
    let titles: Vec<String> = (1..=STEPS).map(|n| format!("Step number {n}")).collect();
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let plan = task_plan(&p.plan_dir, "Latency", &steps);
    assert!(read_prompt().contains("ready: Step number 1\n"));

    let mut samples = Vec::with_capacity(STEPS - 1);
    for n in 1..STEPS {
        // Steps are checked in order, so the first unchecked step containing
        // the substring is step n itself.
        task_complete(&plan, &format!("Step number {n}"));
        let t = Instant::now();
        let prompt = read_prompt();
        samples.push(t.elapsed());
        let want = format!("Step number {}", n + 1);
        assert!(prompt.contains(&format!("ready: {want}\n")), "{prompt}");
    }
    samples.sort();
    let pct = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let max = *samples.last().unwrap();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "wake latency over {} steps ({} build): p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        samples.len(),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        us(pct(0.50)),
        us(pct(0.99)),
        us(max)
    );
}
