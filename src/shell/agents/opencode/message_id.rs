//! The `messageID` reveille gives each prompt it sends to opencode, so that
//! the agent's own records say which prompt a turn was on — also after a
//! reveille restart.
//!
//! opencode accepts any id that starts with `msg` (the prompt schema checks
//! only the prefix), but its own ids are `msg_` + 12 hex digits (the low 48
//! bits of `unix_ms × 4096 + counter`) + 14 base-62 characters
//! (`packages/opencode/src/id/id.ts`), and messages are listed in id order
//! — the order the model sees them in. So ours has the same shape: the
//! time part is *now*, which keeps it in its place in the transcript, and
//! the 14 characters are a tag derived from the project and the delivery's
//! `seq`, the same in every run: the same seq is recognised as the same
//! prompt, whenever it was sent.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::core::fnv::Fnv;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// `msg_`, 12 hex digits, 14 tag characters.
const LEN: usize = 4 + 12 + 14;

/// The tag of prompt `seq` of `project`: 14 base-62 characters (83 bits,
/// from two FNV-1a hashes, stable across builds and machines).
pub fn tag(project: &str, seq: u64) -> String {
    let mut value: u128 = 0;
    for salt in [b"reveille-opencode-a", b"reveille-opencode-b"] {
        let mut h = Fnv::default();
        h.write(salt);
        h.write(&[0]);
        h.write(project.as_bytes());
        h.write(&[0]);
        h.write(&seq.to_le_bytes());
        value = (value << 64) | u128::from(h.finish());
    }
    (0..14)
        .map(|_| {
            let c = BASE62[(value % 62) as usize] as char;
            value /= 62;
            c
        })
        .collect()
}

/// A new `messageID` for prompt `seq` of `project`, timed now.
pub fn new_id(project: &str, seq: u64) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let ms = crate::shell::wall::unix_ms();
    let counter = COUNTER.fetch_add(1, Ordering::Relaxed) % 4095 + 1;
    id_at(ms, counter, &tag(project, seq))
}

/// The id made at unix ms `ms` with `counter` (1..4095) and `tag`.
fn id_at(ms: u64, counter: u64, tag: &str) -> String {
    let time = (ms.wrapping_mul(4096).wrapping_add(counter)) & 0xffff_ffff_ffff;
    format!("msg_{time:012x}{tag}")
}

/// Whether `id` is one of ours with `tag` (whenever it was made).
pub fn carries(id: &str, tag: &str) -> bool {
    id.len() == LEN && id.starts_with("msg_") && id.ends_with(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_opencodes_shape_and_a_stable_tag() {
        let a = new_id("proj", 7);
        assert_eq!(a.len(), LEN, "{a}");
        assert!(a[4..16].chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert!(a[16..].bytes().all(|b| BASE62.contains(&b)), "{a}");
        let b = new_id("proj", 7);
        assert_ne!(a, b, "two sends are two messages");
        assert!(carries(&a, &tag("proj", 7)) && carries(&b, &tag("proj", 7)));
        assert!(!carries(&a, &tag("proj", 8)));
        assert!(!carries(&a, &tag("other", 7)));
        assert!(!carries("msg_234d62432001svPpIv5cBB3k8I", &tag("proj", 7)));
    }

    #[test]
    fn ids_sort_with_opencodes_own_by_time() {
        // Seen from opencode 1.18.33: a message made at unix ms
        // 1796182778930 got msg_234d62432001…; ours, made a millisecond
        // later, sorts after it (the transcript is in id order), and one
        // made in the same millisecond with a lower counter before it.
        let theirs = "msg_234d62432001svPpIv5cBB3k8I";
        let t = 1_796_182_778_930u64;
        assert_eq!(&id_at(t, 1, &tag("p", 1))[..16], "msg_234d62432001");
        assert!(id_at(t + 1, 1, &tag("p", 1)).as_str() > theirs);
        assert!(id_at(t - 1, 4095, &tag("p", 1)).as_str() < theirs);
    }
}
