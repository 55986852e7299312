//! The parsed form of a plan — a markdown checklist or a `*.plan.json`
//! document — shared by the parsers, the dependency graph and the engine.
//!
//! A `Plan` is a value: parsing is a pure function of the file's bytes, and the
//! engine diffs successive values of the same plan identity.
//!
//! - `types`: `Plan`, `Step`, `StepStatus`, `PlanError`, the value itself;
//! - `markdown`, `json`: the two parsers, bytes → `Plan`;
//! - `graph`: dependency validation and the ready set (`Plan::ready`).
//!
//! The children depend only on `types` (and `markdown` on `graph`'s
//! reference check); this file only dispatches to them.

pub mod graph;
pub mod json;
pub mod markdown;
mod types;

pub use types::{Plan, PlanError, Step, StepStatus};

/// Which parser a file needs, decided from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFormat {
    Markdown,
    Json,
}

/// Reads a plan file's bytes with the parser its name calls for.
///
/// Refuses, before any parsing, what cannot be a plan: more than `max_bytes`
/// (line 0), NUL bytes (binary content), and invalid UTF-8 — the last two
/// with the line of the first offending byte, so the journal entry points at
/// it.
pub fn parse_plan(format: PlanFormat, bytes: &[u8], max_bytes: usize) -> Result<Plan, PlanError> {
    if bytes.len() > max_bytes {
        return Err(PlanError {
            line: 0,
            // Not its size: a plan is read no further than one byte past
            // the cap, so `bytes.len()` is that, not the file's length.
            message: format!(
                "plan file is larger than the cap of {max_bytes} bytes (project.max_plan_bytes); it is not read past that"
            ),
        });
    }
    let line_at = |offset: usize| bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
    // `contains` is a memchr; the position is only needed for the message.
    if let Some(nul) = bytes
        .contains(&0)
        .then(|| bytes.iter().position(|&b| b == 0))
        .flatten()
    {
        return Err(PlanError {
            line: line_at(nul),
            message: format!("binary content, not a plan: NUL byte at byte offset {nul}"),
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| PlanError {
        line: line_at(e.valid_up_to()),
        message: format!(
            "not valid UTF-8: first bad byte at byte offset {}",
            e.valid_up_to()
        ),
    })?;
    match format {
        PlanFormat::Markdown => markdown::parse(text),
        PlanFormat::Json => json::parse(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &[u8] = b"# Goal\n\n- [x] one\n- [ ] two\n  desc\n";

    #[test]
    fn dispatches_by_format() {
        let p = parse_plan(PlanFormat::Markdown, MD, 1024).unwrap();
        assert_eq!(p.goal, "Goal");
        assert_eq!(p.ready(), [1]);
        let p = parse_plan(
            PlanFormat::Json,
            br#"{"title": "J", "phases": [{"tasks": [{"text": "a"}]}]}"#,
            1024,
        )
        .unwrap();
        assert_eq!(p.steps[0].label, "t1");
        // the wrong parser for the content is an error, not a silent empty plan
        assert!(parse_plan(PlanFormat::Json, MD, 1024).is_err());
    }

    #[test]
    fn size_cap() {
        assert!(parse_plan(PlanFormat::Markdown, MD, MD.len()).is_ok());
        let e = parse_plan(PlanFormat::Markdown, MD, MD.len() - 1).unwrap_err();
        assert_eq!(e.line, 0);
        assert_eq!(
            e.message,
            format!(
                "plan file is larger than the cap of {} bytes (project.max_plan_bytes); it is not read past that",
                MD.len() - 1
            )
        );
    }

    #[test]
    fn nul_is_binary() {
        let e = parse_plan(PlanFormat::Markdown, b"# G\n- [ ] a\n\0rest", 1024).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.starts_with("binary content"), "{}", e.message);
    }

    #[test]
    fn invalid_utf8_names_its_line() {
        let e = parse_plan(
            PlanFormat::Markdown,
            b"# G\r\n- [ ] a\r\n- [ ] caf\xe9\r\n",
            1024,
        )
        .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.starts_with("not valid UTF-8"), "{}", e.message);
        let e = parse_plan(PlanFormat::Json, b"\xff{}", 1024).unwrap_err();
        assert_eq!(e.line, 1);
        assert_eq!(
            e.to_string(),
            "line 1: not valid UTF-8: first bad byte at byte offset 0"
        );
    }
}
