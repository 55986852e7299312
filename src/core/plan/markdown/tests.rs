//! The markdown parser against files as the planning tool writes them and
//! as people edit them.

use super::*;

/// Writes a plan the way the planning tool does.
fn task_plan(goal: &str, steps: &[(&str, &str)]) -> String {
    let mut s = format!("# {goal}\n\n");
    for (title, description) in steps {
        s.push_str(&format!("- [ ] {title}\n"));
        for l in description.lines() {
            s.push_str(&format!("  {l}\n"));
        }
    }
    s
}

/// Edits a plan the way `task_complete(file, step)` does: the first
/// unchecked step whose title contains `step` is ticked, in place.
fn task_complete(text: &str, step: &str) -> String {
    let mut out = String::new();
    let mut done = false;
    for line in text.split_inclusive('\n') {
        if !done && line.starts_with("- [ ] ") && line.contains(step) {
            out.push_str(&line.replacen("- [ ]", "- [x]", 1));
            done = true;
        } else {
            out.push_str(line);
        }
    }
    assert!(done, "no unchecked step contains {step:?}");
    out
}

fn ok(text: &str) -> Plan {
    parse(text).unwrap_or_else(|e| panic!("{e}\n---\n{text}"))
}

fn ready(text: &str) -> Vec<String> {
    let p = ok(text);
    p.ready()
        .iter()
        .map(|&i| p.steps[i].label.clone())
        .collect()
}

/// Dependencies as step numbers, per step.
fn deps(p: &Plan) -> Vec<Vec<usize>> {
    p.steps
        .iter()
        .map(|s| s.deps.iter().map(|&d| d + 1).collect())
        .collect()
}

fn keys(p: &Plan) -> Vec<&str> {
    p.steps.iter().map(|s| s.key.as_str()).collect()
}

fn err(text: &str) -> PlanError {
    match parse(text) {
        Ok(p) => panic!("expected an error, got {p:?}"),
        Err(e) => e,
    }
}

#[test]
fn stock_plan_is_sequential() {
    let text = task_plan(
        "Add a login page",
        &[
            ("Design the form", "Fields: user, password.\nKeep it small."),
            ("Write the handler", "POST /login"),
            ("Write tests", ""),
        ],
    );
    let p = ok(&text);
    assert_eq!(p.goal, "Add a login page");
    assert_eq!(p.session, None);
    assert_eq!(deps(&p), vec![vec![], vec![1], vec![2]]);
    assert_eq!(
        p.steps[0].description,
        "Fields: user, password.\nKeep it small."
    );
    assert_eq!(p.steps[1].description, "POST /login");
    assert_eq!(p.steps[2].description, "");
    assert_eq!(
        p.steps.iter().map(|s| s.line).collect::<Vec<_>>(),
        vec![3, 6, 8]
    );
    assert_eq!(p.steps[2].label, "s3");
    assert_eq!(p.steps[2].num, 3);

    assert_eq!(ready(&text), ["s1"]);
    let text = task_complete(&text, "Design");
    assert_eq!(ready(&text), ["s2"]);
    let text = task_complete(&text, "handler");
    assert_eq!(ready(&text), ["s3"]);
    let text = task_complete(&text, "tests");
    assert!(ready(&text).is_empty());
    assert!(ok(&text).all_checked());
}

#[test]
fn annotated_dag_has_parallel_branches() {
    let text = task_plan(
        "Ship",
        &[
            ("Design schema (after: none)", ""),
            ("Write migrations (after: 1)", ""),
            ("Write API (after: s1)", "REST"),
            ("Integrate (after: q2, 3)", ""),
            ("Release", ""),
        ],
    );
    let p = ok(&text);
    assert_eq!(
        deps(&p),
        vec![vec![], vec![1], vec![1], vec![2, 3], vec![4]]
    );
    assert_eq!(p.steps[3].title, "Integrate");
    assert_eq!(ready(&text), ["s1"]);
    let text = task_complete(&text, "schema");
    assert_eq!(ready(&text), ["s2", "s3"]);
    let text = task_complete(&text, "API");
    assert_eq!(ready(&text), ["s2"]);
    let text = task_complete(&text, "migrations");
    assert_eq!(ready(&text), ["s4"]);
}

