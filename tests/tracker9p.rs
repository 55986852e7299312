//! The tracker half against 9beads as it really serves itself: the 9beads
//! double (`util::beads`) on a real FUSE mount, the real daemon pointed at
//! it, the double driven through its own `ctl` files with plain `std::fs`
//! writes, and sessions as FIFOs with readers. Each test asserts what a
//! user would check: which session heard what, once.

use std::path::Path;
use std::time::Duration;

use crate::util::beads::{Beads, Served};
use crate::util::daemon::{barrier, Daemon, Project, Reader, WAIT};
use crate::util::fuse::fuse_unavailable;
use crate::util::{try_wait_until, wait_until};

/// FUSE attributes are cached for a second (as 9pfuse's `attrtimeout`), so
/// the daemon may see a change of the events file's length that much late.
const HEAR: Duration = Duration::from_secs(8);

/// A project whose tracker is the double's mount `proj` (the project
/// directory is `cwd`); `agent-1` maps to session `a1`, completions are
/// told. `None` (with the reason printed) where FUSE cannot run.
struct World {
    p: Project,
    t: Served,
    main: Reader,
    a1: Reader,
    /// Numbers the barrier beads.
    barriers: std::cell::Cell<u32>,
}

fn world(configure: impl FnOnce(&mut Project)) -> Option<World> {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    let mut p = Project::with_default_session("main");
    let t = Beads::mount().expect("mount the 9beads double");
    let cwd = p.root.join("proj");
    std::fs::create_dir_all(&cwd).unwrap();
    t.write("ctl", &format!("mount {} proj", cwd.display()));
    t.track(&mut p, "proj");
    p.set("events", "notify_completed", "true");
    p.set("events.assignees", "\"agent-1\"", "\"a1\"");
    configure(&mut p);
    let main = Reader::open(&p.session("main"));
    let a1 = Reader::open(&p.session("a1"));
    Some(World {
        p,
        t,
        main,
        a1,
        barriers: std::cell::Cell::new(0),
    })
}

impl World {
    fn start(&self) -> Daemon {
        let d = Daemon::start(&self.p);
        d.wait_log("first start:", WAIT);
        d
    }

    fn ctl(&self, cmd: &str) {
        self.t.ctl("proj", cmd);
    }

    /// `new TITLE` through ctl; the id as a user finds it in `list`.
    fn new_bead(&self, title: &str, rest: &str) -> String {
        self.ctl(&format!("new {title:?} {rest}"));
        self.t.id_of("proj", title)
    }

    fn event_lines(&self) -> usize {
        self.t.beads.events().lines().count()
    }

    /// Prove nothing more is on its way to `main` from the tracker: a new
    /// ready bead must be the next thing it hears (events are handled in
    /// log order, and a session's prompts go out in announcement order).
    /// Then the plan barrier, for anything else.
    fn quiet_main(&self) {
        let n = self.barriers.get() + 1;
        self.barriers.set(n);
        let title = format!("Main barrier {n}");
        self.new_bead(&title, "");
        let got = self.main.next(HEAR);
        assert!(got.contains(&title), "expected {title:?} next, got: {got}");
        barrier(&self.p.plan_dir, &self.main, "");
    }

    /// The same for `a1`: a claim by agent-1 of a bead no one else hears
    /// about (blocked by `hold`, so never ready).
    fn quiet_a1(&self, hold: &str) {
        let n = self.barriers.get() + 1;
        self.barriers.set(n);
        let title = format!("A1 barrier {n}");
        let id = self.new_bead(&title, &format!("\"\" blockers={hold}"));
        self.ctl(&format!("claim {id} agent-1"));
        let got = self.a1.next(HEAR);
        assert!(got.contains(&title), "expected {title:?} next, got: {got}");
        barrier(&self.p.plan_dir, &self.a1, "<!-- session: a1 -->\n");
    }
}

fn heard(reader: &Reader, what: &[&str]) -> String {
    let got = reader.next(HEAR);
    for w in what {
        assert!(got.contains(w), "expected {w:?} in: {got}");
    }
    got
}

