//! Tests for the tracker parsers, with lines shaped as SPEC §1 shows them.

use super::*;
use proptest::prelude::*;

fn ev(line: &str) -> Result<TrackerEvent, EventError> {
    parse_event(line.as_bytes())
}

fn ids(id: &str, mount: &str) -> (String, String) {
    (id.to_string(), mount.to_string())
}

/// Builds the expected event of one current-shape type from `(id, mount)`.
type MakeEvent = fn(String, String) -> TrackerEvent;

#[test]
fn current_shape_each_type() {
    let cases: [(&str, MakeEvent); 5] = [
        ("created", |id, mount| TrackerEvent::Created { id, mount }),
        ("completed", |id, mount| TrackerEvent::Completed {
            id,
            mount,
        }),
        ("failed", |id, mount| TrackerEvent::Failed { id, mount }),
        ("deleted", |id, mount| TrackerEvent::Deleted { id, mount }),
        ("updated", |id, mount| TrackerEvent::Updated { id, mount }),
    ];
    for (kind, make) in cases {
        let line = format!(r#"{{"type":"{kind}","id":"bd-a1b2","mount":"myproj"}}"#);
        let (id, mount) = ids("bd-a1b2", "myproj");
        assert_eq!(ev(&line), Ok(make(id, mount)), "{kind}");
    }
}

#[test]
fn current_claimed_with_and_without_assignee() {
    assert_eq!(
        ev(r#"{"type":"claimed","id":"bd-a1b2","mount":"myproj","assignee":"agent-1"}"#),
        Ok(TrackerEvent::Claimed {
            id: "bd-a1b2".into(),
            mount: "myproj".into(),
            assignee: Some("agent-1".into())
        })
    );
    for tail in ["", r#","assignee":null"#, r#","assignee":"""#] {
        let line = format!(r#"{{"type":"claimed","id":"bd-1","mount":"m"{tail}}}"#);
        assert!(
            matches!(ev(&line), Ok(TrackerEvent::Claimed { assignee: None, .. })),
            "{line}"
        );
    }
}

#[test]
fn mount_and_umount() {
    assert_eq!(
        ev(r#"{"type":"mount","name":"myproj","cwd":"/home/u/src/myproj"}"#),
        Ok(TrackerEvent::Mount {
            name: "myproj".into(),
            cwd: Some("/home/u/src/myproj".into())
        })
    );
    assert_eq!(
        ev(r#"{"type":"umount","name":"myproj","cwd":"/home/u/src/myproj"}"#),
        Ok(TrackerEvent::Umount {
            name: "myproj".into()
        })
    );
    assert!(matches!(
        ev(r#"{"type":"umount"}"#),
        Err(EventError::WrongShape(_))
    ));
}

#[test]
fn envelope_bead_ready_takes_mount_from_source_or_data() {
    let line = r#"{"id":"6f1c2a8e-0d4b-4c1a-9a53-2b1d0c7e9f10","ts":1708598530,"source":"beads/myproj","type":"BeadReady","data":{"id":"bd-a1b2","title":"Fix the parser","status":"open","assignee":"agent-1","labels":["x"],"priority":2}}"#;
    assert_eq!(
        ev(line),
        Ok(TrackerEvent::Ready {
            id: "bd-a1b2".into(),
            mount: "myproj".into(),
            title: Some("Fix the parser".into()),
            assignee: Some("agent-1".into())
        })
    );
    let line = r#"{"id":"u","ts":1,"source":"elsewhere","type":"BeadReady","data":{"id":"bd-9","mount":"other"}}"#;
    assert_eq!(
        ev(line),
        Ok(TrackerEvent::Ready {
            id: "bd-9".into(),
            mount: "other".into(),
            title: None,
            assignee: None
        })
    );
}

#[test]
fn envelope_bead_claimed() {
    let line = r#"{"id":"6f1c2a8e","ts":1708598530,"source":"beads/myproj","type":"BeadClaimed","data":{"bead_id":"bd-a1b2","assignee":"agent-2","mount":"myproj"}}"#;
    assert_eq!(
        ev(line),
        Ok(TrackerEvent::Claimed {
            id: "bd-a1b2".into(),
            mount: "myproj".into(),
            assignee: Some("agent-2".into())
        })
    );
}

#[test]
fn envelope_without_a_mount_is_wrong_shape() {
    let line = r#"{"id":"u","ts":1,"source":"git/x","type":"BeadReady","data":{"id":"bd-1"}}"#;
    assert!(matches!(ev(line), Err(EventError::WrongShape(_))));
    let line = r#"{"id":"u","type":"BeadReady","data":"bd-1"}"#;
    assert!(matches!(ev(line), Err(EventError::WrongShape(_))));
}

#[test]
fn unknown_types_are_not_errors() {
    assert_eq!(
        ev(r#"{"type":"reopened","id":"bd-1","mount":"m"}"#),
        Ok(TrackerEvent::Unknown {
            type_name: "reopened".into()
        })
    );
    // Unknown types do not need the known types' fields.
    assert_eq!(
        ev(r#"{"type":"BeadCommented","data":7}"#),
        Ok(TrackerEvent::Unknown {
            type_name: "BeadCommented".into()
        })
    );
}

#[test]
fn garbage_is_malformed() {
    for line in [&b"not json"[..], b"{\"type\":", b"\xff\xfe{}", b"{}{}"] {
        assert!(
            matches!(parse_event(line), Err(EventError::Malformed(_))),
            "{line:?}"
        );
    }
    assert_eq!(parse_event(b"  \r"), Err(EventError::Empty));
}

#[test]
fn wrong_shape_is_distinguished() {
    for line in [
        r#"[1,2]"#,
        r#""completed""#,
        r#"{"id":"bd-1","mount":"m"}"#,
        r#"{"type":7,"id":"bd-1","mount":"m"}"#,
        r#"{"type":"completed","mount":"m"}"#,
        r#"{"type":"completed","id":42,"mount":"m"}"#,
        r#"{"type":"claimed","id":"bd-1","mount":"m","assignee":["a"]}"#,
    ] {
        assert!(matches!(ev(line), Err(EventError::WrongShape(_))), "{line}");
    }
}

#[test]
fn path_hostile_names_are_refused() {
    for (line, bad) in [
        (r#"{"type":"completed","id":"../x","mount":"m"}"#, "../x"),
        (r#"{"type":"completed","id":"bd-1","mount":".."}"#, ".."),
        (r#"{"type":"mount","name":"a/b","cwd":"/"}"#, "a/b"),
        (r#"{"type":"created","id":"bd\u0000","mount":"m"}"#, "bd\0"),
    ] {
        match ev(line) {
            Err(EventError::BadName { value, .. }) => assert_eq!(value, bad),
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn deeply_nested_line_is_an_error_not_a_crash() {
    let deep = "[".repeat(100_000);
    assert_eq!(parse_event(deep.as_bytes()), Err(EventError::TooDeep));
    let deep = format!(r#"{{"type":"completed","x":{}}}"#, "[".repeat(100_000));
    assert_eq!(parse_event(deep.as_bytes()), Err(EventError::TooDeep));
}

#[test]
fn enormous_line_is_too_long() {
    let mut line = br#"{"type":"completed","id":"bd-1","mount":"m","pad":""#.to_vec();
    line.resize(MAX_EVENT_LINE + 1, b'a');
    assert_eq!(
        parse_event(&line),
        Err(EventError::TooLong {
            len: MAX_EVENT_LINE + 1
        })
    );
}

#[test]
fn trailing_cr_is_tolerated() {
    assert!(matches!(
        ev("{\"type\":\"completed\",\"id\":\"bd-1\",\"mount\":\"m\"}\r"),
        Ok(TrackerEvent::Completed { .. })
    ));
}

#[test]
fn valid_id_rules() {
    for ok in [
        "bd-a1b2",
        "myproj",
        "my proj",
        "a.b",
        "x..y",
        &"a".repeat(255),
    ] {
        assert!(valid_id(ok), "{ok}");
    }
    for bad in [
        "",
        ".",
        "..",
        ".hidden",
        "a/b",
        "/",
        "a\0b",
        "a\tb",
        "a\nb",
        &"a".repeat(256),
    ] {
        assert!(!valid_id(bad), "{bad:?}");
    }
}

#[test]
fn ready_file_rows() {
    let text = "bd-a1b2\topen\t0\t-\t-\tFix the parser for good\n\
                bd-c3d4\topen\t0\tagent-1\t2025-01-15T10:00:00Z\tWrite docs\r\n\
                \n\
                bd-e5f6\topen\t2\t-\t-\t-\n";
    let (rows, errors) = parse_ready(text);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        rows,
        vec![
            ReadyRow {
                id: "bd-a1b2".into(),
                status: "open".into(),
                blockers: 0,
                assignee: None,
                updated: None,
                title: "Fix the parser for good".into()
            },
            ReadyRow {
                id: "bd-c3d4".into(),
                status: "open".into(),
                blockers: 0,
                assignee: Some("agent-1".into()),
                updated: Some("2025-01-15T10:00:00Z".into()),
                title: "Write docs".into()
            },
            ReadyRow {
                id: "bd-e5f6".into(),
                status: "open".into(),
                blockers: 2,
                assignee: None,
                updated: None,
                title: String::new()
            },
        ]
    );
}

/// Rows exactly as 9beads' `readMountList` (p9/server.go) writes them: `-`
/// for no dependencies and for no assignee, `YYYY-MM-DD`, the title verbatim.
#[test]
fn ready_file_rows_as_9beads_writes_them() {
    let text = "bd-a1b2\topen\t-\t-\t2026-04-11\tFix the parser\n\
                bd-c3d4\tin_progress\t2\t9beads\t2026-04-10\tTabs\tin\tthe title\n\
                bd-e5f6\topen\t-\tagent-1\t2026-04-09\tA title\n\
                written over two lines\n\
                bd-0007\topen\t1\t-\t2026-04-09\tNUL\u{0}and \u{fffd} bytes\n";
    let (rows, errors) = parse_ready(text);
    assert!(errors.is_empty(), "{errors:?}");
    /// id, status, blockers, assignee, updated, title.
    type Row<'a> = (
        &'a str,
        &'a str,
        u32,
        Option<&'a str>,
        Option<&'a str>,
        &'a str,
    );
    let got: Vec<Row> = rows
        .iter()
        .map(|r| {
            (
                r.id.as_str(),
                r.status.as_str(),
                r.blockers,
                r.assignee.as_deref(),
                r.updated.as_deref(),
                r.title.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "bd-a1b2",
                "open",
                0,
                None,
                Some("2026-04-11"),
                "Fix the parser"
            ),
            (
                "bd-c3d4",
                "in_progress",
                2,
                Some("9beads"),
                Some("2026-04-10"),
                "Tabs\tin\tthe title"
            ),
            (
                "bd-e5f6",
                "open",
                0,
                Some("agent-1"),
                Some("2026-04-09"),
                "A title written over two lines"
            ),
            (
                "bd-0007",
                "open",
                1,
                None,
                Some("2026-04-09"),
                "NUL and \u{fffd} bytes"
            ),
        ]
    );
}

#[test]
fn ready_file_bad_rows_are_reported_and_skipped() {
    let text = "bd-1\topen\t0\t-\t-\tGood one\n\
                bd-2\topen\t0\n\
                bd-3 open 0 - - spaces not tabs\n\
                bd-4\topen\tmany\t-\t-\tBad count\n\
                ../x\topen\t0\t-\t-\tBad id\n\
                bd-5\topen\t1\t-\t-\tAlso good\n";
    let (rows, errors) = parse_ready(text);
    let got: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(got, ["bd-1", "bd-5"]);
    let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [2, 3, 4, 5]);
}

#[test]
fn bead_file_flow_lists() {
    let text = "---\n\
                id: bd-a1b2\n\
                title: \"Fix: the parser\"\n\
                status: open\n\
                parent: bd-0001\n\
                labels: [backend, \"urgent\"]\n\
                blockers: []\n\
                assignee: agent-1\n\
                ---\n\
                Body line one.\n\
                \n\
                --- not a delimiter any more\n";
    let bead = parse_bead_file(text).expect("parses");
    assert_eq!(
        bead,
        BeadFile {
            id: "bd-a1b2".into(),
            title: "Fix: the parser".into(),
            status: "open".into(),
            parent: Some("bd-0001".into()),
            labels: vec!["backend".into(), "urgent".into()],
            blockers: vec![],
            assignee: Some("agent-1".into()),
            body: "Body line one.\n\n--- not a delimiter any more\n".into(),
        }
    );
}

#[test]
fn bead_file_block_lists_and_empty_values() {
    let text = "---\r\n# a comment\r\nid: 'bd-9'\r\ntitle: Two words\r\nparent: ~\r\nassignee:\r\n\
                blockers:\r\n  - bd-1\r\n  - \"bd-2\"\r\nlabels: solo\r\nextra: ignored\r\n---\r\n";
    let bead = parse_bead_file(text).expect("parses");
    assert_eq!(bead.id, "bd-9");
    assert_eq!(bead.title, "Two words");
    assert_eq!(bead.parent, None);
    assert_eq!(bead.assignee, None);
    assert_eq!(bead.blockers, ["bd-1", "bd-2"]);
    assert_eq!(bead.labels, ["solo"]);
    assert_eq!(bead.body, "");
}

#[test]
fn bead_file_errors() {
    assert!(parse_bead_file("id: bd-1\n").is_err());
    assert!(parse_bead_file("---\nid: bd-1\ntitle: x\n").is_err());
    assert!(parse_bead_file("---\ntitle: x\n---\n").is_err());
    assert!(parse_bead_file("---\nid: ../etc\n---\n").is_err());
    assert!(parse_bead_file("---\n  - orphan\nid: bd-1\n---\n").is_err());
    assert!(parse_bead_file("---\nno colon here\n---\n").is_err());
}

proptest! {
    #[test]
    fn parse_event_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_event(&bytes);
    }

    #[test]
    fn parse_event_never_panics_on_jsonish(s in r#"[\[\]{}":,a-z0-9 \\]{0,200}"#) {
        let _ = parse_event(s.as_bytes());
    }

    #[test]
    fn ready_and_bead_parsers_never_panic(s in "\\PC{0,300}") {
        let (rows, errors) = parse_ready(&s);
        prop_assert!(rows.len() + errors.len() <= s.lines().count());
        let _ = parse_bead_file(&s);
    }
}

/// A JSON object built from the keys and values the two parsers look at,
/// with the awkward cases: empty, null, wrong types, invalid names,
/// escapes, duplicates.
fn object_line() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "type", "id", "mount", "assignee", "name", "cwd", "data", "source", "ts",
    ]);
    let value = prop::sample::select(vec![
        r#""created""#,
        r#""completed""#,
        r#""claimed""#,
        r#""mount""#,
        r#""umount""#,
        r#""BeadClaimed""#,
        r#""teleported""#,
        r#""bd-a1b2""#,
        r#""myproj""#,
        r#""agent-1""#,
        r#""bd-\u0061""#,
        r#""a/b""#,
        r#"".hidden""#,
        r#""""#,
        "null",
        "7",
        "[]",
        r#"{"bead_id":"bd-1","mount":"m"}"#,
    ]);
    proptest::collection::vec((key, value), 0..7).prop_map(|kv| {
        let fields: Vec<String> = kv.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}", fields.join(","))
    })
}

proptest! {
    #[test]
    fn the_fast_path_agrees_with_the_general_parser(line in object_line()) {
        if let Some(fast) = parse_flat(line.as_bytes()) {
            prop_assert_eq!(Ok(fast), parse_value(&line), "{}", line);
        }
    }
}

#[test]
fn the_fast_path_takes_the_common_lines() {
    for line in [
        r#"{"type":"completed","id":"bd-a1b2","mount":"myproj"}"#,
        r#"{"type":"claimed","id":"bd-a1b2","mount":"myproj","assignee":"agent-1","ts":1}"#,
        r#"{"type":"mount","name":"myproj","cwd":"/src/myproj"}"#,
    ] {
        assert!(parse_flat(line.as_bytes()).is_some(), "{line}");
        assert_eq!(ev(line), parse_value(line));
    }
    // Errors and the older envelope go the general way.
    for line in [
        r#"{"type":"completed","id":"a/b","mount":"myproj"}"#,
        r#"{"type":"completed","id":7,"mount":"myproj"}"#,
        r#"{"type":"BeadClaimed","data":{"bead_id":"bd-1","mount":"m"}}"#,
    ] {
        assert!(parse_flat(line.as_bytes()).is_none(), "{line}");
    }
}