#[test]
fn after_none_makes_a_root_mid_plan() {
    let text = task_plan(
        "G",
        &[("A", ""), ("B", ""), ("C (after: none)", ""), ("D", "")],
    );
    let p = ok(&text);
    assert_eq!(deps(&p), vec![vec![], vec![1], vec![], vec![3]]);
    assert_eq!(ready(&text), ["s1", "s3"]);
}

#[test]
fn reference_forms() {
    let cases = [
        ("(after: 1, 2)", vec![1, 2]),
        ("(after: s1 s2)", vec![1, 2]),
        ("(AFTER: Q2,S1)", vec![1, 2]),
        ("(after:2,,1 ,)", vec![1, 2]),
        ("( After : 2 )", vec![2]),
        ("(after: 1, 1, s1)", vec![1]),
        ("(after: NONE)", vec![]),
    ];
    for (ann, want) in cases {
        let text = task_plan("G", &[("A", ""), ("B", ""), (&format!("C {ann}"), "")]);
        let p = ok(&text);
        assert_eq!(deps(&p)[2], want, "{ann}");
        assert_eq!(p.steps[2].title, "C", "{ann}");
    }
}

#[test]
fn after_description_lines() {
    let text = "# G\n\n- [ ] A\n- [ ] B\n  after: none\n  Start anywhere.\n- [ ] C\n  Needs both.\n  after: 1\n  (after: s2)\n- [ ] D\n  after: lunch, call Bob\n";
    let p = ok(text);
    assert_eq!(deps(&p), vec![vec![], vec![], vec![1, 2], vec![3]]);
    assert_eq!(p.steps[1].description, "Start anywhere.");
    assert_eq!(p.steps[2].description, "Needs both.");
    // a sentence that only looks like an annotation stays description
    assert_eq!(p.steps[3].description, "after: lunch, call Bob");
    assert_eq!(ready(text), ["s1", "s2"]);
}

#[test]
fn title_and_description_annotations_combine() {
    let text = "# G\n- [ ] A\n- [ ] B (after: none)\n- [ ] C (after: 1)\n  after: 2\n";
    assert_eq!(deps(&ok(text)), vec![vec![], vec![], vec![1, 2]]);
}

#[test]
fn duplicate_titles_get_ordinals() {
    let text = task_plan(
        "G",
        &[
            ("Run tests", ""),
            ("Fix", ""),
            ("Run  tests ", ""),
            ("Run tests (after: 1)", ""),
        ],
    );
    let p = ok(&text);
    assert_eq!(keys(&p), ["Run tests", "Fix", "Run tests#2", "Run tests#3"]);
}

#[test]
fn title_edit_changes_key_insertion_keeps_others() {
    let before = ok(&task_plan("G", &[("A", ""), ("B", ""), ("C", "")]));
    let edited = ok(&task_plan("G", &[("A", ""), ("B, better", ""), ("C", "")]));
    assert_eq!(keys(&before), ["A", "B", "C"]);
    assert_eq!(keys(&edited), ["A", "B, better", "C"]);
    let inserted = ok(&task_plan(
        "G",
        &[("A", ""), ("A2", ""), ("B", ""), ("C", "")],
    ));
    assert_eq!(keys(&inserted), ["A", "A2", "B", "C"]);
    assert_eq!(inserted.steps[2].label, "s3", "numbers shift, keys do not");
}

#[test]
fn markers_and_checkboxes() {
    let text =
        "# G\n\n- [x] a\n* [X] b\n+ [ ] c\n1. [ ] d\n2) [x] e\n10. [ ] f\n-  [ ]   g  \n- [ ]\n";
    let p = ok(text);
    let got: Vec<(&str, StepStatus)> = p
        .steps
        .iter()
        .map(|s| (s.title.as_str(), s.status))
        .collect();
    use StepStatus::*;
    assert_eq!(
        got,
        [
            ("a", Checked),
            ("b", Checked),
            ("c", Open),
            ("d", Open),
            ("e", Checked),
            ("f", Open),
            ("g", Open),
            ("", Open)
        ]
    );
}

