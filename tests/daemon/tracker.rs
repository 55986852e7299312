//! The tracker side against real files: a fake 9beads mount tree (an events
//! log, `<mount>/ready`, bead files; no `mtab`, so its one mount, `proj`, is
//! named in `[events] mounts`) driven the way the tracker drives it,
//! and a beads `issues.jsonl` rewritten version after version the way
//! `bd export` rewrites it (SPEC §1, §3, §5, §8).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::util::daemon::{command, Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::barrier;
use crate::util::project::Project;

/// A fake 9beads tree under the project: `beads/events`, `beads/proj/`.
struct Tracker {
    root: PathBuf,
    events: PathBuf,
}

impl Tracker {
    fn new(p: &mut Project) -> Tracker {
        let root = p.root.join("beads");
        fs::create_dir_all(root.join("proj")).unwrap();
        let events = root.join("events");
        fs::write(&events, "").unwrap();
        p.set(
            "events",
            "path",
            &format!("{:?}", events.display().to_string()),
        );
        p.set(
            "events",
            "beads_root",
            &format!("{:?}", root.display().to_string()),
        );
        p.set("events", "mounts", "[\"proj\"]");
        Tracker { root, events }
    }

    /// Rewrite the mount's ready list: `(id, assignee, title)` rows.
    fn ready(&self, rows: &[(&str, &str, &str)]) {
        let text: String = rows
            .iter()
            .map(|(id, who, title)| {
                format!("{id}\topen\t0\t{who}\t2026-11-30T10:00:00Z\t{title}\n")
            })
            .collect();
        fs::write(self.root.join("proj/ready"), text).unwrap();
    }

    /// A bead file, as 9beads serves it.
    fn bead(&self, id: &str, title: &str) {
        fs::write(
            self.root.join("proj").join(id),
            format!("---\nid: {id}\ntitle: {title}\nstatus: open\nparent: \nlabels: []\nblockers: []\n---\n{title}\n"),
        )
        .unwrap();
    }

