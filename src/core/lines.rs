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
    fn display_names_the_line() {
        assert_eq!(LineError::new(7, "bad").to_string(), "line 7: bad");
    }
}