#[test]
fn not_items() {
    for line in [
        "-[ ] a",
        "- [ ]a",
        "- [y] a",
        "- a",
        "-- [ ] a",
        ". [ ] a",
        "1 [ ] a",
        "a. [ ] a",
        "    - [ ] code",
        "\t- [ ] code",
        "- [] a",
        "1234567890. [ ] a",
    ] {
        let p = ok(&format!("# G\n\n{line}\n"));
        assert!(p.steps.is_empty(), "{line:?} made a step");
    }
    assert_eq!(ok("# G\n   - [ ] three spaces\n").steps.len(), 1);
}

#[test]
fn title_whitespace_is_collapsed() {
    let p = ok("- [ ]   Write\t the   docs   (after: none)  \n");
    assert_eq!(p.steps[0].title, "Write the docs");
    assert_eq!(p.steps[0].key, "Write the docs");
}

#[test]
fn crlf_reads_like_lf() {
    let lf = task_plan(
        "G",
        &[
            ("A", "desc a"),
            ("B (after: none)", "x\ny"),
            ("C", "after: 1"),
        ],
    );
    let crlf = lf.replace('\n', "\r\n");
    assert_eq!(ok(&lf), ok(&crlf));
    assert_eq!(ok(&crlf).steps[1].description, "x\ny");
}

#[test]
fn session_routing() {
    let cases: [(&str, Option<&str>, &str); 8] = [
        (
            "<!-- session: abc-1 -->\n# G\n- [ ] a\n",
            Some("abc-1"),
            "G",
        ),
        (
            "# G\n- [ ] a\n  <!-- session: mid -->\n  desc\n",
            Some("mid"),
            "G",
        ),
        (
            "# G <!-- session: inline -->\n- [ ] a\n",
            Some("inline"),
            "G <!-- session: inline -->",
        ),
        (
            "---\nsession: fm\nother: 1\n---\n# G\n- [ ] a\n",
            Some("fm"),
            "G",
        ),
        (
            "---\nsession: \"quoted\"\n---\n- [ ] a\n",
            Some("quoted"),
            "",
        ),
        ("---\nsession: 'single'\n...\n- [ ] a\n", Some("single"), ""),
        (
            "---\ntitle: x\n---\n# G\n- [ ] a\n<!-- session: later -->\n",
            Some("later"),
            "G",
        ),
        ("<!-- session: -->\n# G\n- [ ] a\n", None, "G"),
    ];
    for (text, session, goal) in cases {
        let p = ok(text);
        assert_eq!(p.session.as_deref(), session, "{text:?}");
        assert_eq!(p.goal, goal, "{text:?}");
        assert_eq!(p.steps.len(), 1, "{text:?}");
        assert!(!p.steps[0].description.contains("session"), "{text:?}");
    }
}

#[test]
fn front_matter_is_not_prose_and_first_session_wins() {
    let text = "---\nsession: first\n# not a goal\n- [ ] not a step\n---\n<!-- session: second -->\n# Goal\n- [ ] real\n";
    let p = ok(text);
    assert_eq!(p.session.as_deref(), Some("first"));
    assert_eq!(p.goal, "Goal");
    assert_eq!(keys(&p), ["real"]);
    assert_eq!(p.steps[0].line, 8);
    // an unclosed block is not front matter
    let p = ok("---\nsession: x\n- [ ] a\n");
    assert_eq!(p.session, None);
    assert_eq!(p.steps.len(), 1);
}

#[test]
fn goal_is_the_first_h1() {
    assert_eq!(ok("- [ ] a\n").goal, "");
    assert_eq!(ok("## Sub\n# First\n# Second\n").goal, "First");
    assert_eq!(ok("\u{feff}# Bom\n").goal, "Bom");
}

#[test]
fn prose_ends_a_description_blank_lines_do_not() {
    let text = "# G\n\n- [ ] A\n  one\n\n  two\n\n\nSome prose.\n  indented prose\n- [ ] B\n  b\n\n## Notes\n  more\n";
    let p = ok(text);
    assert_eq!(p.steps[0].description, "one\n\ntwo");
    assert_eq!(p.steps[1].description, "b");
}

#[test]
fn description_keeps_nested_indentation() {
    let p = ok("- [ ] A\n  Steps:\n    - [ ] nested, not a step\n\tTabbed\n");
    assert_eq!(p.steps.len(), 1);
    assert_eq!(
        p.steps[0].description,
        "Steps:\n  - [ ] nested, not a step\nTabbed"
    );
}

