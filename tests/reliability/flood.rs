//! Floods: the inotify event queue overflowing for real, the inotify watch
//! limit reached (at start-up and when a session directory appears), and
//! ten thousand prompts for a session nobody reads.
//!
//! The inotify limits are machine-global sysctls: `Sysctl` lowers one under
//! a file lock and restores it on drop (even on panic), and each test keeps
//! the window as short as it can — `max_queued_events` is read when the
//! daemon's inotify instance is created, so it is restored as soon as the
//! daemon is up.

use std::time::{Duration, Instant};

use super::crash::assert_nothing_outside_roots;
use super::setup::{project, start, Rng, Sysctl};
use super::workload::{Tally, World};
use crate::util::plans::write_in_place;
use crate::util::wait_until;

const DEFAULT: &str = "s-t";

#[test]
fn inotify_queue_overflow_is_logged_and_rescanned_and_loses_nothing() {
    let mut rng = Rng::from_env("overflow");
    let mut proj = project("qflood");
    proj.configure(|c| {
        c.default_session(DEFAULT);
    });
    let reader = proj.reader(DEFAULT);
    let d = {
        let Some(_queue) = Sysctl::lower("max_queued_events", 32) else {
            return;
        };
        start(&proj)
    };
    let mut world = World::new(&proj, &[], DEFAULT);
    world.new_plan(&mut rng);
    world.add_task(&proj);
    let seen = |world: &World| Tally::of(world, &[(DEFAULT.to_string(), reader.received())]);
    wait_until("the first plan's prompts", Duration::from_secs(20), || {
        seen(&world).missing(&world).is_empty().then_some(())
    });

    // Stopped, it reads nothing: the kernel queue (32 events) overflows.
    d.sigstop();
    for _ in 0..120 {
        world.new_plan(&mut rng);
    }
    for _ in 0..80 {
        world.check_step(&mut rng);
    }
    for _ in 0..10 {
        world.add_task(&proj);
    }
    d.sigcont();
    wait_until("the overflow to be logged", Duration::from_secs(20), || {
        d.log().contains("inotify lost events").then_some(())
    });
    wait_until(
        "everything to be announced",
        Duration::from_secs(30),
        || seen(&world).missing(&world).is_empty().then_some(()),
    );
    wait_until("the outbox to drain", Duration::from_secs(20), || {
        proj.pending_counts().is_empty().then_some(())
    });
    d.stop();
    reader.mark_epoch(1);
    let tally = seen(&world);
    tally.assert_exact(&world);
    let log = proj.logs();
    let overflows = log
        .lines()
        .filter(|l| l.contains("inotify lost events"))
        .count();
    eprintln!(
        "overflow: queue of 32 events, 120 plans + 80 checks + 10 tasks while stopped; \
         {overflows} overflow(s) logged; {} prompts, {} expected, none missing or repeated",
        tally.total,
        world.expected().len()
    );
    assert_nothing_outside_roots(&proj);
}

/// The plan directory and every other root hit the watch limit at start-up:
/// polled instead, said in the log and in STATUS=, and a plan change is
/// still delivered (there is no inotify watch at all, so only polling can
/// have seen it).
#[test]
fn watch_limit_at_start_up_falls_back_to_polling_and_still_delivers() {
    let mut rng = Rng::from_env("watch limit at start-up");
    let mut proj = project("limit");
    proj.configure(|c| {
        c.default_session(DEFAULT);
    });
    proj.set("events", "poll_interval_ms", "100");
    proj.notify_socket();
    let reader = proj.reader(DEFAULT);
    let d = {
        let Some(_watches) = Sysctl::lower("max_user_watches", 1) else {
            return;
        };
        start(&proj)
    };
    let log = d.log();
    let plans = proj.plan_dir.display().to_string();
    assert!(
        log.lines()
            .any(|l| l.contains(&format!("polling {plans} ")) && l.contains("watch limit")),
        "no log line says the plan directory is polled:\n{log}"
    );
    let status = wait_until(
        "a STATUS= naming the polled root",
        Duration::from_secs(10),
        || {
            proj.notified().iter().rev().find_map(|m| {
                m.lines()
                    .find(|l| l.starts_with("STATUS="))
                    .map(str::to_string)
            })
        },
    );
    assert!(
        status.contains(&format!("polling {plans} ")) && status.contains("watch limit"),
        "{status}"
    );

    let mut world = World::new(&proj, &[], DEFAULT);
    world.new_plan(&mut rng);
    world.check_step(&mut rng);
    let seen = |world: &World| Tally::of(world, &[(DEFAULT.to_string(), reader.received())]);
    let t = Instant::now();
    wait_until(
        "the plan to be seen by polling",
        Duration::from_secs(10),
        || seen(&world).missing(&world).is_empty().then_some(()),
    );
    eprintln!(
        "watch limit at start-up: every root polled; plan delivered {} ms after it was written",
        t.elapsed().as_millis()
    );
    d.stop();
    reader.mark_epoch(1);
    let tally = seen(&world);
    assert!(tally.errors.is_empty(), "{:#?}", tally.errors);
    assert!(tally.duplicates().is_empty());
}

