//! Tests for issues.jsonl parsing and the `bd ready` rule, with lines shaped
//! like a real beads export.

use super::*;
use proptest::prelude::*;

/// 2025-01-15T10:00:00Z
const NOW: i64 = 1_736_935_200;

/// A real-shaped issue line. `deps` is a JSON array body.
fn issue(id: &str, status: &str, deps: &str) -> String {
    format!(
        r#"{{"id":"{id}","title":"Title of {id}","description":"x","status":"{status}","priority":2,"issue_type":"task","created_at":"2025-01-10T09:00:00Z","updated_at":"2025-01-10T09:00:00Z","dependencies":[{deps}]}}"#
    )
}

fn dep(issue_id: &str, on: &str, kind: &str) -> String {
    format!(
        r#"{{"issue_id":"{issue_id}","depends_on_id":"{on}","type":"{kind}","created_at":"2025-01-10T09:00:00Z","created_by":"u"}}"#
    )
}

/// Ids of the ready issues of `lines`, asserting the file parsed cleanly.
fn ready_ids(lines: &[String]) -> Vec<String> {
    let (issues, errors) = parse_issues(&lines.join("\n"));
    assert!(errors.is_empty(), "{errors:?}");
    ready(&issues, NOW)
        .into_iter()
        .map(|i| issues[i].id.clone())
        .collect()
}

#[test]
fn parses_fields_and_ignores_unknown_ones() {
    let line = r#"{"id":"bd-a1b2","title":"Fix it","status":"open","issue_type":"bug","assignee":"agent-1","pinned":false,"ephemeral":true,"defer_until":"2025-01-16","labels":["x"],"dependencies":[{"depends_on_id":"bd-0","type":"related"}],"extra":{"deep":[1,2]}}"#;
    let (issues, errors) = parse_issues(line);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        issues,
        vec![Issue {
            id: "bd-a1b2".into(),
            title: "Fix it".into(),
            status: "open".into(),
            issue_type: "bug".into(),
            assignee: Some("agent-1".into()),
            pinned: false,
            ephemeral: true,
            defer_until: Some(NOW + 14 * 3600),
            dependencies: vec![Dependency {
                issue_id: "bd-a1b2".into(),
                depends_on_id: "bd-0".into(),
                kind: DepKind::Other("related".into()),
            }],
            line: 1,
        }]
    );
}

#[test]
fn nulls_are_absent_values() {
    let line = r#"{"id":"bd-1","title":null,"status":"open","assignee":null,"pinned":null,"defer_until":null,"dependencies":null}"#;
    let (issues, errors) = parse_issues(line);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].assignee, None);
    assert_eq!(ready(&issues, NOW), [0]);
}

#[test]
fn other_record_types_are_skipped_silently() {
    let text = [
        r#"{"_type":"config","key":"prefix","value":"bd"}"#.to_string(),
        r#"{"_type":"memory","id":7,"status":[]}"#.to_string(),
        issue("bd-1", "open", ""),
        r#"{"_type":"issue","id":"bd-2","status":"open"}"#.to_string(),
    ]
    .join("\n");
    let (issues, errors) = parse_issues(&text);
    assert!(errors.is_empty(), "{errors:?}");
    let ids: Vec<&str> = issues.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["bd-1", "bd-2"]);
    assert_eq!(issues[1].line, 4);
}

#[test]
fn malformed_lines_are_reported_with_line_numbers() {
    let text = [
        issue("bd-1", "open", ""),
        "{not json".to_string(),
        String::new(),
        r#"{"title":"no id","status":"open"}"#.to_string(),
        r#"{"id":"bd-3","status":"open","pinned":"yes"}"#.to_string(),
        r#"{"id":"../etc","status":"open"}"#.to_string(),
        "[".repeat(100_000),
        issue("bd-8", "open", ""),
    ]
    .join("\n");
    let (issues, errors) = parse_issues(&text);
    let ids: Vec<&str> = issues.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["bd-1", "bd-8"]);
    let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [2, 4, 5, 6, 7]);
    assert_eq!(issues[1].line, 8);
}

