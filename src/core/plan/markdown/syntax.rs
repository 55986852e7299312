//! The grammar of one line of a markdown plan: a checklist item, a
//! title's `(after: …)` annotation, a description's `after:` line, and the
//! step references in them.

use crate::core::plan::types::StepStatus;

/// `- [ ] title`, `* [x] title`, `+ [X] title`, `1. [ ] title`, `2) [ ] title`.
pub(super) fn parse_item(s: &str) -> Option<(StepStatus, &str)> {
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
pub(super) fn split_annotation(rest: &str) -> Option<(&str, &str)> {
    let t = rest.trim_end();
    let inner_end = t.len().checked_sub(1).filter(|_| t.ends_with(')'))?;
    let open = t[..inner_end].rfind('(')?;
    let list = strip_after_keyword(&t[open + 1..inner_end])?;
    Some((&t[..open], list))
}

/// `after: …` (any case, optional spaces before the colon) → the list.
pub(super) fn strip_after_keyword(s: &str) -> Option<&str> {
    let s = s.trim_start();
    if !s.get(..5)?.eq_ignore_ascii_case("after") {
        return None;
    }
    s[5..].trim_start().strip_prefix(':')
}

/// A description line that is a dependency annotation: `after: 1, 3`, also
/// in parentheses. Only a line whose whole list reads as references counts,
/// so a sentence such as "after: lunch, call Bob" stays description.
pub(super) fn description_refs(trimmed: &str) -> Option<Vec<usize>> {
    let s = trimmed
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(trimmed);
    parse_refs(strip_after_keyword(s)?).ok()
}

/// `1, s2 q3` → `[1, 2, 3]`; `none` → `[]`. On failure, says what is wrong.
pub(super) fn parse_refs(list: &str) -> Result<Vec<usize>, String> {
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
