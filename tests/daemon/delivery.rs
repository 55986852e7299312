//! Delivery to sessions that cannot take a prompt right now: no reader, a
//! reader that went away, a reader that does not read (SPEC §4, §8.9).

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

use crate::util::daemon::{Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::{barrier, task_complete, task_plan, task_plan_with, task_uncheck, Step};
use crate::util::project::Project;
use crate::util::wait_until;

/// Far longer than any test: a prompt delivered sooner was not delivered by
/// the retry timer but because the reader was seen arriving.
const NO_RETRY_MS: &str = "600000";

#[test]
fn prompts_for_an_absent_reader_wait_in_the_outbox_and_flow_in_order_when_it_appears() {
    let mut p = Project::with_default_session("agent");
    p.set("sessions", "retry_initial_ms", NO_RETRY_MS);
    p.set("sessions", "retry_max_ms", NO_RETRY_MS);
    let fifo = p.session("agent");
    let d = Daemon::start(&p);

    let plan = task_plan(
        &p.plan_dir,
        "Three at once",
        &[
            Step::new("Alpha").after("none"),
            Step::new("Beta").after("none"),
            Step::new("Gamma").after("none"),
            Step::new("Delta").after("s1"),
        ],
    );
    d.wait_log("no reader on the FIFO (ENXIO)", WAIT);
    let pending = wait_until("three prompts pending in status", WAIT, || {
        let pending = p.pending("agent");
        (pending.len() == 3).then_some(pending)
    });
    assert_eq!(pending, ["s1", "s2", "s3"]);

    // A reader appears: everything pending arrives, in order, long before
    // the retry timer would have fired.
    let opened = Instant::now();
    let reader = Reader::open(&fifo);
    for (label, title) in [("s1", "Alpha"), ("s2", "Beta"), ("s3", "Gamma")] {
        let got = reader.next(WAIT);
        assert!(got.contains(label) && got.contains(title), "{got}");
    }
    let took = opened.elapsed();
    assert!(took < Duration::from_secs(3), "delivery took {took:?}");
    wait_until("the outbox to drain in status", WAIT, || {
        p.pending("agent").is_empty().then_some(())
    });

    // The reader goes away: the next wake-up is kept, then delivered when a
    // reader comes back.
    assert!(reader.close().is_empty());
    task_complete(&plan, "Alpha");
    wait_until("s4 pending in status", WAIT, || {
        (p.pending("agent") == ["s4"]).then_some(())
    });
    let reader = Reader::open(&fifo);
    let got = reader.next(WAIT);
    assert!(got.contains("s4") && got.contains("Delta"), "{got}");
    barrier(&p.plan_dir, &reader, "");
}

#[test]
fn a_stuck_session_never_delays_another() {
    let p = Project::new();
    p.session("gone"); // a FIFO nobody reads from: ENXIO
    let full = p.session("full"); // a reader that never reads: EAGAIN
    let live = Reader::open(&p.session("live"));
    let holder = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&full)
        .unwrap();
    let d = Daemon::start(&p);

    task_plan_with(
        &p.plan_dir,
        "Nobody listens",
        &[
            Step::new("One").after("none"),
            Step::new("Two").after("none"),
        ],
        "<!-- session: gone -->\n\n",
    );
    // A prompt larger than the pipe's buffer: written in part, the rest
    // waits for the reader to drain the pipe.
    let big = "x".repeat(100) + "\n";
    let big = big.repeat(1500);
    task_plan_with(
        &p.plan_dir,
        "Too big to fit",
        &[
            Step::new("Huge").desc(&big),
            Step::new("After huge").after("none"),
        ],
        "<!-- session: full -->\n\n",
    );
    d.wait_log("no reader on the FIFO (ENXIO)", WAIT);
    d.wait_log("announced s2 to session full", WAIT);

    let plan = task_plan_with(
        &p.plan_dir,
        "Keep going",
        &[Step::new("First"), Step::new("Second"), Step::new("Third")],
        "<!-- session: live -->\n\n",
    );
    assert!(live.next(WAIT).contains("First"));
    for (title, next) in [("First", "Second"), ("Second", "Third")] {
        let t = Instant::now();
        task_complete(&plan, title);
        let got = live.next(WAIT);
        let took = t.elapsed();
        assert!(got.contains(next), "{got}");
        assert!(
            took < Duration::from_secs(1),
            "the live session waited {took:?} behind the stuck ones"
        );
    }
    barrier(&p.plan_dir, &live, "<!-- session: live -->\n\n");

    let status = p.status_json();
    let gone: Vec<&str> = status["outbox"]["gone"]
        .as_array()
        .expect("gone's outbox")
        .iter()
        .map(|x| x["step"].as_str().unwrap())
        .collect();
    assert_eq!(gone, ["s1", "s2"], "{status:#}");
    // The huge prompt is in flight (partly in the pipe), the other behind it.
    let full_pending: Vec<&str> = status["outbox"]["full"]
        .as_array()
        .expect("full's outbox")
        .iter()
        .map(|x| x["step"].as_str().unwrap())
        .collect();
    assert_eq!(full_pending, ["s1", "s2"], "{status:#}");

    // Once the full session reads, it gets the huge prompt whole, then the
    // next one: never split, never interleaved.
    let reader = Reader::open(&full);
    let huge = reader.next(WAIT);
    assert!(huge.contains("Huge") && huge.contains(&big[..big.len() - 1]));
    assert!(reader.next(WAIT).contains("After huge"));
    drop(holder);
}

