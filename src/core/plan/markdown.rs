//! The markdown checklist parser: reads a plan the way the planning tool
//! writes it and `task_complete` edits it, tolerating what people do to such
//! files by hand (other list markers, `[X]`, CRLF, prose, front matter).
//!
//! Reading rules the engine relies on:
//! - a step without `(after: …)` / `after:` waits for the step before it,
//!   because the tool writes steps in topological order and asks agents to
//!   follow them in sequence;
//! - a step's key is its normalised title (`#k` for the k-th duplicate), so
//!   inserting a step leaves the other keys alone and editing a title makes a
//!   new step.

use std::collections::HashMap;

use super::graph::check_target;
use super::types::{Plan, PlanError, Step, StepStatus};

/// Parses a markdown plan and validates its dependency graph.
///
/// One pass over the lines, borrowed from `text` (no line list is built);
/// per step, the title, its key, label and description are the only
/// allocations.
pub fn parse(text: &str) -> Result<Plan, PlanError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines = || text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));

    let mut session = None;
    let mut skip = 0;
    if let Some((end, fm_session)) = front_matter(lines()) {
        skip = end + 1;
        session = fm_session;
    }

    let mut goal: Option<String> = None;
    // A step is at least `- [ ] \n`: a bound that avoids regrowing.
    let mut drafts: Vec<Draft> = Vec::with_capacity((text.len() / 64).min(1024));
    // Whether indented lines still belong to the last step.
    let mut in_step = false;
    let mut fence: Option<&str> = None;

    for (idx, line) in lines().enumerate().skip(skip) {
        let lineno = idx + 1;
        let trimmed = line.trim();
        if let Some(comment) = whole_comment(trimmed) {
            if session.is_none() {
                session = session_from_comment(comment);
            }
            continue; // invisible when rendered: neither prose nor description
        }
        if session.is_none() {
            if let Some(c) = embedded_comment(line) {
                session = session_from_comment(c);
            }
        }
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
            continue;
        }
        if trimmed.is_empty() {
            if let Some(d) = drafts.last_mut().filter(|_| in_step) {
                d.blank_run += 1;
            }
            continue;
        }
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        if in_step && indent > 0 {
            if let Some(d) = drafts.last_mut() {
                d.add_description(line, indent, lineno);
            }
            continue;
        }
        // Up to three spaces still make a list item or heading in markdown;
        // more, outside a step, is an indented code block: prose.
        let body = &line[indent..];
        let item = if line.starts_with('\t') || indent > 3 {
            None
        } else {
            parse_item(body)
        };
        in_step = false;
        if let Some((status, rest)) = item {
            drafts.push(Draft::new(drafts.len() + 1, lineno, status, rest)?);
            in_step = true;
        } else if indent <= 3 && (body.starts_with("```") || body.starts_with("~~~")) {
            fence = Some(&body[..3]);
        } else if let Some(heading) = body.strip_prefix("# ").filter(|_| indent <= 3) {
            goal.get_or_insert_with(|| heading.trim().to_string());
        }
    }

    let plan = Plan {
        goal: goal.unwrap_or_default(),
        session,
        steps: resolve(drafts)?,
    };
    plan.validate()?;
    Ok(plan)
}

/// A step as read, before its references are resolved.
struct Draft {
    num: usize,
    line: usize,
    status: StepStatus,
    title: String,
    /// Description lines joined with `\n`.
    description: String,
    /// Blank lines seen since the last description line: kept only if more
    /// description follows, so a step's description never ends with blanks.
    blank_run: usize,
    /// Indentation of the first description line, removed from all of them.
    desc_indent: Option<usize>,
    /// Whether a description line was seen (the first may be empty text).
    has_description: bool,
    /// `None`: no annotation, so the step waits for the one before it.
    /// `Some`: the annotated references as (step number, line written on).
    refs: Option<Vec<(usize, usize)>>,
}

