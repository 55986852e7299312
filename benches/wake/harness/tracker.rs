//! The tracker side: how fast the daemon consumes a tracker events log
//! (against `jq` reading the same file), and how long a 10,000-issue beads
//! `issues.jsonl` takes to judge again after one issue closes — in process
//! through the library, and end to end through the daemon.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reveille::core::beads::{parse_issues, ready};
use reveille::shell::store::read_memory;

use super::fifo::Reader;
use super::process::{Daemon, Setup};
use super::{percentile, Env};

/// One line of a 9beads events log; a realistic mix of the current shape.
fn event_line(n: usize, out: &mut Vec<u8>) {
    let id = n / 4;
    let line = match n % 4 {
        0 => format!("{{\"type\":\"created\",\"id\":\"bd-{id:06x}\",\"mount\":\"bench\"}}\n"),
        1 => format!(
            "{{\"type\":\"claimed\",\"id\":\"bd-{id:06x}\",\"mount\":\"bench\",\"assignee\":\"agent-{}\"}}\n",
            id % 8
        ),
        2 => format!("{{\"type\":\"updated\",\"id\":\"bd-{id:06x}\",\"mount\":\"bench\"}}\n"),
        _ => format!("{{\"type\":\"completed\",\"id\":\"bd-{id:06x}\",\"mount\":\"bench\"}}\n"),
    };
    out.extend_from_slice(line.as_bytes());
}

pub struct EventsRun {
    pub events: usize,
    pub bytes: usize,
    /// From the return of the one `write` that appended the whole log to
    /// the daemon's cursor reaching its end.
    pub daemon: Duration,
    /// The append itself.
    pub append: Duration,
    /// The daemon's CPU time (user + system) meanwhile: on a shared
    /// machine, events per CPU-second says more than per wall-second.
    pub cpu: Duration,
    /// `jq -c 'select(.type=="completed")'` over the same file; `None` when
    /// jq is not installed.
    pub jq: Option<Duration>,
}

pub fn events(env: &Env, n: usize) -> EventsRun {
    let tmp = env.tempdir(&format!("events-{n}"));
    let mut setup = Setup::new(tmp.path());
    let log = setup.beads_root.join("events");
    std::fs::write(&log, "").unwrap();
    setup.events = Some(log.clone());
    let mut bytes = Vec::with_capacity(n * 64);
    for i in 0..n {
        event_line(i, &mut bytes);
    }
    let mut d = Daemon::start(&env.daemon, &setup);
    d.wait_ready(Duration::from_secs(30));
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let before = d.usage();
    let t = Instant::now();
    // One write(2): the daemon hears one modification, once it is all there.
    f.write_all(&bytes).unwrap();
    let t0 = Instant::now();
    drop(f);
    let end = bytes.len() as u64;
    let deadline = t0 + Duration::from_secs(300);
    let done = loop {
        let offset = read_memory(&setup.state_dir)
            .ok()
            .and_then(|(m, _)| m?.cursor())
            .map_or(0, |c| c.offset);
        if offset == end {
            break Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "the daemon consumed {offset} of {end} bytes; stderr:\n{}",
            d.log_tail()
        );
        std::thread::sleep(Duration::from_micros(500));
    };
    let cpu = Duration::from_secs_f64((d.usage().cpu_ms - before.cpu_ms).max(0.0) / 1e3);
    d.stop();
    let jq = jq_time(&log);
    EventsRun {
        events: n,
        bytes: bytes.len(),
        daemon: done - t0,
        append: t0 - t,
        cpu,
        jq,
    }
}

fn jq_time(log: &Path) -> Option<Duration> {
    let t = Instant::now();
    let status = Command::new("jq")
        .arg("-c")
        .arg("select(.type==\"completed\")")
        .arg(log)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    status.success().then(|| t.elapsed())
}

