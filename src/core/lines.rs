//! Line-oriented input (tracker `ready` files, beads `issues.jsonl`): the
//! error type that names a line, and the guard that keeps one hostile line
//! from costing more than it is worth.

use std::fmt;

/// One bad line of a line-oriented file. The caller adds the file name.
///
/// A `LineError` is a report, not always a rejection: each parser documents
/// whether the line was dropped or kept with a field ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number, as an editor shows it.
    pub line: usize,
    /// What is wrong, in words a user can act on.
    pub message: String,
}

impl LineError {
    pub(crate) fn new(line: usize, message: impl Into<String>) -> Self {
        LineError {
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Longest piece of a data value quoted in a message, in characters.
pub const QUOTE_CHARS: usize = 64;

/// `value` quoted for a message (`{:?}` style), cut to [`QUOTE_CHARS`]
/// characters with its full length appended, so one hostile field (a 10 MB
/// id, a 4 MB session name) cannot turn into a journal entry of that size.
pub fn quoted(value: &str) -> String {
    match value.char_indices().nth(QUOTE_CHARS) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!("{:?}… ({} bytes)", &value[..cut], value.len()),
    }
}

/// Deepest JSON nesting the parsers accept. Real events and issues nest
/// three or four levels; serde_json's own limit (128) keeps the stack safe,
/// this one lets us say "too deep" instead of a generic syntax error.
pub const MAX_JSON_DEPTH: usize = 64;

/// Whether `bytes` nests arrays/objects deeper than `max`, counting only
/// brackets outside strings. One pass, no allocation, no recursion.
pub(crate) fn json_too_deep(bytes: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        assert!(!json_too_deep(br#"{"a":[1,{"b":2}]}"#, 3));
        assert!(json_too_deep(br#"{"a":[1,{"b":[2]}]}"#, 3));
        // Brackets inside a string, and an escaped quote, do not nest.
        assert!(!json_too_deep(br#"{"a":"[[[[\"[[[["}"#, 1));
    }

    #[test]
    fn quoted_values_are_cut_with_their_length() {
        assert_eq!(quoted("bd-1"), "\"bd-1\"");
        assert_eq!(
            quoted(&"é".repeat(QUOTE_CHARS)),
            format!("{:?}", "é".repeat(QUOTE_CHARS))
        );
        let long = "x".repeat(10 << 20);
        let q = quoted(&long);
        assert!(q.len() < 100, "{q}");
        assert!(q.ends_with("… (10485760 bytes)"), "{q}");
        // Cut on a character boundary.
        assert!(quoted(&"é".repeat(1000)).starts_with(&format!("\"{}\"…", "é".repeat(QUOTE_CHARS))));
    }

    /// Regression: a 10 MB id in `issues.jsonl`, a 1 MB mount name in an
    /// event, quoted whole, made journal entries of that size.
    #[test]
    fn parser_errors_quote_hostile_values_briefly() {
        let id = "x".repeat(10 << 20);
        let line = format!("{{\"id\":\"{id}/\",\"status\":\"open\"}}");
        let (_, errors) = crate::core::beads::parse_issues(&line);
        assert!(
            errors[0].to_string().len() < 200,
            "{}",
            errors[0].message.len()
        );
        let mount = "m".repeat(500_000);
        let event = format!("{{\"type\":\"created\",\"id\":\"bd-1\",\"mount\":\"{mount}\"}}");
        let e = crate::core::tracker::parse_event(event.as_bytes()).unwrap_err();
        assert!(e.to_string().len() < 200, "{}", e.to_string().len());
    }

    #[test]
    fn display_names_the_line() {
        assert_eq!(LineError::new(7, "bad").to_string(), "line 7: bad");
    }
}
