//! The wall clock as data: timestamps written into views, reports, ids and
//! the tracker's "ready by now" — never a deadline (those come from the
//! engine's timers, or are I/O timeouts). One place, so every stamp is
//! taken the same way.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since the Unix epoch (0 before it).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Now, in seconds since the Unix epoch (0 before it).
pub fn unix_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