#[test]
fn duplicate_ids_later_line_wins_in_place() {
    let text = [
        issue("bd-1", "open", ""),
        issue("bd-2", "open", ""),
        issue("bd-1", "closed", ""),
    ]
    .join("\n");
    let (issues, errors) = parse_issues(&text);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].line, 3);
    assert_eq!(issues.len(), 2);
    assert_eq!(
        (issues[0].id.as_str(), issues[0].status.as_str()),
        ("bd-1", "closed")
    );
    assert_eq!(ready(&issues, NOW), [1]);
}

#[test]
fn missing_issue_id_means_the_containing_issue() {
    let line = r#"{"id":"bd-2","status":"open","dependencies":[{"depends_on_id":"bd-1","type":"blocks"}]}"#;
    let lines = [issue("bd-1", "open", ""), line.to_string()];
    assert_eq!(ready_ids(&lines), ["bd-1"]);
}

#[test]
fn missing_dep_type_blocks_and_missing_target_is_reported() {
    let line = r#"{"id":"bd-2","status":"open","dependencies":[{"issue_id":"bd-2","depends_on_id":"bd-1"},{"issue_id":"bd-2","type":"blocks"}]}"#;
    let (issues, errors) = parse_issues(&[issue("bd-1", "open", ""), line.to_string()].join("\n"));
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].line, 2);
    assert_eq!(issues[1].dependencies[0].kind, DepKind::Blocks);
    assert_eq!(ready(&issues, NOW), [0]);
}

#[test]
fn blocks_and_conditional_blocks() {
    for kind in ["blocks", "conditional-blocks"] {
        let lines = [
            issue("bd-1", "open", ""),
            issue("bd-2", "open", &dep("bd-2", "bd-1", kind)),
            issue("bd-3", "closed", ""),
            issue("bd-4", "open", &dep("bd-4", "bd-3", kind)),
            issue("bd-5", "pinned", ""),
            issue("bd-6", "open", &dep("bd-6", "bd-5", kind)),
            issue("bd-7", "in_progress", ""),
            issue("bd-8", "open", &dep("bd-8", "bd-7", kind)),
        ];
        assert_eq!(ready_ids(&lines), ["bd-1", "bd-4", "bd-6"], "{kind}");
    }
}

#[test]
fn dependency_listed_on_the_blockers_line_still_counts() {
    let lines = [
        issue("bd-1", "open", &dep("bd-2", "bd-1", "blocks")),
        issue("bd-2", "open", ""),
    ];
    assert_eq!(ready_ids(&lines), ["bd-1"]);
}

#[test]
fn dependency_on_unknown_or_tombstoned_issue_does_not_block() {
    let lines = [
        issue("bd-1", "open", &dep("bd-1", "bd-gone", "blocks")),
        issue("bd-2", "tombstone", ""),
        issue("bd-3", "open", &dep("bd-3", "bd-2", "blocks")),
    ];
    assert_eq!(ready_ids(&lines), ["bd-1", "bd-3"]);
}

#[test]
fn blocked_grandparent_blocks_grandchild() {
    let lines = [
        issue("bd-blocker", "in_progress", ""),
        issue("bd-gp", "open", &dep("bd-gp", "bd-blocker", "blocks")),
        issue("bd-p", "open", &dep("bd-p", "bd-gp", "parent-child")),
        issue("bd-c", "open", &dep("bd-c", "bd-p", "parent-child")),
        issue(
            "bd-free",
            "open",
            &dep("bd-free", "bd-other", "parent-child"),
        ),
        issue("bd-other", "open", ""),
    ];
    assert_eq!(ready_ids(&lines), ["bd-free", "bd-other"]);
    // Closing the blocker frees the whole chain.
    let mut lines = lines;
    lines[0] = issue("bd-blocker", "closed", "");
    assert_eq!(
        ready_ids(&lines),
        ["bd-gp", "bd-p", "bd-c", "bd-free", "bd-other"]
    );
}

