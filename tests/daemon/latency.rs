//! Wake latency, measured not asserted (`#[ignore]`): from the return of a
//! `task_complete` write to the prompt being readable at the FIFO. Run with
//! `cargo test --release -- --ignored latency --nocapture`.

use std::fs::OpenOptions;
use std::io::Read;
use std::time::{Duration, Instant};

use crate::util::daemon::Daemon;
use crate::util::plans::{task_complete_timed, task_plan, Step};
use crate::util::project::Project;

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

    // From just before the writer's close(2) (what the daemon reacts to)
    // and from the return of task_complete. On a machine with few CPUs the
    // daemon often runs its whole wake path while the writer is still in
    // close(2), so the second is mostly ~0: the first is the honest figure.
    let mut from_close = Vec::with_capacity(STEPS - 1);
    let mut from_return = Vec::with_capacity(STEPS - 1);
    for n in 1..STEPS {
        // Steps are checked in order, so the first unchecked step containing
        // the substring is step n itself.
        let closing = task_complete_timed(&plan, &format!("Step number {n}"));
        let returned = Instant::now();
        let prompt = read_prompt();
        let readable = Instant::now();
        from_close.push(readable - closing);
        from_return.push(readable - returned);
        let want = format!("Step number {}", n + 1);
        assert!(prompt.contains(&format!("ready: {want}\n")), "{prompt}");
    }
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    for (what, mut samples) in [
        ("close(2) of the write", from_close),
        ("return of task_complete", from_return),
    ] {
        samples.sort();
        let pct = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "wake latency from the {what} to the prompt read, {} steps ({build} build): p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
            samples.len(),
            us(pct(0.50)),
            us(pct(0.99)),
            us(*samples.last().unwrap())
        );
    }
}
