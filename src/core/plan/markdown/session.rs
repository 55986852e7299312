//! Where a markdown plan names its session: YAML front matter at the very
//! top, or a `<!-- session: <id> -->` comment.

/// YAML front matter at the very top: returns the index of the closing line
/// and the `session:` value, if any. An unclosed block is not front matter.
pub(super) fn front_matter<'a>(
    mut lines: impl Iterator<Item = &'a str>,
) -> Option<(usize, Option<String>)> {
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
pub(super) fn whole_comment(trimmed: &str) -> Option<&str> {
    let inner = trimmed.strip_prefix("<!--")?.strip_suffix("-->")?;
    (!inner.contains("-->")).then_some(inner)
}

/// The inside of the first complete `<!-- … -->` on a line.
pub(super) fn embedded_comment(line: &str) -> Option<&str> {
    let start = line.find("<!--")? + 4;
    let len = line[start..].find("-->")?;
    Some(&line[start..start + len])
}

pub(super) fn session_from_comment(inner: &str) -> Option<String> {
    let rest = inner.trim().strip_prefix("session:")?;
    non_empty(unquote(rest.trim()))
}

pub(super) fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner.trim();
        }
    }
    v
}

pub(super) fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}