#[test]
fn parent_cycles_terminate_and_stay_correct() {
    // a <-> b are each other's parents; b is also the child of blocked c.
    let lines = [
        issue("bd-a", "open", &dep("bd-a", "bd-b", "parent-child")),
        issue(
            "bd-b",
            "open",
            &[
                dep("bd-b", "bd-a", "parent-child"),
                dep("bd-b", "bd-c", "parent-child"),
            ]
            .join(","),
        ),
        issue("bd-c", "open", &dep("bd-c", "bd-x", "blocks")),
        issue("bd-x", "open", ""),
        issue("bd-d", "open", &dep("bd-d", "bd-e", "parent-child")),
        issue("bd-e", "open", &dep("bd-e", "bd-d", "parent-child")),
    ];
    assert_eq!(ready_ids(&lines), ["bd-x", "bd-d", "bd-e"]);
}

#[test]
fn waits_for_open_and_closed_children() {
    let waiting = issue("bd-w", "open", &dep("bd-w", "bd-t", "waits-for"));
    let open = [
        issue("bd-t", "open", ""),
        issue("bd-k1", "closed", &dep("bd-k1", "bd-t", "parent-child")),
        issue(
            "bd-k2",
            "in_progress",
            &dep("bd-k2", "bd-t", "parent-child"),
        ),
        waiting.clone(),
    ];
    assert_eq!(ready_ids(&open), ["bd-t"]);
    let closed = [
        issue("bd-t", "open", ""),
        issue("bd-k1", "closed", &dep("bd-k1", "bd-t", "parent-child")),
        issue("bd-k2", "closed", &dep("bd-k2", "bd-t", "parent-child")),
        waiting.clone(),
    ];
    assert_eq!(ready_ids(&closed), ["bd-t", "bd-w"]);
    // A target with no children at all does not hold anyone.
    assert_eq!(
        ready_ids(&[issue("bd-t", "open", ""), waiting]),
        ["bd-t", "bd-w"]
    );
}

#[test]
fn related_and_other_types_never_block() {
    let lines = [
        issue("bd-1", "open", ""),
        issue(
            "bd-2",
            "open",
            &[
                dep("bd-2", "bd-1", "related"),
                dep("bd-2", "bd-1", "discovered-from"),
            ]
            .join(","),
        ),
    ];
    assert_eq!(ready_ids(&lines), ["bd-1", "bd-2"]);
}

#[test]
fn deferrals_past_future_and_unparseable() {
    let with_defer = |id: &str, when: &str| {
        format!(r#"{{"id":"{id}","title":"t","status":"open","defer_until":"{when}"}}"#)
    };
    let text = [
        with_defer("bd-past", "2025-01-15T09:59:59Z"),
        with_defer("bd-now", "2025-01-15T12:00:00+02:00"),
        with_defer("bd-future", "2025-01-15T10:00:00.5Z"),
        with_defer("bd-tomorrow", "2025-01-16"),
        with_defer("bd-empty", ""),
        with_defer("bd-typo", "next tuesday"),
    ]
    .join("\n");
    let (issues, errors) = parse_issues(&text);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].line, 6);
    assert!(errors[0].message.contains("next tuesday"));
    let ids: Vec<&str> = ready(&issues, NOW)
        .into_iter()
        .map(|i| issues[i].id.as_str())
        .collect();
    assert_eq!(ids, ["bd-past", "bd-now", "bd-empty", "bd-typo"]);
    // A day later everything is due.
    assert_eq!(ready(&issues, NOW + 86_400).len(), 6);
}

