//! A beads `issues.jsonl` and `bd ready`'s rule: parsing never panics, the
//! ready set is a set of valid indices of open issues, and it is the same
//! when computed twice.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reveille::core::beads::{parse_issues, ready, ready_json, ready_lines};

fuzz_target!(|data: &[u8]| {
    // The first 8 bytes are the clock (defer_until is compared with it).
    let (now, rest) = match data.split_first_chunk::<8>() {
        Some((now, rest)) => (i64::from_le_bytes(*now), rest),
        None => (0, data),
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let (issues, _errors) = parse_issues(text);
    let r = ready(&issues, now);
    assert!(r.windows(2).all(|w| w[0] < w[1]));
    for &i in &r {
        assert!(i < issues.len());
        assert_eq!(issues[i].status, "open");
    }
    assert_eq!(r, ready(&issues, now));
    let _ = ready_lines(&issues, &r);
    let _ = ready_json(&issues, &r);
});
