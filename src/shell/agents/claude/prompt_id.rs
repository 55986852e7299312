//! The id reveille gives each prompt it sends to a Claude Code session.
//!
//! It travels as the message's `msg_id`, which Claude Code keeps in the
//! transcript entry of the turn that takes the prompt (`origin.msg_id`);
//! that is how a turn is known to have started on it, and how a prompt
//! delivered again after a reveille restart is recognised as one that
//! already reached the agent. Claude Code keeps only a well-formed UUID
//! there, so the id is one (version 8: custom bits).
//!
//! It is derived from the project, the delivery's `seq` and the prompt's
//! text: the same seq is the same prompt (its text is journaled with it),
//! so a restart computes the same id; the text guards against a state
//! directory started afresh, whose seqs begin again and must not be taken
//! for prompts an older state sent.

use crate::core::fnv::Fnv;

/// The UUID of prompt `seq` with `text` in `project`.
pub fn prompt_id(project: &str, seq: u64, text: &str) -> String {
    let half = |salt: &[u8]| {
        let mut h = Fnv::default();
        for part in [
            salt,
            project.as_bytes(),
            &seq.to_le_bytes(),
            text.as_bytes(),
        ] {
            h.write(&(part.len() as u64).to_le_bytes());
            h.write(part);
        }
        h.finish()
    };
    let (hi, lo) = (half(b"reveille prompt hi"), half(b"reveille prompt lo"));
    // Version 8 in the top nibble of the third group, variant 0b10 in the
    // top bits of the fourth (RFC 9562).
    let hi = (hi & !0xf000) | 0x8000;
    let lo = (lo & !(0b11 << 62)) | (0b10 << 62);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_a_version_8_uuid_stable_for_one_prompt_and_distinct_for_others() {
        let id = prompt_id("myproj", 7, "do s2");
        assert_eq!(id, prompt_id("myproj", 7, "do s2"));
        let groups: Vec<&str> = id.split('-').collect();
        let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
        assert_eq!(lens, [8, 4, 4, 4, 12], "{id}");
        assert!(groups[2].starts_with('8'), "{id}");
        assert!(
            matches!(groups[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
            "{id}"
        );
        assert!(id.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        for other in [
            prompt_id("myproj", 8, "do s2"),
            prompt_id("other", 7, "do s2"),
            prompt_id("myproj", 7, "do s3"),
        ] {
            assert_ne!(id, other);
        }
    }
}