#[test]
fn excluded_types_statuses_pinned_ephemeral() {
    let mut lines: Vec<String> = EXCLUDED_TYPES
        .iter()
        .map(|t| format!(r#"{{"id":"bd-{t}","status":"open","issue_type":"{t}"}}"#))
        .collect();
    for status in [
        "in_progress",
        "blocked",
        "deferred",
        "closed",
        "pinned",
        "hooked",
    ] {
        lines.push(format!(r#"{{"id":"bd-{status}","status":"{status}"}}"#));
    }
    lines.push(r#"{"id":"bd-pinned-flag","status":"open","pinned":true}"#.into());
    lines.push(r#"{"id":"bd-eph","status":"open","ephemeral":true}"#.into());
    lines.push(r#"{"id":"bd-feature","status":"open","issue_type":"feature"}"#.into());
    lines.push(r#"{"id":"bd-untyped","status":"open"}"#.into());
    assert_eq!(ready_ids(&lines), ["bd-feature", "bd-untyped"]);
}

#[test]
fn ready_lines_and_json() {
    let text = [
        r#"{"id":"bd-1","title":"Fix\tthe\nparser","status":"open","assignee":"a1"}"#,
        r#"{"id":"bd-2","title":"Closed","status":"closed"}"#,
        r#"{"id":"bd-3","title":"Write \"docs\"","status":"open"}"#,
    ]
    .join("\n");
    let (issues, _) = parse_issues(&text);
    let ready = ready(&issues, NOW);
    assert_eq!(
        ready_lines(&issues, &ready),
        "bd-1\tFix the parser\nbd-3\tWrite \"docs\"\n"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ready_json(&issues, &ready)).expect("valid JSON");
    assert_eq!(
        json,
        serde_json::json!([
            {"id":"bd-1","title":"Fix\tthe\nparser","status":"open","issue_type":"","assignee":"a1","line":1},
            {"id":"bd-3","title":"Write \"docs\"","status":"open","issue_type":"","assignee":null,"line":3}
        ])
    );
    assert_eq!(ready_json(&issues, &[]), "[]\n");
}

/// 10,000 issues in chains of ten under epics, with blocks edges between
/// neighbours: the shape of a big real backlog.
fn big_file() -> String {
    let mut out = String::new();
    for i in 0..10_000 {
        let id = format!("bd-{i}");
        let deps = if i % 10 == 0 {
            String::new()
        } else if i % 10 == 1 {
            dep(&id, &format!("bd-{}", i - 1), "parent-child")
        } else {
            [
                dep(&id, &format!("bd-{}", i - 1), "blocks"),
                dep(&id, &format!("bd-{}", i - i % 10), "parent-child"),
            ]
            .join(",")
        };
        let status = if i % 10 < 3 { "closed" } else { "open" };
        out.push_str(&issue(&id, status, &deps));
        out.push('\n');
    }
    out
}

#[test]
fn ten_thousand_issues() {
    let text = big_file();
    let (issues, errors) = parse_issues(&text);
    assert!(errors.is_empty());
    assert_eq!(issues.len(), 10_000);
    // Per chain of ten: 0..=2 closed; 3 is unblocked (2 is closed), 4..=9
    // wait on their predecessor. One ready issue per chain.
    let ready = ready(&issues, NOW);
    assert_eq!(ready.len(), 1_000);
    assert!(ready.iter().all(|&i| i % 10 == 3));
}

/// Release-mode timing: `cargo test --release -- --ignored ten_thousand`.
#[test]
#[ignore = "timing; meaningful only with --release"]
fn ten_thousand_issues_parse_and_ready_under_20ms() {
    let text = big_file();
    let mut best = std::time::Duration::MAX;
    for _ in 0..5 {
        let start = std::time::Instant::now();
        let (issues, _) = parse_issues(&text);
        let ready = ready(&issues, NOW);
        best = best.min(start.elapsed());
        assert_eq!(ready.len(), 1_000);
    }
    eprintln!(
        "10k issues ({} bytes): parse + ready in {best:?}",
        text.len()
    );
    assert!(best < std::time::Duration::from_millis(20), "{best:?}");
}

proptest! {
    #[test]
    fn parse_issues_never_panics(s in "\\PC{0,400}") {
        let (issues, errors) = parse_issues(&s);
        prop_assert!(issues.len() + errors.len() <= s.lines().count() * 8 + 1);
        let r = ready(&issues, NOW);
        prop_assert!(r.iter().all(|&i| i < issues.len()));
    }

    #[test]
    fn parse_issues_never_panics_on_jsonish(s in r#"[\[\]{}":,a-z_0-9 \n]{0,300}"#) {
        let (issues, _) = parse_issues(&s);
        let _ = ready(&issues, NOW);
    }

    #[test]
    fn parse_issues_never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let s = String::from_utf8_lossy(&bytes);
        let (issues, _) = parse_issues(&s);
        let _ = ready_lines(&issues, &ready(&issues, NOW));
    }
}
