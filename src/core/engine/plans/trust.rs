//! How far one read of a plan file can be trusted: a fresh file may be
//! caught mid-rewrite, so only whole lines count, nothing is forgotten for
//! being absent, and a complete re-read confirms it once it has settled.

use super::{ReadKind, MAX_RECHECKS};
use crate::core::plan::PlanFormat;

/// How far one read of a plan file can be trusted, decided once.
///
/// A fresh file (modified within the settle time) may already be the start
/// of the next in-place rewrite, caught between its truncate and its last
/// write: an unterminated last line may be half a title, and a step missing
/// from it may only not be written yet. So: whole lines only, nothing
/// forgotten for being absent, and a complete re-read once the file has
/// settled. A writer that never stops is believed after `MAX_RECHECKS`
/// re-reads.
#[derive(Debug, Clone, Copy)]
pub(super) struct Trust {
    /// Fresh, and still to be confirmed by a re-read.
    pub(super) fresh: bool,
    /// Fresh re-reads in a row so far.
    pub(super) rechecked: u32,
    /// Only the whole lines count (a settle read, or a fresh markdown read
    /// whose last line is unterminated).
    whole_lines: bool,
    /// A re-read is due whatever the parse says (a fresh read that ends
    /// mid-line).
    pub(super) confirm_later: bool,
}

impl Trust {
    pub(super) fn of(
        bytes: &[u8],
        how: ReadKind,
        rechecked: u32,
        format: PlanFormat,
        max: usize,
    ) -> Trust {
        let fresh = how.fresh && how.complete && rechecked < MAX_RECHECKS;
        let unterminated = bytes.last().is_some_and(|&b| b != b'\n');
        // An oversized read is refused whole (trimmed to its last line it
        // would slip under the cap). JSON has no lines to trust: a fresh
        // half of it simply fails to parse, and that error waits for the
        // re-read.
        let oversized = bytes.len() > max;
        let md_unterminated = unterminated && format == PlanFormat::Markdown;
        Trust {
            fresh,
            rechecked,
            whole_lines: !oversized && (!how.complete || (fresh && md_unterminated)),
            confirm_later: fresh && unterminated,
        }
    }

    /// The part of `bytes` to parse.
    pub(super) fn usable<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        if !self.whole_lines {
            return bytes;
        }
        // A writer may still be mid-file: only whole lines count, so a
        // half-written title can never become a step.
        match bytes.iter().rposition(|&b| b == b'\n') {
            Some(end) => &bytes[..=end],
            None => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trust(bytes: &[u8], complete: bool, fresh: bool, rechecked: u32) -> Trust {
        let how = ReadKind { complete, fresh };
        Trust::of(bytes, how, rechecked, PlanFormat::Markdown, 1 << 20)
    }

    #[test]
    fn a_complete_read_that_is_not_fresh_is_believed_whole() {
        let t = trust(b"# G\n- [ ] a\n- [ ] half", true, false, 0);
        assert!(!t.fresh && !t.confirm_later);
        assert_eq!(t.usable(b"# G\n- [ ] half"), b"# G\n- [ ] half");
    }

    #[test]
    fn a_settle_read_counts_whole_lines_only() {
        let t = trust(b"# G\n- [ ] half", false, false, 0);
        assert_eq!(t.usable(b"# G\n- [ ] half"), b"# G\n");
        assert_eq!(t.usable(b"no newline"), b"");
    }

    #[test]
    fn a_fresh_read_ending_mid_line_is_trimmed_and_read_again() {
        let t = trust(b"# G\n- [ ] half", true, true, 0);
        assert!(t.fresh && t.confirm_later);
        assert_eq!(t.usable(b"# G\n- [ ] half"), b"# G\n");
        // Ending with a newline, it is acted on at once, and confirmed only
        // if it lacks an announced step (the caller's decision).
        let t = trust(b"# G\n- [ ] a\n", true, true, 0);
        assert!(t.fresh && !t.confirm_later);
    }

    #[test]
    fn a_file_that_stays_fresh_is_believed_after_the_last_recheck() {
        let t = trust(b"# G\n- [ ] half", true, true, MAX_RECHECKS);
        assert!(!t.fresh && !t.confirm_later);
    }

    #[test]
    fn an_oversized_read_is_refused_whole_not_trimmed_under_the_cap() {
        let how = ReadKind {
            complete: false,
            fresh: false,
        };
        let t = Trust::of(b"# G\n- [ ] a\nxx", how, 0, PlanFormat::Markdown, 4);
        assert_eq!(t.usable(b"# G\n- [ ] a\nxx"), b"# G\n- [ ] a\nxx");
    }
}
