//! Session ids and mount names from data that would climb out of
//! `sessions_dir` / `beads_root`: `../x`, `/etc`, NUL, 300+ bytes.

use super::world::{World, GOOD, WAIT};
use crate::util::daemon::Daemon;
use crate::util::plans::{fresh_uid, plan_name};

/// Session ids a plan may carry that must never become a path.
fn climbing_ids() -> Vec<String> {
    vec![
        "../outside".into(),
        "..".into(),
        "/etc".into(),
        "../outside/s/..".into(),
        "x".repeat(300),
        "a\tb".into(),
    ]
}

#[test]
fn session_ids_that_climb_out_in_plan_files_wake_nobody() {
    let mut w = World::new();
    let good = w.fifo_session(GOOD);
    let d = w.start();
    let mut files = Vec::new();
    for (i, id) in climbing_ids().into_iter().enumerate() {
        // The comment form and the front-matter form.
        let name = plan_name(fresh_uid(), "comment");
        w.write_plan(
            &name,
            format!("# Climb {i}\n<!-- session: {id} -->\n\n- [ ] step {i}\n"),
        );
        files.push(name);
        let name = plan_name(fresh_uid(), "front");
        w.write_plan(
            &name,
            format!("---\nsession: {id}\n---\n# Climb {i}\n\n- [ ] step {i}\n"),
        );
        files.push(name);
    }
    for (i, id) in [
        "../outside".to_string(),
        "/etc".into(),
        "a\u{0}b".into(),
        "y".repeat(300),
    ]
    .iter()
    .enumerate()
    {
        let name = format!("climb{i}.plan.json");
        let json = serde_json::json!({
            "title": "climb", "session": id,
            "phases": [{"tasks": [{"text": format!("json step {i}")}]}],
        });
        w.write_plan(&name, json.to_string());
        files.push(name);
    }
    for f in &files {
        let line = d.wait_log(f, WAIT);
        assert!(line.contains("ERROR"), "{line}");
    }
    w.assert_alive(&good);
    // Routed nowhere: each refusal is said once, nothing was announced.
    for f in &files {
        assert_eq!(
            d.log_count(f),
            1,
            "{f} logged more than once:\n{:#?}",
            d.lines_with(f)
        );
    }
    assert!(
        d.lines_with("; it wakes nobody until it is fixed").len() == files.len(),
        "{}",
        d.log()
    );
    assert_eq!(d.log_count(": announced "), 1, "{}", d.log());
    d.assert_running();
    w.assert_contained();
}

#[test]
fn mount_names_that_climb_out_in_tracker_events_are_skipped() {
    let mut w = World::new();
    w.set("project", "default_session", &format!("{GOOD:?}"));
    let good = w.fifo_session(GOOD);
    std::fs::create_dir_all(w.beads.join("proj")).unwrap();
    let ready = w.beads.join("proj").join("ready");
    std::fs::write(&ready, "").unwrap();
    w.made(&ready);
    w.append_events(b"");
    let d = w.start();
    let long = "m".repeat(300);
    let bad = [
        r#"{"type":"created","id":"bd-1","mount":"../outside"}"#.to_string(),
        r#"{"type":"updated","id":"bd-1","mount":"/etc"}"#.into(),
        r#"{"type":"mount","name":".."}"#.into(),
        r#"{"type":"created","id":"bd-1","mount":"pr\u0000oj"}"#.into(),
        r#"{"type":"claimed","id":"../../x","mount":"proj","assignee":"a"}"#.into(),
        format!(r#"{{"type":"completed","id":"bd-1","mount":"{long}"}}"#),
        r#"{"id":"u","ts":1,"source":"beads/../outside","type":"BeadReady","data":{"id":"bd-2","mount":"../outside","title":"t"}}"#.into(),
        r#"{"id":"u","ts":1,"source":"beads/proj","type":"BeadClaimed","data":{"bead_id":"bd-3","assignee":"x","mount":"/etc"}}"#.into(),
    ];
    let mut text = String::new();
    for l in &bad {
        text.push_str(l);
        text.push('\n');
    }
    w.append_events(text.as_bytes());
    let skipped = |d: &Daemon| d.log_count("tracker event at byte offset");
    crate::util::wait_until("every bad event reported", WAIT, || {
        (skipped(&d) == bad.len()).then_some(())
    });
    // One entry per line, each naming its offset; the names are refused.
    let mut offset = 0;
    for l in &bad {
        assert_eq!(
            d.log_count(&format!("byte offset {offset} skipped")),
            1,
            "{}",
            d.log()
        );
        offset += l.len() + 1;
    }
    assert!(d.log_count("invalid mount") >= 4, "{}", d.log());
    // A good bead on the real mount still wakes the default session.
    std::fs::write(&ready, "bd-ok\topen\t0\t-\t-\tgood bead\n").unwrap();
    w.append_events(b"{\"type\":\"created\",\"id\":\"bd-ok\",\"mount\":\"proj\"}\n");
    good.wait_for("bd-ok", WAIT);
    w.assert_alive(&good);
    assert_eq!(skipped(&d), bad.len(), "{}", d.log());
    d.assert_running();
    w.assert_contained();
}