impl Draft {
    fn new(num: usize, line: usize, status: StepStatus, rest: &str) -> Result<Self, PlanError> {
        let (title, refs) = match split_annotation(rest) {
            Some((title, list)) => {
                let refs = parse_refs(list).map_err(|bad| PlanError {
                    line,
                    message: format!(
                        "step {num}: cannot read \"(after: {})\": {bad}",
                        list.trim()
                    ),
                })?;
                (title, Some(refs.into_iter().map(|n| (n, line)).collect()))
            }
            None => (rest, None),
        };
        Ok(Draft {
            num,
            line,
            status,
            title: collapse_whitespace(title),
            description: String::new(),
            blank_run: 0,
            desc_indent: None,
            has_description: false,
            refs,
        })
    }

    fn add_description(&mut self, line: &str, indent: usize, lineno: usize) {
        if let Some(refs) = description_refs(line.trim()) {
            self.refs
                .get_or_insert_with(Vec::new)
                .extend(refs.into_iter().map(|n| (n, lineno)));
            return;
        }
        let strip = *self.desc_indent.get_or_insert(indent);
        let first = self.description.is_empty() && !self.has_description;
        if !first {
            // The newline ending the previous line, and the blank lines kept
            // because more description followed them.
            for _ in 0..=self.blank_run {
                self.description.push('\n');
            }
        }
        self.has_description = true;
        self.blank_run = 0;
        let cut = line
            .char_indices()
            .take(strip)
            .take_while(|(_, c)| *c == ' ' || *c == '\t')
            .count();
        self.description.push_str(line[cut..].trim_end());
    }
}

/// Turns drafts into steps: keys, default sequential dependencies, and
/// reference checks at the line each reference was written on.
fn resolve(drafts: Vec<Draft>) -> Result<Vec<Step>, PlanError> {
    let ordinals = duplicate_ordinals(&drafts);
    let mut steps = Vec::with_capacity(drafts.len());
    let mut refs = Vec::with_capacity(drafts.len());
    for (d, ordinal) in drafts.into_iter().zip(ordinals) {
        refs.push(d.refs);
        let key = match ordinal {
            1 => d.title.clone(),
            k => format!("{}#{k}", d.title),
        };
        steps.push(Step {
            num: d.num,
            key,
            label: numbered('s', d.num),
            title: d.title,
            description: d.description,
            status: d.status,
            deps: Vec::new(),
            line: d.line,
        });
    }
    for (i, r) in refs.into_iter().enumerate() {
        let mut deps = match r {
            None => i.checked_sub(1).into_iter().collect(),
            Some(list) => {
                let mut deps = Vec::with_capacity(list.len());
                for (num, line) in list {
                    let target = num.wrapping_sub(1);
                    check_target(&steps, i, target, line)?;
                    deps.push(target);
                }
                deps
            }
        };
        deps.sort_unstable();
        deps.dedup();
        steps[i].deps = deps;
    }
    Ok(steps)
}

/// For each draft, which occurrence of its title it is (1 for the first).
/// Titles are compared directly in small plans, where that beats hashing
/// them; a map counts them in large ones.
fn duplicate_ordinals(drafts: &[Draft]) -> Vec<usize> {
    if drafts.len() <= 64 {
        return drafts
            .iter()
            .enumerate()
            .map(|(i, d)| 1 + drafts[..i].iter().filter(|e| e.title == d.title).count())
            .collect();
    }
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(drafts.len());
    drafts
        .iter()
        .map(|d| {
            let count = seen.entry(d.title.as_str()).or_insert(0);
            *count += 1;
            *count
        })
        .collect()
}

/// `s12`: a prefix and a number, without the formatting machinery.
pub(super) fn numbered(prefix: char, n: usize) -> String {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut out = String::with_capacity(1 + digits.len() - at);
    out.push(prefix);
    // ASCII digits only.
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or("0"));
    out
}

/// Trimmed, with every run of whitespace one space; allocates once.
fn collapse_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `- [ ] title`, `* [x] title`, `+ [X] title`, `1. [ ] title`, `2) [ ] title`.
fn parse_item(s: &str) -> Option<(StepStatus, &str)> {
    let rest = match s.strip_prefix(['-', '*', '+']) {
        Some(r) => r,
        None => {
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 || digits > 9 {
                return None;
            }
            s[digits..].strip_prefix(['.', ')'])?
        }
    };
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let rest = rest.trim_start_matches([' ', '\t']);
    let status = match rest.get(..3)? {
        "[ ]" => StepStatus::Open,
        "[x]" | "[X]" => StepStatus::Checked,
        _ => return None,
    };
    let after = &rest[3..];
    if !after.is_empty() && !after.starts_with([' ', '\t']) {
        return None;
    }
    Some((status, after))
}