    /// Append lines to the events log (one write, as the tracker appends).
    fn append(&self, lines: &[&str]) {
        let mut text = lines.join("\n");
        text.push('\n');
        fs::OpenOptions::new()
            .append(true)
            .open(&self.events)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
}

/// An event as 9beads writes it: a Go map marshalled, keys sorted.
fn event(kind: &str, id: &str) -> String {
    format!(r#"{{"id":"{id}","mount":"proj","type":"{kind}"}}"#)
}

#[test]
fn beads_entering_the_ready_set_wake_their_sessions_once_through_garbage_claims_and_tracker_restarts(
) {
    let mut p = Project::with_default_session("main");
    let t = Tracker::new(&mut p);
    p.set("events", "notify_completed", "true");
    p.set("events.assignees", "\"agent-1\"", "\"a1\"");
    let main = Reader::open(&p.session("main"));
    let a1 = Reader::open(&p.session("a1"));
    // The backlog before the very first start is the baseline.
    t.ready(&[("bd-old", "-", "Old backlog")]);
    t.bead("bd-old", "Old backlog");
    let d = Daemon::start(&p);
    d.wait_log("first start: 1 already-ready", WAIT);

    // The tracker files two beads, one assigned to agent-1, and says so.
    t.ready(&[
        ("bd-old", "-", "Old backlog"),
        ("bd-a", "-", "Fix the build"),
        ("bd-b", "agent-1", "Write the docs"),
    ]);
    t.append(&[
        "this is not json",
        &event("created", "bd-a"),
        &event("created", "bd-b"),
    ]);
    let got = main.next(WAIT);
    assert!(
        got.contains("bd-a") && got.contains("Fix the build"),
        "{got}"
    );
    let got = a1.next(WAIT);
    assert!(
        got.contains("bd-b") && got.contains("Write the docs"),
        "{got}"
    );
    d.wait_log("tracker event at byte offset 0 skipped", WAIT);

    // Legacy envelope: agent-1 claims bd-a (assigned by someone else).
    t.ready(&[
        ("bd-old", "-", "Old backlog"),
        ("bd-b", "agent-1", "Write the docs"),
    ]);
    t.append(&[
        r#"{"id":"9b1c","ts":1708598530,"source":"beads/proj","type":"BeadClaimed","data":{"bead_id":"bd-a","assignee":"agent-1","mount":"proj"}}"#,
        r#"{"type":"teleported","id":"bd-a","mount":"proj"}"#,
        r#"{"type":"completed","mount":"proj"}"#,
    ]);
    let got = a1.next(WAIT);
    assert!(
        got.contains("bd-a") && got.contains("assigned to agent-1"),
        "{got}"
    );
    assert!(
        got.contains("Fix the build"),
        "the title is remembered: {got}"
    );

    // bd-b completed by someone else: its session hears so.
    t.ready(&[("bd-old", "-", "Old backlog")]);
    t.append(&[&event("completed", "bd-b")]);
    let got = a1.next(WAIT);
    assert!(
        got.contains("bd-b") && got.contains("completed elsewhere"),
        "{got}"
    );

    // The tracker restarts: the log starts empty again, then repeats a
    // claim already announced. Nothing is announced twice.
    fs::write(&t.events, "").unwrap();
    t.append(&[r#"{"id":"9b1c","ts":1708598530,"source":"beads/proj","type":"BeadClaimed","data":{"bead_id":"bd-a","assignee":"agent-1","mount":"proj"}}"#]);
    d.wait_log("reading it again from the start", WAIT);
    // A new bead after the restart is announced.
    t.ready(&[
        ("bd-old", "-", "Old backlog"),
        ("bd-c", "-", "After the restart"),
    ]);
    t.append(&[&event("created", "bd-c")]);
    let got = main.next(WAIT);
    assert!(got.contains("bd-c"), "{got}");
    barrier(&p.plan_dir, &main, "");
    barrier(&p.plan_dir, &a1, "<!-- session: a1 -->\n");
    assert_eq!(d.log_count("teleported"), 1, "an unknown type is said once");

    // A daemon restart re-reads everything and repeats nothing.
    assert!(d.term().success());
    let d = Daemon::start(&p);
    t.append(&[&event("updated", "bd-c")]);
    d.wait_log("ready:", WAIT);
    barrier(&p.plan_dir, &main, "");
    barrier(&p.plan_dir, &a1, "<!-- session: a1 -->\n");
}

#[test]
fn events_from_a_named_pipe_are_read_as_a_stream() {
    let mut p = Project::with_default_session("main");
    let t = Tracker::new(&mut p);
    fs::remove_file(&t.events).unwrap();
    nix::unistd::mkfifo(&t.events, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let main = Reader::open(&p.session("main"));
    t.ready(&[]);
    let d = Daemon::start(&p);
    d.wait_log("reading the named pipe", WAIT);
    t.ready(&[("bd-p", "-", "From the pipe")]);
    // A writer that opens, writes and closes, as `echo >> fifo` does.
    let mut w = fs::OpenOptions::new().write(true).open(&t.events).unwrap();
    w.write_all(format!("{}\n", event("created", "bd-p")).as_bytes())
        .unwrap();
    drop(w);
    let got = main.next(WAIT);
    assert!(
        got.contains("bd-p") && got.contains("From the pipe"),
        "{got}"
    );
    // The writer's close is not an end: a second writer is read too.
    t.ready(&[
        ("bd-p", "-", "From the pipe"),
        ("bd-q", "-", "Second writer"),
    ]);
    let mut w = fs::OpenOptions::new().write(true).open(&t.events).unwrap();
    w.write_all(format!("{}\n", event("created", "bd-q")).as_bytes())
        .unwrap();
    drop(w);
    let got = main.next(WAIT);
    assert!(got.contains("bd-q"), "{got}");
}

/// One issue line as beads exports it.
fn issue(id: &str, title: &str, status: &str, extra: &str) -> String {
    format!(
        r#"{{"id":"{id}","title":"{title}","status":"{status}","issue_type":"task","priority":2{extra},"created_at":"2026-11-01T10:00:00Z"}}"#
    )
}

fn dep(on: &str, kind: &str, of: &str) -> String {
    format!(r#","dependencies":[{{"issue_id":"{of}","depends_on_id":"{on}","type":"{kind}"}}]"#)
}

/// Rewrite issues.jsonl whole, as an export does: temp file, rename.
fn export(path: &Path, lines: &[String]) {
    let tmp = path.with_extension("jsonl.tmp");
    fs::write(&tmp, lines.join("\n") + "\n").unwrap();
    fs::rename(&tmp, path).unwrap();
}

#[test]
fn a_beads_issues_jsonl_rewritten_version_after_version() {
    let mut p = Project::with_default_session("main");
    let beads_dir = p.root.join("repo/.beads");
    fs::create_dir_all(&beads_dir).unwrap();
    let jsonl = beads_dir.join("issues.jsonl");
    p.set(
        "beads",
        "issues_jsonl",
        &format!("{:?}", jsonl.display().to_string()),
    );
    p.set("events.assignees", "\"agent-1\"", "\"a1\"");
    let main = Reader::open(&p.session("main"));
    let a1 = Reader::open(&p.session("a1"));
    let base = issue("bd-base", "Base", "open", "");
    // v1 before the first start: only bd-base is ready (the baseline). The
    // epic, the deferred and the pinned issue never are; bd-par is blocked
    // by bd-base, bd-child by its blocked parent, bd-next by bd-base, and
    // bd-wait waits for bd-par's children (bd-child is open).
    let v1 = vec![
        base.clone(),
        issue("bd-epic", "An epic", "open", "").replace("\"task\"", "\"epic\""),
        issue(
            "bd-child",
            "Child of a blocked parent",
            "open",
            &dep("bd-par", "parent-child", "bd-child"),
        ),
        issue(
            "bd-par",
            "Blocked parent",
            "open",
            &dep("bd-base", "blocks", "bd-par"),
        ),
        issue(
            "bd-next",
            "Needs base",
            "open",
            &format!(
                r#","assignee":"agent-1"{}"#,
                dep("bd-base", "blocks", "bd-next")
            ),
        ),
        issue(
            "bd-later",
            "Deferred",
            "open",
            r#","defer_until":"2099-01-01T00:00:00Z""#,
        ),
        issue("bd-pin", "Pinned", "open", r#","pinned":true"#),
        issue(
            "bd-wait",
            "Waits for the parent's children",
            "open",
            &dep("bd-par", "waits-for", "bd-wait"),
        ),
        r#"{"_type":"memory","id":"m-1","text":"not an issue"}"#.to_string(),
    ];
    export(&jsonl, &v1);
    let d = Daemon::start(&p);
    d.wait_log("first start: 1 already-ready", WAIT);

    // v2: bd-base closes → bd-par, and with it bd-child, and bd-next (to
    // agent-1's session) unblock; bd-wait still waits for bd-child.
    let mut v2 = v1.clone();
    v2[0] = issue("bd-base", "Base", "closed", "");
    export(&jsonl, &v2);
    let mut got = vec![main.next(WAIT), main.next(WAIT)];
    got.sort();
    assert!(got[0].contains("bd-child"), "{got:?}");
    assert!(got[1].contains("bd-par"), "{got:?}");
    let next = a1.next(WAIT);
    assert!(
        next.contains("bd-next") && next.contains("Needs base"),
        "{next}"
    );
    barrier(&p.plan_dir, &main, "");

    // v3: bd-child closes (bd-wait is ready now), plus a garbage line that
    // is reported with its line and skipped.
    let mut v3 = v2.clone();
    v3[2] = issue(
        "bd-child",
        "Child of a blocked parent",
        "closed",
        &dep("bd-par", "parent-child", "bd-child"),
    );
    v3.push("{ this is not json".to_string());
    export(&jsonl, &v3);
    let got = main.next(WAIT);
    assert!(got.contains("bd-wait"), "{got}");
    d.wait_log("issues.jsonl: line 10", WAIT);

    // v4: bd-par goes in progress (open, no longer ready: it stays
    // announced, so it will not wake anyone again) and a new issue is filed.
    let mut v4 = v3.clone();
    v4[3] = issue("bd-par", "Blocked parent", "in_progress", "");
    v4.push(issue("bd-new", "Filed later", "open", ""));
    export(&jsonl, &v4);
    let got = main.next(WAIT);
    assert!(got.contains("bd-new"), "{got}");
    barrier(&p.plan_dir, &main, "");

    // `reveille ready` agrees with the rule on the same file.
    let out = command().arg("ready").arg(&jsonl).output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    let ids: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.split('\t').next())
        .collect();
    assert_eq!(ids, ["bd-next", "bd-wait", "bd-new"], "{listed}");
}
