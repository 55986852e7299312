//! The tracker half against 9beads as it really serves itself: the 9beads
//! double (`doubles::beads`) on a real FUSE mount, the real daemon pointed at
//! it, the double driven through its own write-only files with plain
//! `std::fs` writes, and sessions as FIFOs with readers. The project is
//! mounted the way 9beads-mcp mounts it (`echo <dir> > mount`, a random
//! name) and the daemon is told only its directory. Each test asserts what
//! a user would check: which session heard what, once.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use crate::doubles::beads::{Beads, Served};
use crate::doubles::fuse::fuse_unavailable;
use crate::util::daemon::{Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::barrier;
use crate::util::project::Project;
use crate::util::{try_wait_until, wait_until};

/// FUSE attributes are cached for a second (as 9pfuse's `attrtimeout`), so
/// the daemon may see a change of the events file's length that much late.
const HEAR: Duration = Duration::from_secs(8);

/// A project whose directory (`p.root`, the parent of its plan directory)
/// is mounted on the double under whatever name 9beads picks; `agent-1`
/// maps to session `a1`, completions are told. `None` (with the reason
/// printed) where FUSE cannot run.
struct World {
    p: Project,
    t: Served,
    /// The project's mount name now (a new one after each re-mount).
    mount: RefCell<String>,
    main: Reader,
    a1: Reader,
    /// Numbers the barrier beads.
    barriers: Cell<u32>,
}

fn world(configure: impl FnOnce(&mut Project, &str)) -> Option<World> {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    let mut p = Project::with_default_session("main");
    let t = Beads::mount().expect("mount the 9beads double");
    let mount = t.mount_dir(&p.root);
    t.track(&mut p);
    p.set("events", "notify_completed", "true");
    p.set("events.assignees", "\"agent-1\"", "\"a1\"");
    configure(&mut p, &mount);
    let main = Reader::open(&p.session("main"));
    let a1 = Reader::open(&p.session("a1"));
    Some(World {
        p,
        t,
        mount: RefCell::new(mount),
        main,
        a1,
        barriers: Cell::new(0),
    })
}

impl World {
    fn start(&self) -> Daemon {
        let d = Daemon::start(&self.p);
        d.wait_log("first start:", WAIT);
        d
    }

    fn mount(&self) -> String {
        self.mount.borrow().clone()
    }

    /// `echo ARGS > <mount>/<endpoint>`.
    fn cmd(&self, endpoint: &str, args: &str) {
        self.t.cmd(&self.mount(), endpoint, args);
    }

    /// A bead filed through `<mount>/new`; the id as a user finds it.
    fn new_bead(&self, title: &str, front: &str) -> String {
        self.t.new_bead(&self.mount(), title, front)
    }

    /// 9beads restarts and the project is mounted again (by 9beads-mcp or
    /// by hand), under a new name.
    fn restart_9beads(&self) -> String {
        let old = self.mount();
        self.t.beads.restart();
        let new = self.t.mount_dir(&self.p.root);
        assert_ne!(new, old);
        *self.mount.borrow_mut() = new.clone();
        new
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
        let id = self.new_bead(&title, &format!("blockers: [{hold}]"));
        self.cmd("claim", &format!("{id} assignee=agent-1"));
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
    let Some(w) = world(|_, _| {}) else { return };
    // Ready before the very first start: the baseline, not news (it would
    // be heard before "Fix the build").
    w.new_bead("Old backlog", "");
    let d = w.start();
    d.wait_log(&format!("tracker mounted {}", w.mount()), HEAR);
    // 9beads writes `-` for no dependencies and no assignee.
    let id = w.new_bead("Fix the build", "");
    let ready = std::fs::read_to_string(w.t.root().join(w.mount()).join("ready")).unwrap();
    assert!(
        ready.contains(&format!("{id}\topen\t-\t-\t")),
        "the double writes 9beads' rows: {ready}"
    );
    heard(&w.main, &[&id, "Fix the build"]);
    // A title with a tab in it (a YAML `\t` escape).
    w.new_bead("Tabs\there", "");
    heard(&w.main, &["Tabs\there"]);
    // A NUL in a title would end a prompt on a `nul`-framed pipe: it
    // arrives as a space, in one prompt.
    w.new_bead("Odd\u{0}bytes", "");
    heard(&w.main, &["Odd bytes"]);
    assert_eq!(d.log_count("row skipped"), 0, "{}", d.log());
    w.quiet_main();
}

#[test]
fn claims_reach_the_claimers_session_and_the_default_claimer_wakes_nobody() {
    let Some(w) = world(|_, _| {}) else { return };
    let hold = w.new_bead("Hold", "");
    let d = w.start();
    let docs = w.new_bead("Write docs", "");
    heard(&w.main, &[&docs]);
    // `claimed` names no assignee (keys sorted): reveille finds agent-1 in
    // the bead's row. The claimed bead stays in `ready`, and is not news.
    let before = w.event_lines();
    w.cmd("claim", &format!("{docs} assignee=agent-1"));
    let log = w.t.beads.events();
    let last = log.lines().nth(before).unwrap();
    let m = w.mount();
    assert_eq!(
        last,
        format!(r#"{{"id":"{docs}","mount":"{m}","type":"claimed"}}"#)
    );
    heard(&w.a1, &[&docs, "assigned to agent-1", "Write docs"]);
    // `claim ID` alone (or with a bare second word) assigns the literal
    // `9beads`: mapped to no session, so nobody hears a claim.
    let lone = w.new_bead("Lonely task", "");
    heard(&w.main, &[&lone]);
    w.cmd("claim", &format!("{lone} agent-1"));
    d.wait_log("claims by \"9beads\" are not announced", HEAR);
    w.quiet_a1(&hold);
    w.quiet_main();
}

#[test]
fn a_completion_elsewhere_reaches_the_session_that_had_the_task() {
    let Some(w) = world(|_, _| {}) else { return };
    let hold = w.new_bead("Hold", "");
    let _d = w.start();
    // Claimed by agent-1, then completed: a1 had it.
    let x = w.new_bead("Refactor", "");
    heard(&w.main, &[&x]);
    w.cmd("claim", &format!("{x} assignee=agent-1"));
    heard(&w.a1, &[&x, "assigned to agent-1"]);
    w.cmd("complete", &x);
    heard(&w.a1, &[&x, "completed elsewhere", "Refactor"]);
    // Claimed by the default claimer, then completed: main had it.
    let y = w.new_bead("Tidy up", "");
    heard(&w.main, &[&y]);
    w.cmd("claim", &y);
    w.cmd("complete", &y);
    heard(&w.main, &[&y, "completed elsewhere", "Tidy up"]);
    w.quiet_a1(&hold);
    w.quiet_main();
}

#[test]
fn a_bead_unblocked_by_undep_is_announced_with_the_next_event_of_its_mount() {
    let Some(w) = world(|_, _| {}) else { return };
    let _d = w.start();
    let a = w.new_bead("Blocker", "");
    heard(&w.main, &[&a]);
    let ready = format!("{}/ready", w.mount());
    let reads = w.t.beads.reads(&ready);
    let b = w.new_bead("Waits", &format!("blockers: [{a}]"));
    // Its `created` event has been acted on (blocked: nothing to say).
    wait_until("the ready read after created", HEAR, || {
        (w.t.beads.reads(&ready) > reads).then_some(())
    });
    // `undep` writes no event: nothing to hear yet, and with resync off
    // nothing reads the ready list while no event comes (no idle cost).
    let lines = w.event_lines();
    w.cmd("undep", &format!("{b} {a}"));
    assert_eq!(
        w.event_lines(),
        lines,
        "undep wrote an event: {}",
        w.t.beads.events()
    );
    let reads = w.t.beads.reads(&ready);
    let polled = try_wait_until(Duration::from_millis(1500), || {
        (w.t.beads.reads(&ready) > reads).then_some(())
    });
    assert!(polled.is_none(), "{ready} was read with no event");
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
fn an_updated_bead_file_is_read_again() {
    let Some(w) = world(|_, _| {}) else { return };
    let _d = w.start();
    let a = w.new_bead("Blocker", "");
    heard(&w.main, &[&a]);
    let b = w.new_bead("Waits on a", &format!("blockers: [{a}]"));
    // Writing the bead file with front matter (`updated`): its blockers
    // dropped, it is ready now and announced once, with its new title.
    let lines = w.event_lines();
    w.t.write(
        &format!("{}/{b}", w.mount()),
        "---\ntitle: Waits on nothing\nstatus: open\nblockers: []\n---\n",
    );
    let log = w.t.beads.events();
    let last = log.lines().nth(lines).unwrap();
    assert!(last.ends_with(r#""type":"updated"}"#), "{last}");
    heard(&w.main, &[&b, "Waits on nothing"]);
    // Written again with a new title only: still ready, not news.
    w.t.write(
        &format!("{}/{b}", w.mount()),
        "---\ntitle: Renamed\nstatus: open\n---\n",
    );
    w.quiet_main();
}

#[test]
fn with_resync_a_silent_change_is_announced_without_any_event() {
    let Some(w) = world(|p, _| p.set("events", "resync_ms", "1000")) else {
        return;
    };
    let _d = w.start();
    let a = w.new_bead("Blocker", "");
    heard(&w.main, &[&a]);
    let b = w.new_bead("Deferred then reopened", "");
    heard(&w.main, &[&b]);
    // (Deferred with no date: `reopen` sets the status only, so a bead
    // deferred until a future date would stay out of `ready`.)
    w.cmd("defer", &b);
    let c = w.new_bead("Waits", &format!("blockers: [{a}]"));
    w.cmd("undep", &format!("{c} {a}"));
    let lines = w.event_lines();
    heard(&w.main, &[&c, "Waits"]);
    // Resync keeps reading, about once a second.
    let ready = format!("{}/ready", w.mount());
    let reads = w.t.beads.reads(&ready);
    wait_until("a resync read of the ready list", HEAR, || {
        (w.t.beads.reads(&ready) > reads).then_some(())
    });
    // `reopen` of the deferred bead: silent too.
    w.cmd("reopen", &b);
    heard(&w.main, &[&b, "Deferred then reopened"]);
    assert_eq!(w.event_lines(), lines, "{}", w.t.beads.events());
    w.quiet_main();
}

/// Item 6 of issue 20: a project configured only by its directory follows
/// its mount through a 9beads restart. Ready beads before and after are
/// announced once each; a bead that became ready while 9beads was away
/// from the daemon's view (unblocked in silence, then 9beads restarted) is
/// announced once after; claims and completions after the restart, under
/// the new name, reach the right session.
#[test]
fn a_project_configured_by_its_directory_follows_its_mount_through_a_9beads_restart() {
    let Some(w) = world(|_, _| {}) else { return };
    let hold = w.new_bead("Hold", "");
    let d = w.start();
    let old = w.mount();
    let a = w.new_bead("Before the restart", "");
    heard(&w.main, &[&a]);
    let b = w.new_bead("Claimed before", "");
    heard(&w.main, &[&b]);
    w.cmd("claim", &format!("{b} assignee=agent-1"));
    heard(&w.a1, &[&b, "assigned to agent-1"]);
    let c = w.new_bead("Unblocked in silence", &format!("blockers: [{hold}]"));
    w.cmd("undep", &format!("{c} {hold}"));
    // 9beads restarts: the log and the mount table are empty again, and
    // the project is mounted again under a new name.
    let new = w.restart_9beads();
    d.wait_log("reading it again from the start", HEAR);
    d.wait_log(&format!("tracker mounted {new}"), HEAR);
    heard(&w.main, &[&c, "Unblocked in silence"]);
    let e = w.new_bead("After the restart", "");
    heard(&w.main, &[&e]);
    // A claim and a completion under the new name.
    w.cmd("claim", &format!("{e} assignee=agent-1"));
    heard(&w.a1, &[&e, "assigned to agent-1", "After the restart"]);
    w.cmd("complete", &b);
    heard(&w.a1, &[&b, "completed elsewhere", "Claimed before"]);
    // Nothing from before the restart is heard again, and the old name is
    // not read any more.
    w.quiet_a1(&hold);
    w.quiet_main();
    assert!(w.t.beads.reads(&format!("{new}/ready")) > 0);
    let old_reads = w.t.beads.reads(&format!("{old}/ready"));
    w.quiet_main();
    assert_eq!(w.t.beads.reads(&format!("{old}/ready")), old_reads);
}

#[test]
fn a_configured_mount_name_still_works() {
    let Some(w) = world(|p, mount| {
        p.set("events", "mounts", &format!("[{mount:?}]"));
    }) else {
        return;
    };
    let hold = w.new_bead("Hold", "");
    let d = w.start();
    d.wait_log("first start: 1 already-ready", HEAR);
    let a = w.new_bead("Named mount", "");
    heard(&w.main, &[&a, "Named mount"]);
    w.cmd("claim", &format!("{a} assignee=agent-1"));
    heard(&w.a1, &[&a, "assigned to agent-1"]);
    w.cmd("complete", &a);
    heard(&w.a1, &[&a, "completed elsewhere"]);
    assert_eq!(
        d.log_count("mtab"),
        0,
        "a named mount needs no table: {}",
        d.log()
    );
    w.quiet_a1(&hold);
    w.quiet_main();
}

#[test]
fn an_umount_and_a_mount_of_the_projects_directory_are_followed() {
    let Some(w) = world(|_, _| {}) else { return };
    let d = w.start();
    let a = w.new_bead("Ready before", "");
    heard(&w.main, &[&a]);
    let old = w.mount();
    w.t.write("umount", &w.p.root.display().to_string());
    d.wait_log(&format!("tracker unmounted {old}"), HEAR);
    let new = w.t.mount_dir(&w.p.root);
    *w.mount.borrow_mut() = new.clone();
    d.wait_log(&format!("tracker mounted {new}"), HEAR);
    let b = w.new_bead("After the re-mount", "");
    heard(&w.main, &[&b]);
    // The ready bead from before is not announced again.
    w.quiet_main();
    assert!(w.t.beads.errors().is_empty(), "{:?}", w.t.beads.errors());
}

#[test]
fn a_mount_of_another_directory_is_ignored() {
    let Some(w) = world(|_, _| {}) else { return };
    let d = w.start();
    let other_dir = tempfile::tempdir().unwrap();
    let other = w.t.mount_dir(other_dir.path());
    let x = w.t.new_bead(&other, "Someone else's", "");
    let y = w.t.new_bead(&other, "Also theirs", "");
    w.t.cmd(&other, "claim", &format!("{y} assignee=agent-1"));
    w.t.cmd(&other, "complete", &x);
    // What the other project's mount says reaches nobody: the next thing
    // each session hears is our own.
    w.quiet_main();
    let hold = w.new_bead("Hold", "");
    w.quiet_a1(&hold);
    assert_eq!(w.t.beads.reads(&format!("{other}/ready")), 0, "{}", d.log());
}

/// 9beads restarted while reveille was down, and its new log grew to the
/// very length of the old one (the same kinds of event, ids of the same
/// length): the daemon still sees it is another log, and the claim in it,
/// under the new mount name, is heard; a ready-list rescan alone could not
/// have told it.
#[test]
fn a_tracker_restarted_while_reveille_was_down_is_noticed_though_its_log_looks_the_same() {
    let Some(w) = world(|_, _| {}) else { return };
    let d = w.start();
    let a = w.new_bead("First round", "");
    heard(&w.main, &[&a]);
    w.cmd("claim", &format!("{a} assignee=agent-1"));
    heard(&w.a1, &[&a, "assigned to agent-1"]);
    let old_len = w.t.beads.events().len();
    assert!(d.term().success());

    w.restart_9beads();
    let b = w.new_bead("Second round", "");
    w.cmd("claim", &format!("{b} assignee=agent-1"));
    let new_log = w.t.beads.events();
    assert_eq!(
        new_log.len(),
        old_len,
        "the new log is as long as the old one"
    );

    let d = Daemon::start(&w.p);
    heard(&w.a1, &[&b, "assigned to agent-1", "Second round"]);
    d.wait_log("reading it again from the start", HEAR);
    barrier(&w.p.plan_dir, &w.a1, "<!-- session: a1 -->\n");
    barrier(&w.p.plan_dir, &w.main, "");
}

/// A state directory written by a version that followed the mount by name
/// (state version 1, whose default was the mount named like the project):
/// the bead it announced under `mount:<name>` is adopted by the project's
/// 9beads source when the daemon finds the mount by its directory, and is
/// not announced again; its pending prompt is delivered once, written for
/// the mount's current name.
#[test]
fn a_version_1_state_that_followed_the_mount_by_name_is_adopted() {
    let Some(w) = world(|_, _| {}) else { return };
    let old = w.new_bead("Announced by the old version", "");
    let pending = w.new_bead("Pending in the old version", "");
    std::fs::create_dir_all(&w.p.state_dir).unwrap();
    let state = serde_json::json!({
        "version": 1,
        "announced": {"mount:it": {
            format!("task:{old}"): {"session": "main"},
            format!("task:{pending}"): {"session": "main"},
        }},
        "outbox": {"main": [{
            "seq": 0, "source": "mount:it", "item": format!("task:{pending}"),
            "step": pending, "plan": "mount:it",
            "text": format!("[reveille] Task {pending} is ready: Pending in the old version\nSource: mount:it\n"),
        }]},
        "next_seq": 1,
        "baselined": true,
    });
    std::fs::write(w.p.state_dir.join("state.json"), state.to_string()).unwrap();
    let d = Daemon::start(&w.p);
    d.wait_log("(a mount followed by name) is 9beads:", HEAR);
    // The pending prompt, once, now naming the project's 9beads source.
    heard(
        &w.main,
        &[&pending, "Pending in the old version", "Source: 9beads:"],
    );
    let status = w.p.status_json().to_string();
    assert!(!status.contains("mount:it"), "{status}");
    // The announced one is not heard again: the next is our barrier.
    w.quiet_main();
}
