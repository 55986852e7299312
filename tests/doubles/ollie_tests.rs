//! The ollie-9p double (`doubles::ollie`) through its real FUSE mount, driven
//! with plain `std::fs` as a user's shell would: the agent behaviour a waker
//! depends on, and the unkind parts of the file interface.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::doubles::fuse::fuse_unavailable;
use crate::doubles::ollie::{task_complete, Ollie, Options, Outcome, Via, STATEWAIT, TOOL};
use crate::util::wait_until;

const T: Duration = Duration::from_secs(10);

/// A double with its own working directory for sessions, or `None` (with
/// the reason printed) where FUSE cannot run.
fn double(options: Options) -> Option<(Ollie, tempfile::TempDir)> {
    if let Some(why) = fuse_unavailable() {
        eprintln!("skipped: the ollie-9p double needs FUSE: {why}");
        return None;
    }
    Some((Ollie::with(options), tempfile::tempdir().unwrap()))
}

/// One open, one write, one close: how a shell's `echo text > file` reaches
/// a 9P file.
fn put(path: impl AsRef<Path>, text: &str) {
    let path = path.as_ref();
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all(text.as_bytes())
        .unwrap_or_else(|e| panic!("write {path:?}: {e}"));
}

fn get(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path.as_ref()).unwrap()
}

/// Creates session `id` through `s/new` and waits for its directory (the
/// write acts at clunk, after `close` has returned).
fn new_session(ollie: &Ollie, id: &str, cwd: &Path) -> PathBuf {
    put(
        ollie.sessions_dir().join("new"),
        &format!("cwd={} name={id}\n", cwd.display()),
    );
    let dir = ollie.session_dir(id);
    wait_until(&format!("session {id}"), T, || dir.is_dir().then_some(()));
    dir
}

/// A turn script that holds every turn at its tool call until released.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn hold(&self) {
        let (open, cv) = &*self.0;
        let mut open = open.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
    }
    fn release(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }
}

#[test]
fn submit_on_an_idle_agent_starts_a_turn_and_the_queue_waits_for_a_submit() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let dir = new_session(&ollie, "a", cwd.path());
    put(dir.join("fifo.in"), "queued first\n");
    wait_until("the queued prompt", T, || {
        (ollie.queue("a") == ["queued first"]).then_some(())
    });
    assert!(
        ollie.turns("a").is_empty(),
        "fifo.in on an idle agent started a turn"
    );
    assert_eq!(ollie.state("a").as_deref(), Some("idle"));

    put(dir.join("prompt"), "  hello\n");
    let turns = ollie.wait_turns("a", 2, T);
    assert_eq!(turns[0].prompt, "hello", "the Submit runs first, trimmed");
    assert_eq!(
        turns[1].prompt, "queued first",
        "the queue drains when the turn ends"
    );
    let (first_end, outcome) = turns[0]
        .ended
        .expect("the first turn ended before the next began");
    assert_eq!(outcome, Outcome::Finished);
    assert!(turns[1].started >= first_end);
    ollie.wait_idle("a", T);
    assert!(ollie.queue("a").is_empty());
    let vias: Vec<Via> = ollie.received("a").iter().map(|r| r.via).collect();
    assert_eq!(vias, [Via::Queue, Via::Submit]);
}

#[test]
fn submits_to_a_busy_agent_run_after_its_turn_in_order() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let gate = Gate::default();
    let hold = gate.clone();
    ollie.on_turn(move |turn| {
        if turn.prompt == "one" {
            hold.hold();
        }
    });
    let dir = new_session(&ollie, "busy", cwd.path());
    put(dir.join("prompt"), "one");
    ollie.wait_turns("busy", 1, T);
    // Each write is handled on its own thread: wait for each to land before
    // the next, or their order is not guaranteed (as upstream).
    put(dir.join("prompt"), "two");
    wait_until("two queued", T, || {
        (ollie.queue("busy") == ["two"]).then_some(())
    });
    put(dir.join("prompt"), "three");
    wait_until("three queued", T, || {
        (ollie.queue("busy").len() == 2).then_some(())
    });
    assert_eq!(
        ollie.turns("busy").len(),
        1,
        "a Submit to a busy agent started a turn"
    );
    gate.release();
    let turns = ollie.wait_turns("busy", 3, T);
    let prompts: Vec<&str> = turns.iter().map(|t| t.prompt.as_str()).collect();
    assert_eq!(prompts, ["one", "two", "three"]);
    ollie.wait_idle("busy", T);
    assert_eq!(ollie.turns("busy").len(), 3, "someone got a prompt twice");
}

