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
//!
//! Here: the pass over the lines and the steps it makes. Beside it: the
//! grammar of one line (`syntax.rs`) and where a plan names its session
//! (`session.rs`).

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
    /// The text after the checkbox as written, when it differs from the
    /// title (`Step::written`).
    written: Option<String>,
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
        let title = collapse_whitespace(title);
        let as_written = rest.trim();
        Ok(Draft {
            num,
            line,
            status,
            written: (as_written != title).then(|| as_written.to_string()),
            title,
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
            written: d.written,
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

mod session;
mod syntax;
#[cfg(test)]
mod tests;

use session::{embedded_comment, front_matter, session_from_comment, whole_comment};
use syntax::{description_refs, parse_item, parse_refs, split_annotation};
