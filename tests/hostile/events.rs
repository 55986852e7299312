//! Garbage on the tracker's event log: not JSON, 100k nested `[`, a 10 MB
//! line, JSON of the wrong shape, unknown types; and a log truncated and
//! rewritten under the daemon.

use std::fs;

use super::world::{World, GOOD, WAIT};
use crate::util::daemon::Daemon;
use crate::util::wait_until;

/// A world whose default session is `good`, with a `proj` mount whose ready
/// file starts empty and an events log that exists.
fn tracker_world() -> (World, std::path::PathBuf) {
    let mut w = World::new();
    w.set("project", "default_session", &format!("{GOOD:?}"));
    let ready = w.beads.join("proj").join("ready");
    fs::create_dir_all(ready.parent().unwrap()).unwrap();
    fs::write(&ready, "").unwrap();
    w.made(&ready);
    w.append_events(b"");
    (w, ready)
}

fn skipped(d: &Daemon) -> Vec<String> {
    d.lines_with("tracker event at byte offset")
}

#[test]
fn garbage_events_are_one_entry_each_with_their_offset() {
    let (mut w, ready) = tracker_world();
    let good = w.fifo_session(GOOD);
    let d = w.start();
    let deep = "[".repeat(100_000);
    let mut huge = String::from("{\"type\":\"created\",\"id\":\"");
    huge.push_str(&"x".repeat(10 << 20));
    huge.push_str("\",\"mount\":\"proj\"}");
    let lines: Vec<(String, &str)> = vec![
        ("this is not json".into(), "malformed"),
        ("\u{1}\u{2}\u{3}\u{7f}".into(), "malformed"),
        (deep, "nested deeper than"),
        (huge, "exceeds"),
        ("[1,2,3]".into(), "not an event: not a JSON object"),
        ("{\"type\":7}".into(), "`type` is not a string"),
        (
            "{\"type\":\"created\",\"id\":\"bd-1\"}".into(),
            "no `mount` field",
        ),
        (
            "{\"type\":\"created\",\"id\":[\"bd-1\"],\"mount\":\"proj\"}".into(),
            "not a string",
        ),
        (
            "{\"id\":\"u\",\"type\":\"BeadReady\",\"data\":\"x\"}".into(),
            "not an event",
        ),
        ("\"just a string\"".into(), "not a JSON object"),
    ];
    let mut text = Vec::new();
    let mut offsets = Vec::new();
    for (l, _) in &lines {
        offsets.push(text.len());
        text.extend_from_slice(l.as_bytes());
        text.push(b'\n');
    }
    text.extend_from_slice(b"\xff\xfe\n");
    offsets.push(text.len() - 3);
    text.extend_from_slice(b"{\"type\":\"teleported\",\"id\":\"bd-1\",\"mount\":\"proj\"}\n");
    text.extend_from_slice(b"{\"type\":\"teleported\",\"id\":\"bd-2\",\"mount\":\"proj\"}\n");
    w.append_events(&text);
    let n = lines.len() + 1;
    wait_until("every bad line reported", WAIT, || {
        (skipped(&d).len() >= n).then_some(())
    });
    let log = skipped(&d);
    for (i, (_, what)) in lines.iter().enumerate() {
        let needle = format!("byte offset {} skipped", offsets[i]);
        let hits: Vec<&String> = log.iter().filter(|l| l.contains(&needle)).collect();
        assert_eq!(hits.len(), 1, "{needle}: {log:#?}");
        assert!(hits[0].contains(what), "{}", hits[0]);
        assert!(
            hits[0].len() < 2000,
            "the log line quotes too much: {} bytes",
            hits[0].len()
        );
    }
    d.wait_log("\"teleported\" is not one reveille acts on", WAIT);
    assert_eq!(d.log_count("teleported"), 1, "{}", d.log());
    // The stream goes on: a good event after all that still wakes.
    fs::write(&ready, "bd-9\topen\t0\t-\t-\tafter the garbage\n").unwrap();
    w.append_events(b"{\"type\":\"created\",\"id\":\"bd-9\",\"mount\":\"proj\"}\n");
    good.wait_for("after the garbage", WAIT);
    w.assert_alive(&good);
    assert_eq!(skipped(&d).len(), n, "{}", d.log());
    d.assert_running();
    w.assert_contained();
}