#[test]
fn a_submit_while_a_turn_is_starting_waits_for_the_whole_chain() {
    // ollie-core runs the pre-turn hooks before it marks the agent busy: a
    // Submit then is not queued but waits on submitMu, behind the chain.
    let slow_hooks = Options {
        pre_turn: Duration::from_millis(1200),
        ..Options::default()
    };
    let Some((ollie, cwd)) = double(slow_hooks) else {
        return;
    };
    let gate = Gate::default();
    let hold = gate.clone();
    ollie.on_turn(move |turn| {
        if turn.prompt == "first" {
            hold.hold();
        }
    });
    let dir = new_session(&ollie, "window", cwd.path());
    put(dir.join("prompt"), "first");
    wait_until("first received", T, || {
        (!ollie.received("window").is_empty()).then_some(())
    });
    put(dir.join("prompt"), "second");
    wait_until("second received", T, || {
        (ollie.received("window").len() == 2).then_some(())
    });
    let turns = ollie.wait_turns("window", 1, T);
    let second = ollie.received("window")[1].at;
    assert!(
        second < turns[0].started,
        "second arrived after the window; the test proves nothing"
    );
    assert!(
        ollie.queue("window").is_empty(),
        "a Submit in the window was queued"
    );
    put(dir.join("fifo.in"), "queued during the turn");
    wait_until("the queued item", T, || {
        (ollie.queue("window").len() == 1).then_some(())
    });
    gate.release();
    let turns = ollie.wait_turns("window", 3, T);
    let prompts: Vec<&str> = turns.iter().map(|t| t.prompt.as_str()).collect();
    assert_eq!(prompts, ["first", "queued during the turn", "second"]);
}

#[test]
fn an_interrupted_turn_drains_nothing() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let gate = Gate::default();
    let hold = gate.clone();
    ollie.on_turn(move |_| hold.hold());
    let dir = new_session(&ollie, "stop", cwd.path());
    put(dir.join("prompt"), "working");
    ollie.wait_turns("stop", 1, T);
    put(dir.join("prompt"), "next");
    wait_until("next queued", T, || {
        (ollie.queue("stop") == ["next"]).then_some(())
    });
    put(dir.join("ctl"), "stop");
    wait_until("the interrupt", T, || {
        (ollie.controls("stop").len() == 1).then_some(())
    });
    gate.release();
    let outcome = wait_until("the turn to end", T, || {
        ollie.turns("stop")[0].ended.map(|(_, o)| o)
    });
    assert_eq!(outcome, Outcome::Interrupted);
    ollie.wait_idle("stop", T);
    assert_eq!(
        ollie.queue("stop"),
        ["next"],
        "an interrupted turn drained the queue"
    );
    assert_eq!(ollie.turns("stop").len(), 1);
}

#[test]
fn a_session_named_after_a_file_of_s_is_unreachable() {
    // pathType asks the session store, whose stat answers for its fixed
    // files first: a session named `new`, `idx`, `b`, … exists, runs, is in
    // s/idx, and has no directory.
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    put(
        ollie.sessions_dir().join("new"),
        &format!("cwd={} name=idx", cwd.path().display()),
    );
    wait_until("session idx", T, || ollie.exists("idx").then_some(()));
    assert!(ollie.sessions_dir().join("idx").is_file());
    assert!(!ollie.session_dir("idx").join("prompt").exists());
    assert!(get(ollie.sessions_dir().join("idx")).starts_with("idx\tidle\t"));
}