/// A session directory that appears while the watch limit is reached: the
/// sessions root falls back to polling, the log and STATUS= say so, and the
/// new session's own plan is still delivered.
#[test]
fn watch_limit_on_a_new_session_directory_falls_back_to_polling() {
    let mut proj = project("limit-new");
    proj.set("events", "poll_interval_ms", "100");
    proj.notify_socket();
    let d = start(&proj);
    let sessions = proj.sessions_dir.display().to_string();
    let reader;
    {
        let Some(_watches) = Sysctl::lower("max_user_watches", 1) else {
            return;
        };
        reader = proj.reader("s-new");
        wait_until(
            "a STATUS= saying the sessions root is polled",
            Duration::from_secs(10),
            || {
                proj.notified()
                    .iter()
                    .any(|m| m.contains(&format!("polling {sessions} ")))
                    .then_some(())
            },
        );
    }
    let log = d.log();
    assert!(
        log.lines()
            .any(|l| l.contains(&format!("polling {sessions}")) && l.contains("watch limit")),
        "no log line says the sessions root is polled:\n{log}"
    );
    // The new directory has no inotify watch: only polling sees its plan.
    write_in_place(
        &proj.sessions_dir.join("s-new").join("plan"),
        b"# session goal\n\n- [x] first\n- [ ] second\n",
    );
    let got = wait_until(
        "the session plan's ready step",
        Duration::from_secs(10),
        || reader.texts().into_iter().find(|t| t.contains("second")),
    );
    assert!(
        got.starts_with("STEP s-new session:s-new s2 second"),
        "{got}"
    );
    d.stop();
    reader.mark_epoch(1);
    assert_eq!(reader.count(), 1, "{:?}", reader.texts());
}

/// Ten thousand ready steps for a session with no reader, `outbox_cap` =
/// 1000: the outbox holds exactly the cap (status says so), the refusal is
/// logged, memory does not grow with the refused prompts, and once a reader
/// appears all ten thousand arrive, in order, once each.
#[test]
fn ten_thousand_prompts_without_a_reader_stay_within_the_outbox_cap() {
    const PLANS: usize = 100;
    const STEPS: usize = 100;
    const CAP: usize = 1000;
    // Fat prompts, so holding the refused ones would show in RSS:
    // 10,000 x 2 KiB = 20 MiB, against 2 MiB for the cap.
    let pad = "x".repeat(2048);
    let mut proj = project("cap");
    proj.configure(|c| {
        c.default_session("s-q");
    });
    proj.set("sessions", "outbox_cap", &CAP.to_string());
    proj.configure(|c| {
        c.str("prompt", "template", &format!("{{title}} {pad}"));
    });
    proj.session("s-q");
    let marker = proj.reader("s-m");
    let d = start(&proj);
    let rss_idle = d.rss_kb();
    let mut expected = Vec::new();
    for p in 0..PLANS {
        let mut text = String::from("# cap flood\n\n");
        for s in 0..STEPS {
            let title = format!("c{p:03}-{s:03}");
            text.push_str(&format!("- [ ] {title} (after: none)\n"));
            expected.push(title);
        }
        let path = proj
            .plan_dir
            .join(format!("20250102T0000{:02}_{p:08x}--cap__todo.md", p % 60));
        let path = if p < 60 {
            path
        } else {
            proj.plan_dir
                .join(format!("20250102T0001{:02}_{p:08x}--cap__todo.md", p % 60))
        };
        write_in_place(&path, text.as_bytes());
    }
    // Written last: once it arrives, every plan before it was read.
    write_in_place(
        &proj
            .plan_dir
            .join("20250103T000000_ffffffff--marker__todo.md"),
        b"<!-- session: s-m -->\n# marker\n\n- [ ] marker\n",
    );
    wait_until("the marker plan's prompt", Duration::from_secs(60), || {
        (marker.count() == 1).then_some(())
    });
    let pending = proj.pending_counts();
    assert_eq!(pending.get("s-q"), Some(&CAP), "{pending:?}");
    let log = d.log();
    assert!(
        log.contains("outbox full"),
        "the refusal is not logged:\n{log}"
    );
    let mut rss = Vec::new();
    for _ in 0..5 {
        rss.push(d.rss_kb());
        std::thread::sleep(Duration::from_millis(100));
    }
    let rss_at_cap = *rss.iter().max().unwrap();
    let state_bytes = std::fs::metadata(proj.state_dir.join("state.json")).map_or(0, |m| m.len())
        + std::fs::metadata(proj.state_dir.join("journal.jsonl")).map_or(0, |m| m.len());
    eprintln!(
        "outbox cap: {} steps ready, {CAP} pending; RSS {rss_idle} KiB idle, {rss_at_cap} KiB \
         at the cap; state files {state_bytes} bytes",
        PLANS * STEPS
    );
    // Holding all 10,000 would add 20 MiB; the cap's 1,000 add 2 MiB.
    assert!(
        rss_at_cap < rss_idle + 12 * 1024,
        "RSS grew from {rss_idle} to {rss_at_cap} KiB"
    );

    // A reader arrives: everything, in order, once.
    let t = Instant::now();
    let reader = proj.reader("s-q");
    wait_until("all prompts delivered", Duration::from_secs(120), || {
        (reader.count() >= PLANS * STEPS).then_some(())
    });
    let drained = t.elapsed();
    wait_until("the outbox to drain", Duration::from_secs(20), || {
        proj.pending_counts().is_empty().then_some(())
    });
    d.stop();
    reader.mark_epoch(1);
    let got: Vec<String> = reader
        .texts()
        .into_iter()
        .map(|t| t.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "prompts out of order or repeated");
    let refusals = proj
        .logs()
        .lines()
        .filter(|l| l.contains("outbox full"))
        .count();
    eprintln!(
        "outbox cap: reader arrived; {} prompts delivered in order in {:.1}s; \
         'outbox full' logged {refusals} time(s)",
        got.len(),
        drained.as_secs_f64()
    );
}