/// Splits `title (after: 1, s3)` into the title and the reference list.
fn split_annotation(rest: &str) -> Option<(&str, &str)> {
    let t = rest.trim_end();
    let inner_end = t.len().checked_sub(1).filter(|_| t.ends_with(')'))?;
    let open = t[..inner_end].rfind('(')?;
    let list = strip_after_keyword(&t[open + 1..inner_end])?;
    Some((&t[..open], list))
}

/// `after: …` (any case, optional spaces before the colon) → the list.
fn strip_after_keyword(s: &str) -> Option<&str> {
    let s = s.trim_start();
    if !s.get(..5)?.eq_ignore_ascii_case("after") {
        return None;
    }
    s[5..].trim_start().strip_prefix(':')
}

/// A description line that is a dependency annotation: `after: 1, 3`, also
/// in parentheses. Only a line whose whole list reads as references counts,
/// so a sentence such as "after: lunch, call Bob" stays description.
fn description_refs(trimmed: &str) -> Option<Vec<usize>> {
    let s = trimmed
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(trimmed);
    parse_refs(strip_after_keyword(s)?).ok()
}

/// `1, s2 q3` → `[1, 2, 3]`; `none` → `[]`. On failure, says what is wrong.
fn parse_refs(list: &str) -> Result<Vec<usize>, String> {
    let tokens: Vec<&str> = list
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .collect();
    match tokens.as_slice() {
        [] => {
            return Err(
                "it lists no steps (write \"none\" for a step that waits for nothing)".into(),
            )
        }
        [t] if t.eq_ignore_ascii_case("none") => return Ok(Vec::new()),
        _ => {}
    }
    tokens
        .iter()
        .map(|t| {
            let digits = t.strip_prefix(['s', 'S', 'q', 'Q']).unwrap_or(t);
            let ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
            ok.then(|| digits.parse::<usize>().ok())
                .flatten()
                .ok_or_else(|| {
                    format!("\"{t}\" is not a step reference (use N, sN or qN, or none alone)")
                })
        })
        .collect()
}

/// YAML front matter at the very top: returns the index of the closing line
/// and the `session:` value, if any. An unclosed block is not front matter.
fn front_matter<'a>(mut lines: impl Iterator<Item = &'a str>) -> Option<(usize, Option<String>)> {
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    // The first `session:` line decides, even when its value is empty.
    let mut session: Option<Option<String>> = None;
    for (i, l) in lines.enumerate() {
        if matches!(l.trim_end(), "---" | "...") {
            return Some((i + 1, session.flatten()));
        }
        if session.is_none() {
            session = l
                .strip_prefix("session:")
                .map(|v| non_empty(unquote(v.trim())));
        }
    }
    None
}

/// The inside of a line that is one HTML comment and nothing else.
fn whole_comment(trimmed: &str) -> Option<&str> {
    let inner = trimmed.strip_prefix("<!--")?.strip_suffix("-->")?;
    (!inner.contains("-->")).then_some(inner)
}

/// The inside of the first complete `<!-- … -->` on a line.
fn embedded_comment(line: &str) -> Option<&str> {
    let start = line.find("<!--")? + 4;
    let len = line[start..].find("-->")?;
    Some(&line[start..start + len])
}

fn session_from_comment(inner: &str) -> Option<String> {
    let rest = inner.trim().strip_prefix("session:")?;
    non_empty(unquote(rest.trim()))
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner.trim();
        }
    }
    v
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

#[cfg(test)]
mod tests {
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
        let text = "# G\n\n- [x] a\n* [X] b\n+ [ ] c\n1. [ ] d\n2) [x] e\n10. [ ] f\n-  [ ]   g  \n- [ ]\n";
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
        let text = "# G\n\n```md\n- [ ] example only\n# Not the goal\n```\n- [ ] real\n~~~\n- [ ] x\n~~~\n";
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
}