#[test]
fn commands_are_not_turns_but_unknown_slash_text_is_a_prompt() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let dir = new_session(&ollie, "c", cwd.path());
    put(dir.join("prompt"), "/compact");
    put(dir.join("ctl"), "clear");
    wait_until("two commands", T, || {
        (ollie.commands("c").len() == 2).then_some(())
    });
    let texts: Vec<String> = ollie.commands("c").into_iter().map(|c| c.text).collect();
    assert!(texts.contains(&"/compact".to_string()) && texts.contains(&"/clear".to_string()));
    put(dir.join("prompt"), "   \n");
    put(dir.join("prompt"), "/usr/share/doc is where the docs are");
    let turns = ollie.wait_turns("c", 1, T);
    assert_eq!(turns[0].prompt, "/usr/share/doc is where the docs are");
    ollie.wait_idle("c", T);
    assert_eq!(ollie.turns("c").len(), 1, "an empty write started a turn");
}

#[test]
fn s_new_errors_never_reach_the_writer() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    new_session(&ollie, "dup", cwd.path());
    let new = ollie.sessions_dir().join("new");
    // Each of these "succeeds" at close(2) and creates nothing.
    put(&new, "cwd=/elsewhere name=dup");
    put(&new, "name=nocwd");
    put(&new, "cwd=/tmp colour=blue");
    wait_until("three refusals", T, || {
        (ollie.errors().len() == 3).then_some(())
    });
    let errors = ollie.errors().join("\n");
    assert!(errors.contains("session already exists: dup"), "{errors}");
    assert!(errors.contains("cwd is required"), "{errors}");
    assert!(errors.contains("unknown option \"colour\""), "{errors}");
    assert_eq!(ollie.session_ids(), ["dup"]);
    assert!(get(ollie.session_dir("dup").join("cfg"))
        .contains(&format!("cwd={}\n", cwd.path().display())));

    put(&new, &format!("cwd={}", cwd.path().display()));
    let id = wait_until("an unnamed session", T, || {
        ollie.session_ids().into_iter().find(|id| id != "dup")
    });
    let (nanos, hex) = id.split_once('-').expect("<unix-nanos>-<6 hex>");
    assert!(
        nanos.len() >= 19 && nanos.bytes().all(|b| b.is_ascii_digit()),
        "{id}"
    );
    assert!(
        hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
}

#[test]
fn statewait_returns_on_a_change_and_after_five_seconds_without() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let dir = new_session(&ollie, "w", cwd.path());
    let statewait = dir.join("statewait");
    let quiet = Instant::now();
    assert_eq!(get(&statewait), "idle\n");
    let waited = quiet.elapsed();
    assert!(
        waited >= STATEWAIT - Duration::from_millis(100),
        "returned after {waited:?}"
    );
    assert!(
        waited < STATEWAIT + Duration::from_secs(2),
        "returned after {waited:?}"
    );

    let reader = std::thread::spawn(move || get(statewait));
    wait_until("the statewait read to block", T, || {
        (ollie.statewait_readers("w") == 1).then_some(())
    });
    let start = Instant::now();
    put(dir.join("prompt"), "go");
    let changed = reader.join().unwrap();
    assert!(
        changed == "thinking\n" || changed.starts_with("calling: "),
        "{changed:?}"
    );
    assert!(start.elapsed() < STATEWAIT, "statewait missed the change");
}

#[test]
fn idx_lists_sessions_sorted_and_cfg_shows_the_state() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let gate = Gate::default();
    let hold = gate.clone();
    ollie.on_turn(move |_| hold.hold());
    let shown = cwd.path().display();
    new_session(&ollie, "zeta", cwd.path());
    let alpha = new_session(&ollie, "alpha", cwd.path());
    put(alpha.join("prompt"), "work");
    wait_until("alpha at its tool call", T, || {
        (ollie.state("alpha")? == format!("calling: {TOOL}")).then_some(())
    });
    // The tool every ollie agent calls today, and the backend by its
    // display name (an openai backend on 127.0.0.1 is `local`).
    assert_eq!(
        get(ollie.sessions_dir().join("idx")),
        format!("alpha\tcalling: execute_code\t{shown}\tlocal\tqwen3:8b\nzeta\tidle\t{shown}\tlocal\tqwen3:8b\n")
    );
    let cfg = get(alpha.join("cfg"));
    assert!(
        cfg.starts_with(&format!("state=calling: {TOOL}\n")),
        "{cfg}"
    );
    for key in [
        "backend=local\n",
        "model=qwen3:8b\n",
        "agent=default\n",
        &format!("cwd={shown}\n"),
    ] {
        assert!(cfg.contains(key), "{key:?} missing from {cfg}");
    }
    gate.release();
    ollie.wait_idle("alpha", T);
    assert!(get(alpha.join("cfg")).starts_with("state=idle\n"));
    put(alpha.join("cfg"), "model=llama3\nstate=thinking");
    wait_until("the model change", T, || {
        get(alpha.join("cfg"))
            .contains("model=llama3\n")
            .then_some(())
    });
    assert!(
        get(alpha.join("cfg")).starts_with("state=idle\n"),
        "state is read-only"
    );
}