/// Regression: a prompt waiting in the outbox for a step whose dependency
/// was unchecked again was still delivered later, waking the agent for a
/// step that was no longer ready (found by the engine's property test).
#[test]
fn a_pending_prompt_whose_dependency_is_unchecked_is_withdrawn() {
    let mut p = Project::with_default_session("agent");
    p.set("sessions", "retry_initial_ms", NO_RETRY_MS);
    p.set("sessions", "retry_max_ms", NO_RETRY_MS);
    let fifo = p.session("agent");
    let reader = Reader::open(&fifo);
    let d = Daemon::start(&p);
    let plan = task_plan(
        &p.plan_dir,
        "Reopened",
        &[Step::new("Prepare"), Step::new("Use it")],
    );
    assert!(reader.next(WAIT).contains("Prepare"));
    assert!(reader.close().is_empty());

    task_complete(&plan, "Prepare");
    wait_until("s2 pending", WAIT, || {
        (p.pending("agent") == ["s2"]).then_some(())
    });
    // The agent reopens step 1 before s2's prompt could be delivered.
    task_uncheck(&plan, "Prepare");
    d.wait_log("withdrew pending prompt for s2", WAIT);

    // Back online: s1 again (it became ready again), never the stale s2.
    let reader = Reader::open(&fifo);
    let got = reader.next(WAIT);
    assert!(got.contains("s1") && got.contains("Prepare"), "{got}");
    barrier(&p.plan_dir, &reader, "");
    // And s2 is announced again once it is really ready.
    task_complete(&plan, "Prepare");
    let got = reader.next(WAIT);
    assert!(got.contains("s2") && got.contains("Use it"), "{got}");
    barrier(&p.plan_dir, &reader, "");
}

/// A reader that arrives while its session's lane is backing off after a
/// failed write, but with nothing waiting in the outbox at that moment
/// (the one prompt was withdrawn), still ends the backing off: the next
/// prompt goes out at once, not after the retry timer.
#[test]
fn a_reader_arriving_between_prompts_ends_the_backing_off() {
    let mut p = Project::with_default_session("agent");
    p.set("sessions", "retry_initial_ms", NO_RETRY_MS);
    p.set("sessions", "retry_max_ms", NO_RETRY_MS);
    p.set("project", "nudge_done", "false");
    let fifo = p.session("agent");
    let d = Daemon::start(&p);
    let first = task_plan(&p.plan_dir, "Gone soon", &[Step::new("Only step")]);
    d.wait_log("no reader on the FIFO (ENXIO)", WAIT);
    // The agent does the step anyway: its prompt is withdrawn, the outbox
    // is empty, and the lane has not written since the failure.
    task_complete(&first, "Only step");
    d.wait_log("withdrew pending prompt for s1", WAIT);
    assert!(p.pending("agent").is_empty());
    let reader = Reader::open(&fifo);
    // One inotify queue reports the reader's open before the new plan:
    // its prompt must arrive now, not when the retry timer fires (in ten
    // minutes).
    task_plan(&p.plan_dir, "Next", &[Step::new("Fresh work")]);
    let got = reader.next(WAIT);
    assert!(got.contains("Fresh work"), "{got}");
}
