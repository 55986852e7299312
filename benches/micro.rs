//! Micro-benchmarks of the pure core: the plan parser, the ready set, the
//! events-log line parser and the beads ready rule. `cargo bench --bench
//! micro`; the wake benchmark (`benches/wake`) measures the daemon itself.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use reveille::core::beads::{parse_issues, ready};
use reveille::core::engine::{Engine, EngineConfig};
use reveille::core::input::{FileRead, Input, Reached};
use reveille::core::plan::{parse_plan, PlanFormat};
use reveille::core::record::Cursor;
use reveille::core::tracker::parse_event;

/// A sequential checklist as the planning tool writes it, half checked.
fn plan_text(steps: usize) -> String {
    let mut t = String::from("# Ship the thing\n\n<!-- session: s1 -->\n\n");
    for s in 1..=steps {
        let mark = if s <= steps / 2 { 'x' } else { ' ' };
        t.push_str(&format!(
            "- [{mark}] Step {s}: implement part {s}\n  Touch the code for part {s}, then run the tests.\n"
        ));
    }
    t
}

/// Chains of 10 issues, each blocked by the one before; part closed.
fn issues_text(n: usize) -> String {
    let mut t = String::new();
    for i in 0..n {
        let (chain, pos) = (i / 10, i % 10);
        let status = if pos < chain % 10 { "closed" } else { "open" };
        let deps = if pos == 0 {
            String::new()
        } else {
            format!(
                ",\"dependencies\":[{{\"issue_id\":\"bench-{i:05}\",\"depends_on_id\":\"bench-{:05}\",\"type\":\"blocks\"}}]",
                i - 1
            )
        };
        t.push_str(&format!(
            "{{\"id\":\"bench-{i:05}\",\"title\":\"Issue {i}\",\"status\":\"{status}\",\"priority\":2,\"issue_type\":\"task\",\"assignee\":\"agent-{}\"{deps}}}\n",
            chain % 50
        ));
    }
    t
}

fn plans(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan");
    for steps in [20, 200, 2000] {
        let text = plan_text(steps);
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_with_input(BenchmarkId::new("parse_plan", steps), &text, |b, t| {
            b.iter(|| parse_plan(PlanFormat::Markdown, black_box(t.as_bytes()), 64 << 20).unwrap())
        });
        let plan = parse_plan(PlanFormat::Markdown, text.as_bytes(), 64 << 20).unwrap();
        g.throughput(Throughput::Elements(steps as u64));
        g.bench_with_input(BenchmarkId::new("ready", steps), &plan, |b, p| {
            b.iter(|| black_box(p).ready())
        });
    }
    g.finish();
}