#[test]
fn ctl_rn_renames_and_rm_r_kills_a_session_mid_turn() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let old = new_session(&ollie, "old", cwd.path());
    put(old.join("ctl"), "rn fresh");
    let new = ollie.session_dir("fresh");
    wait_until("the rename", T, || new.is_dir().then_some(()));
    // The kernel may keep the old entry for its 1 s entry timeout.
    wait_until("the old name to go", T, || (!old.exists()).then_some(()));
    assert_eq!(ollie.session_ids(), ["fresh"]);

    let gate = Gate::default();
    let hold = gate.clone();
    ollie.on_turn(move |_| hold.hold());
    put(new.join("prompt"), "long job");
    ollie.wait_turns("fresh", 1, T);
    put(new.join("ctl"), "rn renamed");
    wait_until("the refused rename", T, || {
        ollie
            .errors()
            .iter()
            .any(|e| e.contains("cannot rename while agent is running"))
            .then_some(())
    });
    std::fs::remove_dir_all(&new).unwrap();
    assert!(!ollie.exists("fresh"));
    gate.release();
    let turn = wait_until("the killed turn to end", T, || {
        let turn = ollie.turns("fresh").pop()?;
        turn.ended.map(|(_, outcome)| outcome)
    });
    assert_eq!(turn, Outcome::Killed);
    // The killed session's entry lingers for 9pfuse's 1 s entry timeout.
    wait_until("the killed session's directory to go", T, || {
        (!new.exists()).then_some(())
    });
}

#[test]
fn server_side_changes_move_no_mtime_and_raise_no_inotify_event() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let gate = Gate::default();
    let hold = gate.clone();
    ollie.on_turn(move |_| hold.hold());
    let dir = new_session(&ollie, "quiet", cwd.path());
    let cfg = dir.join("cfg");
    let before = std::fs::metadata(&cfg).unwrap();
    put(dir.join("prompt"), "change things");
    ollie.wait_turns("quiet", 1, T);
    let watch = Inotify::watch(&[&dir, &ollie.sessions_dir()]);
    // Server-side changes only from here: the turn goes on and ends (the
    // state changes), a new session appears beside it.
    gate.release();
    ollie.create("other", cwd.path());
    ollie.wait_idle("quiet", T);
    let after = std::fs::metadata(&cfg).unwrap();
    assert_eq!(after.modified().unwrap(), SystemTime::UNIX_EPOCH);
    assert_eq!(before.modified().unwrap(), after.modified().unwrap());
    assert_eq!(
        watch.events(),
        0,
        "a server-side change raised an inotify event"
    );
    // The watch works: a write through this mount is seen by the VFS.
    put(dir.join("plan"), "- [ ] a step\n");
    wait_until("the local write's event", T, || {
        (watch.events() > 0).then_some(())
    });
    // Trimmed, at clunk, which comes after close(2) has returned.
    wait_until("the plan written", T, || {
        (ollie.plan("quiet") == "- [ ] a step").then_some(())
    });
}

/// Queues `n` items (`item 1` …) on session `id`, each seen queued
/// before the next is written (fifo.in writes are handled on threads of
/// their own, in any order).
fn queue_items(ollie: &Ollie, dir: &Path, id: &str, n: usize) {
    for i in 1..=n {
        let text = format!("item {i}");
        put(dir.join("fifo.in"), &text);
        wait_until("the item queued", T, || {
            (ollie.queue(id).last() == Some(&text)).then_some(())
        });
    }
}

#[test]
fn a_lookup_of_fifo_out_pops_three_before_the_read_pops_the_one_it_returns() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let dir = new_session(&ollie, "q", cwd.path());
    queue_items(&ollie, &dir, "q", 5);
    // The lookup before the open walks fifo.out (one pop) and stats it
    // (two): ollie-9p sizes a file by reading it. The read gets the 4th.
    assert_eq!(get(dir.join("fifo.out")), "item 4");
    assert_eq!(ollie.queue("q"), ["item 5"]);
}