#[test]
fn beads_with_dash_rows_are_announced() {
    let Some(w) = world(|_| {}) else { return };
    // Ready before the very first start: the baseline, not news (it would
    // be heard before "Fix the build").
    w.new_bead("Old backlog", "");
    let d = w.start();
    // 9beads writes `-` for no dependencies and no assignee.
    let id = w.new_bead("Fix the build", "");
    let ready = std::fs::read_to_string(w.t.root().join("proj/ready")).unwrap();
    assert!(
        ready.contains(&format!("{id}\topen\t-\t-\t")),
        "the double writes 9beads' rows: {ready}"
    );
    heard(&w.main, &[&id, "Fix the build"]);
    // A title with a tab in it (ParseArgs turns `\t` into one).
    w.ctl(r#"new "Tabs\there" "described""#);
    heard(&w.main, &["Tabs\there"]);
    // A NUL in a title (`\u0000` through ParseArgs) would end a prompt on a
    // `nul`-framed pipe: it arrives as a space, in one prompt.
    w.ctl(r#"new "Odd\u0000bytes""#);
    heard(&w.main, &["Odd bytes"]);
    assert_eq!(d.log_count("row skipped"), 0, "{}", d.log());
    w.quiet_main();
}

#[test]
fn claims_reach_the_claimers_session_and_the_default_claimer_wakes_nobody() {
    let Some(w) = world(|_| {}) else { return };
    let hold = w.new_bead("Hold", "");
    let d = w.start();
    let docs = w.new_bead("Write docs", "");
    heard(&w.main, &[&docs]);
    // `claimed` names no assignee: reveille finds agent-1 in proj/list.
    let before = w.event_lines();
    w.ctl(&format!("claim {docs} agent-1"));
    let log = w.t.beads.events();
    let last = log.lines().nth(before).unwrap();
    assert_eq!(
        last,
        format!(r#"{{"id":"{docs}","mount":"proj","type":"claimed"}}"#)
    );
    heard(&w.a1, &[&docs, "assigned to agent-1", "Write docs"]);
    // The endpoint file of current 9beads: `echo "<id> assignee=agent-1" > proj/claim`.
    let api = w.new_bead("Design the API", "");
    heard(&w.main, &[&api]);
    w.t.write("proj/claim", &format!("{api} assignee=agent-1"));
    heard(&w.a1, &[&api, "assigned to agent-1", "Design the API"]);
    // `claim ID` alone assigns the literal `9beads`: mapped to no session,
    // so nobody hears a claim.
    let lone = w.new_bead("Lonely task", "");
    heard(&w.main, &[&lone]);
    w.ctl(&format!("claim {lone}"));
    d.wait_log("claims by \"9beads\" are not announced", HEAR);
    w.quiet_a1(&hold);
    w.quiet_main();
}

#[test]
fn a_completion_elsewhere_reaches_the_session_that_had_the_task() {
    let Some(w) = world(|_| {}) else { return };
    let hold = w.new_bead("Hold", "");
    let _d = w.start();
    // Claimed by agent-1, then completed: a1 had it.
    let x = w.new_bead("Refactor", "");
    heard(&w.main, &[&x]);
    w.ctl(&format!("claim {x} agent-1"));
    heard(&w.a1, &[&x, "assigned to agent-1"]);
    w.ctl(&format!("complete {x}"));
    heard(&w.a1, &[&x, "completed elsewhere", "Refactor"]);
    // Claimed by the default claimer, then completed: main had it.
    let y = w.new_bead("Tidy up", "");
    heard(&w.main, &[&y]);
    w.ctl(&format!("claim {y}"));
    w.ctl(&format!("complete {y}"));
    heard(&w.main, &[&y, "completed elsewhere", "Tidy up"]);
    w.quiet_a1(&hold);
    w.quiet_main();
}

#[test]
fn a_bead_unblocked_by_undep_is_announced_with_the_next_event_of_its_mount() {
    let Some(w) = world(|_| {}) else { return };
    let _d = w.start();
    let a = w.new_bead("Blocker", "");
    heard(&w.main, &[&a]);
    let reads = w.t.beads.reads("proj/ready");
    let b = w.new_bead("Waits", &format!("\"\" blockers={a}"));
    // Its `created` event has been acted on (blocked: nothing to say).
    wait_until("the ready read after created", HEAR, || {
        (w.t.beads.reads("proj/ready") > reads).then_some(())
    });
    // `undep` writes no event: nothing to hear yet, and with resync off
    // nothing reads the ready list while no event comes (no idle cost).
    let lines = w.event_lines();
    w.ctl(&format!("undep {b} {a}"));
    assert_eq!(
        w.event_lines(),
        lines,
        "undep wrote an event: {}",
        w.t.beads.events()
    );
    let reads = w.t.beads.reads("proj/ready");
    let polled = try_wait_until(Duration::from_millis(1500), || {
        (w.t.beads.reads("proj/ready") > reads).then_some(())
    });
    assert!(polled.is_none(), "proj/ready was read with no event");
    assert!(w.main.try_next(Duration::ZERO).is_none());
    // The mount's next event, about another bead, brings it.
    let c = w.new_bead("Unrelated", "");
    let mut got = vec![w.main.next(HEAR), w.main.next(HEAR)];
    got.sort_by_key(|p| !p.contains(&b));
    assert!(got[0].contains(&b) && got[0].contains("Waits"), "{got:?}");
    assert!(got[1].contains(&c), "{got:?}");
    w.quiet_main();
}

#[test]
fn with_resync_a_silent_change_is_announced_without_any_event() {
    let Some(w) = world(|p| p.set("events", "resync_ms", "1000")) else {
        return;
    };
    let _d = w.start();
    let a = w.new_bead("Blocker", "");
    heard(&w.main, &[&a]);
    let b = w.new_bead("Deferred then reopened", "");
    heard(&w.main, &[&b]);
    // (Deferred with no date: `reopen` sets the status only, so a bead
    // deferred until a future date would stay out of `ready`.)
    w.ctl(&format!("defer {b}"));
    let c = w.new_bead("Waits", &format!("\"\" blockers={a}"));
    w.ctl(&format!("undep {c} {a}"));
    let lines = w.event_lines();
    heard(&w.main, &[&c, "Waits"]);
    // Resync keeps reading, about once a second.
    let reads = w.t.beads.reads("proj/ready");
    wait_until("a resync read of proj/ready", HEAR, || {
        (w.t.beads.reads("proj/ready") > reads).then_some(())
    });
    // `reopen` of the deferred bead: silent too.
    w.ctl(&format!("reopen {b}"));
    heard(&w.main, &[&b, "Deferred then reopened"]);
    assert_eq!(w.event_lines(), lines, "{}", w.t.beads.events());
    w.quiet_main();
}

fn remount(t: &Served, cwd: &Path) {
    t.write("ctl", &format!("mount {} proj", cwd.display()));
    assert!(t.beads.errors().is_empty(), "{:?}", t.beads.errors());
}

#[test]
fn a_tracker_restart_loses_nothing_and_repeats_nothing() {
    let Some(w) = world(|_| {}) else { return };
    let hold = w.new_bead("Hold", "");
    let d = w.start();
    let a = w.new_bead("Before the restart", "");
    heard(&w.main, &[&a]);
    let b = w.new_bead("Claimed before", "");
    heard(&w.main, &[&b]);
    w.ctl(&format!("claim {b} agent-1"));
    heard(&w.a1, &[&b, "assigned to agent-1"]);
    // 9beads restarts: the log and the mount table are empty again, then
    // the project is mounted again and work goes on. The new log starts
    // with the same mount event, so it can look like the old one.
    w.t.beads.restart();
    remount(&w.t, &w.p.root.join("proj"));
    let c = w.new_bead("After the restart", "");
    heard(&w.main, &[&c]);
    d.wait_log("reading it again from the start", HEAR);
    w.ctl(&format!("complete {b}"));
    heard(&w.a1, &[&b, "completed elsewhere"]);
    // Nothing from before the restart is heard again.
    w.quiet_a1(&hold);
    w.quiet_main();
}

#[test]
fn an_umount_and_a_re_mount_are_followed() {
    let Some(w) = world(|_| {}) else { return };
    let d = w.start();
    let a = w.new_bead("Ready before", "");
    heard(&w.main, &[&a]);
    let cwd = w.p.root.join("proj");
    w.t.write("ctl", &format!("umount {}", cwd.display()));
    d.wait_log("tracker unmounted proj", HEAR);
    remount(&w.t, &cwd);
    d.wait_log_count("tracker mounted proj", 1, HEAR);
    let b = w.new_bead("After the re-mount", "");
    heard(&w.main, &[&b]);
    // The ready bead from before is not announced again.
    w.quiet_main();
    assert!(w.t.beads.errors().is_empty(), "{:?}", w.t.beads.errors());
}

/// 9beads restarted while reveille was down, and its new log grew to the
/// very length of the old one, with the same first event (the same mount):
/// only the bytes before the saved offset tell the logs apart. The claim in
/// the new log is heard; a ready-list rescan alone could not have told it.
#[test]
fn a_tracker_restarted_while_reveille_was_down_is_noticed_though_its_log_looks_the_same() {
    let Some(w) = world(|_| {}) else { return };
    let d = w.start();
    let a = w.new_bead("First round", "");
    heard(&w.main, &[&a]);
    w.ctl(&format!("claim {a} agent-1"));
    heard(&w.a1, &[&a, "assigned to agent-1"]);
    let old_len = w.t.beads.events().len();
    assert!(d.term().success());

    w.t.beads.restart();
    remount(&w.t, &w.p.root.join("proj"));
    let b = w.new_bead("Second round", "");
    w.ctl(&format!("claim {b} agent-1"));
    let new_log = w.t.beads.events();
    assert_eq!(
        new_log.len(),
        old_len,
        "the new log is as long as the old one"
    );

    let d = Daemon::start(&w.p);
    heard(&w.a1, &[&b, "assigned to agent-1", "Second round"]);
    d.wait_log("the bytes before the read offset changed", HEAR);
    barrier(&w.p.plan_dir, &w.a1, "<!-- session: a1 -->\n");
    barrier(&w.p.plan_dir, &w.main, "");
}
