//! The test suite's doubles of the programs reveille talks to, reused by
//! the benchmark (one copy of each, built from the upstream sources): the
//! ollie-9p session tree served over a real FUSE mount.

#![allow(dead_code, unused_imports)] // the benchmark uses a part of each double

#[path = "../../../tests/doubles/fuse.rs"]
pub mod fuse;
#[path = "../../../tests/doubles/ollie.rs"]
pub mod ollie;
#[path = "../../../tests/doubles/plan_edit.rs"]
pub mod plan_edit;

/// Polls `probe` with backoff until it returns `Some` (the test harness's
/// `wait_until`, which the doubles call).
pub fn wait_until<T>(
    what: &str,
    timeout: std::time::Duration,
    probe: impl FnMut() -> Option<T>,
) -> T {
    try_wait_until(timeout, probe)
        .unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}"))
}

/// [`wait_until`] that returns `None` on timeout.
pub fn try_wait_until<T>(
    timeout: std::time::Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = std::time::Instant::now() + timeout;
    let mut delay = std::time::Duration::from_millis(1);
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(std::time::Duration::from_millis(20));
    }
}