#[test]
fn a_stat_of_fifo_out_pops_three_and_so_does_a_listing_of_the_session() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let dir = new_session(&ollie, "q", cwd.path());
    queue_items(&ollie, &dir, "q", 7);
    let meta = std::fs::metadata(dir.join("fifo.out")).unwrap();
    assert_eq!(meta.len(), "item 3".len() as u64, "sized by the 3rd pop");
    assert_eq!(ollie.queue("q").len(), 4, "a stat popped three");
    // 9pfuse's readdir has no types: a typed listing stats every entry.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().any(|n| n == "fifo.out"), "{names:?}");
    assert_eq!(ollie.queue("q"), ["item 7"], "a listing popped three");
}

#[test]
fn a_prompt_written_to_a_file_the_layout_lacks_vanishes() {
    // A shell's `echo text > s/<id>/enqueue` on the current layout: the
    // create is accepted, close succeeds, the text goes nowhere.
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let dir = new_session(&ollie, "gone", cwd.path());
    std::fs::write(dir.join("enqueue"), "lost\n").expect("the write succeeds");
    wait_until("the refusal", T, || {
        ollie
            .errors()
            .iter()
            .any(|e| e.contains("enqueue: not found"))
            .then_some(())
    });
    assert!(ollie.received("gone").is_empty());
    assert!(ollie.queue("gone").is_empty());
    // The kernel may keep the created entry for its 1 s entry timeout.
    wait_until("the file to vanish", T, || {
        (!dir.join("enqueue").exists()).then_some(())
    });
}

#[test]
fn sizes_are_what_the_server_reports_and_turns_take_their_set_time() {
    let Some((ollie, cwd)) = double(Options {
        turn: Duration::from_secs(30),
        ..Options::default()
    }) else {
        return;
    };
    let dir = new_session(&ollie, "sized", cwd.path());
    let len = |p: PathBuf| std::fs::metadata(p).unwrap().len();
    let new = ollie.sessions_dir().join("new");
    assert_eq!(
        len(new.clone()) as usize,
        get(&new).len(),
        "s/new reports its template's length"
    );
    assert_eq!(len(dir.join("statewait")), 4096, "wait files report 4096");
    assert_eq!(len(dir.join("prompt")), 0);
    assert_eq!(len(dir.join("cfg")) as usize, get(dir.join("cfg")).len());
    // The double's turns take 30 s; this session's, 100 ms.
    ollie.set_session_turn("sized", Duration::from_millis(100));
    put(dir.join("prompt"), "quick");
    ollie.wait_turns("sized", 1, T);
    ollie.wait_idle("sized", T);
    let turn = &ollie.turns("sized")[0];
    let took = turn.ended.unwrap().0 - turn.started;
    assert!(
        took >= Duration::from_millis(100) && took < Duration::from_secs(5),
        "{took:?}"
    );
    put(dir.join("ctl"), "kill");
    wait_until("the killed session to go", T, || {
        (!ollie.exists("sized")).then_some(())
    });
    wait_until("its directory to go", T, || (!dir.exists()).then_some(()));
}

#[test]
fn a_turn_script_ticks_a_plan_step_in_place() {
    use std::os::unix::fs::MetadataExt;
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let plan = cwd.path().join("20260101T000000_0123abcd--goal__wip.md");
    std::fs::write(&plan, "# goal\n\n- [ ] First step\n- [ ] Second step\n").unwrap();
    let inode = std::fs::metadata(&plan).unwrap().ino();
    ollie.on_turn(|turn| {
        if turn.prompt.contains("s1") {
            let file = turn.cwd.join("20260101T000000_0123abcd--goal__wip.md");
            assert!(task_complete(&file, "first").unwrap());
        }
    });
    let dir = new_session(&ollie, "ticker", cwd.path());
    put(dir.join("prompt"), "do s1");
    put(dir.join("fifo.in"), "do s2 (and forget to tick it)");
    // s2 is queued during s1's 300 ms turn, and runs after it.
    let turns = ollie.wait_ended("ticker", 2, T);
    assert!(turns
        .iter()
        .all(|t| t.ended.unwrap().1 == Outcome::Finished));
    assert_eq!(
        get(&plan),
        "# goal\n\n- [x] First step\n- [ ] Second step\n"
    );
    assert_eq!(
        std::fs::metadata(&plan).unwrap().ino(),
        inode,
        "rewritten in place"
    );
}