fn events(c: &mut Criterion) {
    let mut g = c.benchmark_group("event");
    g.throughput(Throughput::Elements(1));
    let lines: [(&str, &[u8]); 3] = [
        ("completed", br#"{"type":"completed","id":"bd-a1b2","mount":"myproj"}"#),
        ("claimed", br#"{"type":"claimed","id":"bd-a1b2","mount":"myproj","assignee":"agent-1"}"#),
        (
            "BeadClaimed",
            br#"{"id":"9f0c7f6e-1d0e-4b8e-9a51-0c1f1d2e3f40","ts":1708598530,"source":"beads/myproj","type":"BeadClaimed","data":{"bead_id":"bd-a1b2","assignee":"agent-1","mount":"myproj"}}"#,
        ),
    ];
    for (name, line) in lines {
        g.bench_function(BenchmarkId::new("parse_event", name), |b| {
            b.iter(|| parse_event(black_box(line)).unwrap())
        });
    }
    g.finish();
}

/// A mix of the current event shapes, as the wake benchmark appends them.
fn event_lines(n: usize) -> Vec<(u64, Vec<u8>)> {
    (0..n)
        .map(|k| {
            let id = k / 4;
            let line = match k % 4 {
                0 => format!(r#"{{"type":"created","id":"bd-{id:06x}","mount":"bench"}}"#),
                1 => format!(
                    r#"{{"type":"claimed","id":"bd-{id:06x}","mount":"bench","assignee":"agent-{}"}}"#,
                    id % 8
                ),
                2 => format!(r#"{{"type":"updated","id":"bd-{id:06x}","mount":"bench"}}"#),
                _ => format!(r#"{{"type":"completed","id":"bd-{id:06x}","mount":"bench"}}"#),
            };
            (k as u64 * 64, line.into_bytes())
        })
        .collect()
}

/// The engine consuming a chunk of the events log (no I/O: the effects
/// are only returned).
fn engine_events(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine");
    let n = 10_000;
    g.throughput(Throughput::Elements(n as u64));
    let lines = event_lines(n);
    let mut config = EngineConfig::new("/nonexistent/pl", "/nonexistent/s");
    config.mounts = vec!["bench".into()];
    let mut engine = Engine::new(config, None);
    engine.handle(Duration::ZERO, Input::StartupDone);
    g.bench_function(BenchmarkId::new("tracker_lines", n), |b| {
        b.iter_batched(
            || lines.clone(),
            |lines| {
                engine.handle(
                    Duration::ZERO,
                    Input::TrackerLines {
                        lines,
                        cursor: Cursor::default(),
                    },
                )
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// The engine's share of one wake, for a plan of 20 and of 200 steps: a
/// plan file read after a step was ticked in place — parse, diff against
/// the announced set, render the prompt, emit records, and the delivery
/// bookkeeping the shell does after writing it. Driven through the public
/// API (`Engine::handle` with a `PlanRead`), as the daemon drives it.
/// The reads tick the steps one by one, as `task_complete` does, and start
/// over when all are checked, so every read is one wake-up (the next step,
/// or the all-done prompt).
fn engine_wake(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine_wake");
    for steps in [20, 200] {
        let path = std::path::PathBuf::from("/pl/20260101T000000_00000001--x__wip.md");
        let text = |k: usize| {
            let mut t = String::from("# G\n\n<!-- session: s1 -->\n\n");
            for s in 1..=steps {
                let mark = if s <= k { 'x' } else { ' ' };
                t.push_str(&format!(
                    "- [{mark}] Step {s}: implement part {s}\n  Touch the code for part {s}, then run the tests.\n"
                ));
            }
            t.into_bytes()
        };
        let versions: Vec<Vec<u8>> = (0..=steps).map(text).collect();
        let mut engine = Engine::new(EngineConfig::new("/pl", "/s"), None);
        engine.handle(Duration::ZERO, Input::StartupDone);
        let mut n = 0usize;
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::new("parse_and_reconcile", steps), |b| {
            b.iter_batched(
                || {
                    n += 1;
                    versions[n % versions.len()].clone()
                },
                |bytes| {
                    let fx = engine.handle(
                        Duration::ZERO,
                        Input::PlanRead {
                            path: path.clone(),
                            read: FileRead::Bytes(bytes),
                            complete: true,
                            fresh: false,
                        },
                    );
                    // Deliver what was announced, as the shell would.
                    let mut announced = 0;
                    while let Some(d) = engine.poll_delivery(Duration::ZERO) {
                        announced += 1;
                        engine.handle(
                            Duration::ZERO,
                            Input::Delivered {
                                session: d.session,
                                seq: d.seq,
                                reached: Reached::Written,
                            },
                        );
                    }
                    assert_eq!(announced, 1, "each read is one wake-up");
                    fx
                },
                criterion::BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

/// One wake as the daemon feeds it, among 60 known plans (the wake
/// benchmark's three rounds of 20): the close (`Changed`), the read it
/// asks for (`PlanRead`, 21 sequential steps ticked in place), then the
/// delivery and its outcome — every input through `Engine::handle`.
fn engine_wake_among(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine_wake");
    let steps = 21;
    let text = |plan: usize, k: usize| {
        let mut t = format!(
            "# Bench goal {plan}

<!-- session: bench -->

"
        );
        for s in 1..=steps {
            let mark = if s <= k { 'x' } else { ' ' };
            t.push_str(&format!(
                "- [{mark}] Step {s}: implement part {s} of goal {plan}\n  Touch the code for part {s}, then run the tests.\n"
            ));
        }
        t.into_bytes()
    };
    let path = |plan: usize| {
        std::path::PathBuf::from(format!("/pl/20260101T000000_{plan:08x}--p__wip.md"))
    };
    let mut engine = Engine::new(EngineConfig::new("/pl", "/s"), None);
    engine.handle(Duration::ZERO, Input::StartupDone);
    let wake = |engine: &mut Engine, path: &std::path::Path, bytes: Vec<u8>| {
        let changed = Input::Changed {
            path: path.to_path_buf(),
            change: reveille::core::input::Change::Closed,
        };
        let mut n = engine.handle(Duration::ZERO, changed).len();
        let read = Input::PlanRead {
            path: path.to_path_buf(),
            read: FileRead::Bytes(bytes),
            complete: true,
            fresh: false,
        };
        n += engine.handle(Duration::ZERO, read).len();
        let mut announced = 0;
        while let Some(d) = engine.poll_delivery(Duration::ZERO) {
            announced += 1;
            let done = Input::Delivered {
                session: d.session,
                seq: d.seq,
                reached: Reached::Written,
            };
            n += engine.handle(Duration::ZERO, done).len();
        }
        assert_eq!(announced, 1, "each read is one wake-up");
        n
    };
    // 59 plans all done (their all-done nudge announced), as the wake
    // benchmark leaves them, and the one ticked in the loop.
    for plan in 1..60 {
        for k in 0..=steps {
            wake(&mut engine, &path(plan), text(plan, k));
        }
    }
    let versions: Vec<Vec<u8>> = (0..=steps).map(|k| text(0, k)).collect();
    let here = path(0);
    let mut n = 0usize;
    g.throughput(Throughput::Elements(1));
    g.bench_function(BenchmarkId::new("among_60_plans", steps), |b| {
        b.iter_batched(
            || {
                n += 1;
                versions[n % versions.len()].clone()
            },
            |bytes| wake(&mut engine, &here, bytes),
            criterion::BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn beads(c: &mut Criterion) {
    let mut g = c.benchmark_group("beads");
    g.sample_size(20);
    for n in [1_000, 10_000] {
        let text = issues_text(n);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("parse_issues", n), &text, |b, t| {
            b.iter(|| parse_issues(black_box(t)))
        });
        let (issues, _) = parse_issues(&text);
        g.bench_with_input(BenchmarkId::new("ready", n), &issues, |b, i| {
            b.iter(|| ready(black_box(i), 1_900_000_000))
        });
    }
    g.finish();
}

fn config() -> Criterion {
    // Short runs: the machine is shared; the figures are for regressions.
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = micro;
    config = config();
    targets = plans, events, engine_events, engine_wake, engine_wake_among, beads
}
criterion_main!(micro);