/// A beads graph: chains of 10 issues, each blocked by the one before it;
/// in chain `c` the first `c % 10` are closed, so the next one is ready.
/// Chain `c` is assigned to `agent-{c % 50}`.
fn issues_text(n: usize, closed_extra: &[usize]) -> String {
    let mut t = String::with_capacity(n * 400);
    for i in 0..n {
        let (chain, pos) = (i / 10, i % 10);
        let closed = pos < chain % 10 || closed_extra.contains(&i);
        let status = if closed { "closed" } else { "open" };
        let deps = if pos == 0 {
            String::new()
        } else {
            format!(
                ",\"dependencies\":[{{\"issue_id\":\"bench-{i:05}\",\"depends_on_id\":\"bench-{:05}\",\"type\":\"blocks\",\"created_at\":\"2026-01-01T00:00:00Z\"}}]",
                i - 1
            )
        };
        t.push_str(&format!(
            "{{\"id\":\"bench-{i:05}\",\"title\":\"Issue {i} of chain {chain}\",\"description\":\"Part {pos} of chain {chain}: change the code and run the tests.\",\"status\":\"{status}\",\"priority\":2,\"issue_type\":\"task\",\"assignee\":\"agent-{}\",\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"2026-01-01T00:00:00Z\"{deps}}}\n",
            chain % 50
        ));
    }
    t
}

/// The first open issue of chain `c`.
fn head_of(chain: usize, closed_extra: &[usize]) -> usize {
    let mut i = chain * 10 + chain % 10;
    while closed_extra.contains(&i) {
        i += 1;
    }
    i
}

pub struct BeadsRun {
    pub issues: usize,
    pub bytes: usize,
    /// In process: parse + ready of the file after one issue closed, median.
    pub parse: Duration,
    pub ready: Duration,
    /// Through the daemon: from the rewrite (temp file + rename, as an
    /// export does) to the newly ready issue's prompt (clock read before the rename) at the FIFO.
    pub e2e: Vec<Duration>,
}

pub fn beads(env: &Env, n: usize, trials: usize) -> BeadsRun {
    let now = 1_900_000_000;
    // In process.
    let after = issues_text(n, &[head_of(0, &[])]);
    let mut parse = Vec::new();
    let mut ready_t = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        let (issues, errors) = parse_issues(&after);
        let t1 = Instant::now();
        let r = ready(&issues, now);
        let t2 = Instant::now();
        assert!(errors.is_empty() && !r.is_empty());
        parse.push(t1 - t);
        ready_t.push(t2 - t1);
    }

    // Through the daemon: agent-0's chains (0, 50, 100, …) go to one session.
    let tmp = env.tempdir(&format!("beads-{n}"));
    let mut setup = Setup::new(tmp.path());
    let file = setup.root.join("issues.jsonl");
    setup.issues = Some(file.clone());
    setup.assignees = vec![("agent-0".into(), "sess-0".into())];
    let fifo = setup.add_session("sess-0");
    let readers = Reader::open_all(&[&fifo]);
    let mut closed: Vec<usize> = Vec::new();
    std::fs::write(&file, issues_text(n, &closed)).unwrap();
    let mut d = Daemon::start(&env.daemon, &setup);
    d.wait_ready(Duration::from_secs(60));
    let chains = (n / 10).div_ceil(50);
    let mut e2e = Vec::new();
    for t in 0..trials.min(chains) {
        let chain = t * 50;
        let head = head_of(chain, &closed);
        if head % 10 == 9 {
            continue; // nothing behind it
        }
        closed.push(head);
        let text = issues_text(n, &closed);
        let tmpfile = setup.root.join("issues.jsonl.tmp");
        std::fs::write(&tmpfile, &text).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let t0 = Instant::now();
        std::fs::rename(&tmpfile, &file).unwrap();
        let want = format!("bench-{:05}", head + 1);
        let prompt = loop {
            let Some(p) = readers.try_next_receipt(Duration::from_secs(20)) else {
                panic!("no prompt for {want}; stderr:\n{}", d.log_tail());
            };
            if p.text.contains(&want) {
                break p;
            }
        };
        e2e.push(prompt.at.saturating_duration_since(t0));
    }
    d.stop();
    BeadsRun {
        issues: n,
        bytes: after.len(),
        parse: percentile(&parse, 50.0),
        ready: percentile(&ready_t, 50.0),
        e2e,
    }
}