#[test]
fn task_complete_ticks_the_first_matching_open_step() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.md");
    std::fs::write(
        &plan,
        "# goal\n\n- [x] Build it\n- [ ] build the docs\n  how\n- [ ] Build more\n",
    )
    .unwrap();
    assert!(task_complete(&plan, "BUILD").unwrap());
    assert_eq!(
        get(&plan),
        "# goal\n\n- [x] Build it\n- [x] build the docs\n  how\n- [ ] Build more\n"
    );
    assert!(!task_complete(&plan, "nothing like it").unwrap());
}

#[test]
fn the_legacy_layout_has_enqueue_state_and_workdir() {
    let legacy = Options {
        flavour: crate::doubles::ollie::Flavour::Legacy,
        ..Options::default()
    };
    let Some((ollie, cwd)) = double(legacy) else {
        return;
    };
    let new = ollie.sessions_dir().join("new");
    assert_eq!(get(&new), "name=\nworkdir=\nbackend=\nmodel=\nagent=\n");
    put(&new, &format!("cwd={} name=old", cwd.path().display()));
    wait_until("cwd= refused", T, || {
        ollie
            .errors()
            .iter()
            .any(|e| e.contains("unknown option \"cwd\""))
            .then_some(())
    });
    put(&new, &format!("workdir={} name=old", cwd.path().display()));
    let dir = ollie.session_dir("old");
    wait_until("the legacy session", T, || dir.is_dir().then_some(()));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for name in ["enqueue", "dequeue", "state", "workdir", "prompt", "ctl"] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} missing from {names:?}"
        );
    }
    assert!(
        !names
            .iter()
            .any(|n| n == "fifo.in" || n == "cfg" || n == "statewait"),
        "{names:?}"
    );
    assert!(!ollie.sessions_dir().join("idx").exists());
    assert_eq!(
        get(dir.join("workdir")),
        format!("{}\n", cwd.path().display())
    );

    put(dir.join("enqueue"), "later");
    wait_until("the queued prompt", T, || {
        (ollie.queue("old") == ["later"]).then_some(())
    });
    assert_eq!(get(dir.join("state")), "idle\n");
    assert!(ollie.turns("old").is_empty());
    put(dir.join("prompt"), "now");
    let turns = ollie.wait_turns("old", 2, T);
    assert_eq!(
        [turns[0].prompt.as_str(), turns[1].prompt.as_str()],
        ["now", "later"]
    );
}

/// `write_all`, then `close(2)` itself, whose result is returned: over
/// 9pfuse it is 0 whatever the server makes of the text.
fn put_and_close(path: &Path, text: &str) -> i32 {
    use std::os::fd::IntoRawFd;
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
    let fd = file.into_raw_fd();
    // SAFETY: the fd was just taken from the File, which no longer owns it.
    unsafe { libc::close(fd) }
}

#[test]
fn a_session_made_through_s_new_appears_only_after_the_close_returned() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let before = Instant::now();
    put(
        ollie.sessions_dir().join("new"),
        &format!("cwd={} name=late", cwd.path().display()),
    );
    let returned = Instant::now();
    let created = wait_until("the session", T, || ollie.created_at("late"));
    assert!(
        created > returned && created - before >= Duration::from_millis(2),
        "created {:?} after the write began, the close returned after {:?}",
        created - before,
        returned - before
    );
}