#[test]
fn a_truncated_and_rewritten_log_is_read_again_without_repeats() {
    let (mut w, ready) = tracker_world();
    let good = w.fifo_session(GOOD);
    let d = w.start();
    fs::write(&ready, "bd-1\topen\t0\t-\t-\tfirst bead\n").unwrap();
    let first = "{\"type\":\"created\",\"id\":\"bd-1\",\"mount\":\"proj\"}\n".repeat(3);
    w.append_events(first.as_bytes());
    good.wait_for("first bead", WAIT);
    // The tracker restarts: the log starts again, shorter, repeating bd-1.
    fs::write(
        &ready,
        "bd-1\topen\t0\t-\t-\tfirst bead\nbd-2\topen\t0\t-\t-\tsecond bead\n",
    )
    .unwrap();
    fs::write(
        &w.events,
        "{\"type\":\"created\",\"id\":\"bd-2\",\"mount\":\"proj\"}\n",
    )
    .unwrap();
    good.wait_for("second bead", WAIT);
    d.wait_log("reading it again from the start", WAIT);
    // Replaced by a new file (new inode) with more history than before.
    let new = w.beads.join("events.new");
    let mut text = String::new();
    for _ in 0..10 {
        text.push_str("{\"type\":\"created\",\"id\":\"bd-1\",\"mount\":\"proj\"}\n");
        text.push_str("{\"type\":\"updated\",\"id\":\"bd-2\",\"mount\":\"proj\"}\n");
    }
    fs::write(&new, &text).unwrap();
    fs::rename(&new, &w.events).unwrap();
    d.wait_log("was replaced (new inode)", WAIT);
    w.assert_alive(&good);
    let prompts = good.texts();
    for bead in ["first bead", "second bead"] {
        let n = prompts.iter().filter(|p| p.contains(bead)).count();
        assert_eq!(n, 1, "{bead} announced {n} times: {prompts:#?}");
    }
    d.assert_running();
    w.assert_contained();
}

#[test]
fn a_garbage_issues_jsonl_is_reported_once_per_line_across_exports() {
    let mut w = World::new();
    w.set("project", "default_session", &format!("{GOOD:?}"));
    let issues = w.issues.clone();
    w.set(
        "beads",
        "issues_jsonl",
        &format!("{:?}", issues.display().to_string()),
    );
    let good = w.fifo_session(GOOD);
    let garbage = format!(
        "not json\n{}\n{{\"id\":\"{}\",\"title\":\"huge\",\"status\":\"open\"}}\n[1]\n{{\"id\":\"../x\",\"status\":\"open\"}}\n\u{1}\u{2}\n",
        "[".repeat(100_000),
        "x".repeat(10 << 20),
    );
    let export = |w: &World, extra: &str| {
        // An export writes a temp file and renames it into place.
        let tmp = w.root.join("issues.jsonl.tmp");
        fs::write(&tmp, format!("{garbage}{extra}")).unwrap();
        fs::rename(&tmp, &w.issues).unwrap();
    };
    export(&w, "");
    w.made(&issues);
    let d = w.start();
    let ok = "{\"id\":\"bd-ok\",\"title\":\"a real issue\",\"status\":\"open\"}\n";
    export(&w, ok);
    good.wait_for("a real issue", WAIT);
    export(
        &w,
        &format!("{ok}{{\"id\":\"bd-2\",\"title\":\"another\",\"status\":\"open\"}}\n"),
    );
    good.wait_for("another", WAIT);
    w.assert_alive(&good);
    let file = issues.display().to_string();
    let reported = d.lines_with(&format!("{file}: line "));
    // First start: the garbage is reported as the baseline is read; the
    // exports after it repeat the same lines and are not reported again.
    for n in [1, 2, 3, 4, 5, 6] {
        let hits = reported
            .iter()
            .filter(|l| l.contains(&format!(": line {n}: ")))
            .count();
        assert!(hits <= 1, "line {n} reported {hits} times: {reported:#?}");
    }
    assert!(reported.len() >= 4, "{}", d.log());
    assert!(
        reported.iter().all(|l| l.len() < 2000),
        "a log line quotes too much"
    );
    let prompts = good.texts();
    assert_eq!(
        prompts
            .iter()
            .filter(|p| p.contains("a real issue"))
            .count(),
        1
    );
    d.assert_running();
    w.assert_contained();
}