#[test]
fn fenced_code_is_prose() {
    let text =
        "# G\n\n```md\n- [ ] example only\n# Not the goal\n```\n- [ ] real\n~~~\n- [ ] x\n~~~\n";
    let p = ok(text);
    assert_eq!(keys(&p), ["real"]);
    assert_eq!(p.goal, "G");
}

#[test]
fn missing_reference_is_an_error_at_its_line() {
    let text = task_plan(
        "G",
        &[
            ("A", ""),
            ("Build", ""),
            ("Write tests (after: 7)", ""),
            ("D", ""),
            ("E", ""),
        ],
    );
    let e = err(&text);
    assert_eq!(e.line, 5);
    assert_eq!(
        e.message,
        "step 3 \"Write tests\" depends on step 7, which does not exist (the plan has 5 steps)"
    );
    let e = err("# G\n- [ ] A\n- [ ] B\n  text\n  after: s0\n");
    assert_eq!(e.line, 5);
    assert!(
        e.message
            .contains("depends on step 0, which does not exist (the plan has 2 steps)"),
        "{}",
        e.message
    );
}

#[test]
fn cycle_is_an_error_at_a_step_on_it() {
    let text = "# G\n\n- [ ] A\n- [ ] B (after: 4)\n- [ ] C (after: 2)\n- [ ] D\n";
    let e = err(text);
    assert_eq!(e.line, 4);
    assert!(
        e.message.starts_with("dependency cycle: s2 → s4 → s3 → s2"),
        "{}",
        e.message
    );
    // the implicit "previous step" edge takes part in cycles too
    let e = err("- [ ] A (after: 2)\n- [ ] B\n");
    assert!(
        e.message.starts_with("dependency cycle: s1 → s2 → s1"),
        "{}",
        e.message
    );
    assert_eq!(e.line, 1);
}

#[test]
fn self_reference_is_an_error() {
    let e = err("# G\n- [ ] A\n- [ ] Loop (after: s2)\n");
    assert_eq!(e.line, 3);
    assert_eq!(e.message, "step 2 \"Loop\" depends on itself");
}

#[test]
fn unreadable_title_annotation_is_an_error() {
    for ann in [
        "(after: foo)",
        "(after: )",
        "(after: none, 2)",
        "(after: s)",
        "(after: 99999999999999999999999)",
    ] {
        let e = err(&format!("- [ ] A\n- [ ] B {ann}\n"));
        assert_eq!(e.line, 2, "{ann}");
        assert!(
            e.message.starts_with("step 2: cannot read"),
            "{ann}: {}",
            e.message
        );
    }
    // parentheses that are not an annotation are part of the title
    assert_eq!(
        ok("- [ ] Fix bug (the big one)\n").steps[0].title,
        "Fix bug (the big one)"
    );
}

#[test]
fn labels_are_numbered() {
    for n in [0, 1, 9, 10, 21, 200, 1_000_000, usize::MAX] {
        assert_eq!(numbered('s', n), format!("s{n}"));
    }
}

#[test]
fn duplicates_are_counted_alike_in_small_and_large_plans() {
    for n in [10, 100] {
        let steps: Vec<(String, &str)> = (0..n).map(|i| (format!("T{}", i % 7), "")).collect();
        let refs: Vec<(&str, &str)> = steps.iter().map(|(t, d)| (t.as_str(), *d)).collect();
        let p = ok(&task_plan("G", &refs));
        for (i, s) in p.steps.iter().enumerate() {
            let k = i / 7 + 1;
            let want = if k == 1 {
                format!("T{}", i % 7)
            } else {
                format!("T{}#{k}", i % 7)
            };
            assert_eq!(s.key, want, "n {n}, step {i}");
        }
    }
}

#[test]
fn forward_references_are_fine() {
    let text = "- [ ] Deploy (after: 2)\n- [ ] Build (after: none)\n";
    let p = ok(text);
    assert_eq!(deps(&p), vec![vec![2], vec![]]);
    assert_eq!(ready(text), ["s2"]);
    assert_eq!(p.topo_order(), vec![1, 0]);
}