#[test]
fn the_backend_is_shown_by_its_display_name_which_s_new_refuses() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let dir = new_session(&ollie, "parent", cwd.path());
    assert!(get(dir.join("cfg")).contains("backend=local\n"));
    let new = ollie.sessions_dir().join("new");
    // What a waker copying the parent's cfg into a create would write.
    put(
        &new,
        &format!("cwd={} name=child backend=local", cwd.path().display()),
    );
    wait_until("the refusal", T, || {
        let errors = ollie.errors().join("\n");
        errors
            .contains("unknown OLLIE_BACKEND \"local\"")
            .then_some(())
    });
    assert!(!ollie.exists("child"));
    put(
        &new,
        &format!("cwd={} name=child backend=openai", cwd.path().display()),
    );
    wait_until("the child", T, || ollie.exists("child").then_some(()));
    let idx = get(ollie.sessions_dir().join("idx"));
    assert!(
        idx.contains("child\tidle\t") && idx.contains("\tlocal\t"),
        "{idx}"
    );
    // A cfg switch to the display name fails too: only the chat says so.
    put(dir.join("cfg"), "backend=local");
    wait_until("the failed switch in the chat", T, || {
        get(dir.join("chat"))
            .contains("failed to switch backend")
            .then_some(())
    });
    assert!(
        get(dir.join("cfg")).contains("backend=local\n"),
        "still openai"
    );
}

#[test]
fn a_refused_prompt_cfg_or_ctl_write_closes_with_0() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let gate = Gate::default();
    let hold = gate.clone();
    ollie.on_turn(move |_| hold.hold());
    let dir = new_session(&ollie, "w", cwd.path());
    put(dir.join("prompt"), "busy now");
    ollie.wait_turns("w", 1, T);
    assert_eq!(put_and_close(&dir.join("cfg"), "backend=ollama"), 0);
    assert_eq!(put_and_close(&dir.join("ctl"), "frobnicate"), 0);
    wait_until("both refusals, at the server", T, || {
        let errors = ollie.errors().join("\n");
        (errors.contains("cannot switch backend while agent is running")
            && errors.contains("unknown ctl command: frobnicate"))
        .then_some(())
    });
    gate.release();
    ollie.wait_idle("w", T);
    ollie.kill("w");
    // The killed session's directory still resolves: the write is lost.
    assert_eq!(put_and_close(&dir.join("prompt"), "into the void"), 0);
    wait_until("the lost prompt, at the server", T, || {
        let errors = ollie.errors().join("\n");
        errors
            .contains("w/prompt: session not found: w")
            .then_some(())
    });
}

#[test]
fn a_killed_sessions_directory_lingers_for_a_second_and_swallows_writes() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let dir = new_session(&ollie, "k", cwd.path());
    put(dir.join("ctl"), "kill");
    wait_until("the kill", T, || (!ollie.exists("k")).then_some(()));
    let killed = Instant::now();
    assert!(dir.is_dir(), "9pfuse's entry timeout keeps it for a second");
    put(dir.join("prompt"), "lost");
    let gone = wait_until("the directory to go", T, || {
        (!dir.exists()).then_some(Instant::now())
    });
    assert!(
        gone - killed >= Duration::from_millis(900),
        "{:?}",
        gone - killed
    );
    assert!(ollie.turns("k").is_empty() && ollie.received("k").is_empty());
}

#[test]
fn a_renamed_sessions_old_path_reaches_it_under_its_new_id_for_a_second() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let old = new_session(&ollie, "before", cwd.path());
    put(old.join("ctl"), "rn after");
    wait_until("the rename", T, || ollie.exists("after").then_some(()));
    // ollie-9p rewrote the old path's fids to the new id.
    put(old.join("prompt"), "through the old name");
    let turns = ollie.wait_turns("after", 1, T);
    assert_eq!(turns[0].prompt, "through the old name");
    wait_until("the old name to go", T, || (!old.exists()).then_some(()));
}

#[test]
fn by_default_a_submitted_turn_starts_after_a_pre_turn_window() {
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    let dir = new_session(&ollie, "p", cwd.path());
    put(dir.join("prompt"), "hooks first");
    let turns = ollie.wait_turns("p", 1, T);
    let received = ollie.received("p")[0].at;
    let window = turns[0].started - received;
    assert!(window >= Duration::from_millis(10), "{window:?}");
}

