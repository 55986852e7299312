//! Shared test harness: waiting on conditions with backoff, running the
//! real daemon against a temporary project (`daemon`, started the one way
//! `launch` says), and running the real systemd and journald (`systemd`).

#![allow(dead_code)] // each test module uses a different part of the harness

pub mod agents;
pub mod daemon;
pub mod fakemodel;
pub mod journald;
pub mod launch;
pub mod realollie;
pub mod rig;
pub mod systemd;
pub mod world;

use std::time::{Duration, Instant};

/// Polls `probe` with exponential backoff (5 ms doubling to 200 ms) until it
/// returns `Some`, and returns that value; panics naming `what` after
/// `timeout`. This is the only way tests wait: never a bare sleep.
pub fn wait_until<T>(what: &str, timeout: Duration, probe: impl FnMut() -> Option<T>) -> T {
    try_wait_until(timeout, probe)
        .unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}"))
}

/// [`wait_until`] that returns `None` on timeout instead of panicking, for
/// callers that explain the failure themselves.
pub fn try_wait_until<T>(timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(5);
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(delay.min(deadline - now));
        delay = (delay * 2).min(Duration::from_millis(200));
    }
}