#[test]
fn a_submit_in_the_gap_between_two_chained_turns_runs_after_the_whole_chain() {
    // The gap between chained turns is the next turn's pre-turn hooks:
    // ollie-core clears currentAction when a turn's run returns and sets it
    // again only after the next one's hooks (core.go `executeTurn`), so a
    // Submit then sees an idle agent and waits on submitMu, behind the
    // chain and everything queued meanwhile.
    let Some((ollie, cwd)) = double(Options {
        pre_turn: Duration::from_millis(800),
        ..Options::default()
    }) else {
        return;
    };
    let gate = Gate::default();
    let hold = gate.clone();
    ollie.on_turn(move |turn| {
        if turn.prompt == "second" {
            hold.hold();
        }
    });
    let dir = new_session(&ollie, "gap", cwd.path());
    put(dir.join("prompt"), "first");
    ollie.wait_turns("gap", 1, T);
    put(dir.join("fifo.in"), "second");
    wait_until("second queued", T, || {
        (ollie.queue("gap") == ["second"]).then_some(())
    });
    // first ends; second's pre-turn hooks run: the chain's gap.
    ollie.wait_ended("gap", 1, T);
    assert_eq!(ollie.state("gap").as_deref(), Some("idle"));
    put(dir.join("prompt"), "in the gap");
    wait_until("in the gap received", T, || {
        (ollie.received("gap").len() == 3).then_some(())
    });
    let turns = ollie.wait_turns("gap", 2, T);
    assert!(
        ollie.received("gap")[2].at < turns[1].started,
        "the Submit came after the gap; the test proves nothing"
    );
    put(dir.join("fifo.in"), "queued later");
    wait_until("queued later queued", T, || {
        (ollie.queue("gap").len() == 1).then_some(())
    });
    gate.release();
    let turns = ollie.wait_turns("gap", 4, T);
    let prompts: Vec<&str> = turns.iter().map(|t| t.prompt.as_str()).collect();
    assert_eq!(prompts, ["first", "second", "queued later", "in the gap"]);
}

/// A real inotify watch on one directory, non-blocking.
struct Inotify(std::fs::File);

impl Inotify {
    fn watch(dirs: &[&Path]) -> Inotify {
        use std::os::fd::FromRawFd;
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: plain syscalls; the fd is owned by the File from here on.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(
            fd >= 0,
            "inotify_init1: {}",
            std::io::Error::last_os_error()
        );
        let file = unsafe { std::fs::File::from_raw_fd(fd) };
        for dir in dirs {
            let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
            let wd = unsafe { libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_ALL_EVENTS) };
            assert!(
                wd >= 0,
                "inotify_add_watch {dir:?}: {}",
                std::io::Error::last_os_error()
            );
        }
        Inotify(file)
    }

    /// How many events are waiting (0 when none).
    fn events(&self) -> usize {
        let mut buf = [0u8; 4096];
        let mut count = 0;
        loop {
            match (&self.0).read(&mut buf) {
                Ok(n) => count += events_in(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return count,
                Err(e) => panic!("inotify read: {e}"),
            }
        }
    }
}

/// The number of `struct inotify_event`s in a read.
fn events_in(mut buf: &[u8]) -> usize {
    let header = std::mem::size_of::<libc::inotify_event>();
    let mut count = 0;
    while buf.len() >= header {
        let len = u32::from_ne_bytes(buf[12..16].try_into().unwrap()) as usize;
        buf = &buf[(header + len).min(buf.len())..];
        count += 1;
    }
    count
}

/// The bug this double first showed: a wake-up written to `fifo.in` of an
/// idle ollie agent is queued and never run. With the default configuration reveille Submits (`prompt`) to an ollie
/// session, so the idle agent starts a turn on the wake-up.
#[test]
fn reveille_wakes_an_idle_ollie_agent() {
    use crate::util::daemon::Daemon;
    use crate::util::plans::{task_plan, Step};
    use crate::util::project::Project;
    let Some((ollie, cwd)) = double(Options::default()) else {
        return;
    };
    new_session(&ollie, "agent", cwd.path());
    let mut project = Project::with_default_session("agent");
    let sessions = format!("{:?}", ollie.sessions_dir().display().to_string());
    project.set("sessions", "dir", &sessions);
    let daemon = Daemon::start(&project);
    task_plan(&project.plan_dir, "wake me", &[Step::new("first step")]);
    wait_until("the wake-up to reach the agent", T, || {
        (!ollie.received("agent").is_empty()).then_some(())
    });
    let turns = ollie.wait_turns("agent", 1, T);
    assert!(
        turns[0].prompt.contains("first step"),
        "{:?}\n{}",
        turns,
        daemon.log()
    );
}
