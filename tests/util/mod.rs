//! Shared test harness: waiting on conditions with backoff, and running the
//! real systemd and journald (`systemd`).

#![allow(dead_code)] // each test module uses a different part of the harness

pub mod journald;
pub mod systemd;
pub mod world;

use std::time::{Duration, Instant};

/// Polls `probe` with exponential backoff (5 ms doubling to 200 ms) until it
/// returns `Some`, and returns that value; panics naming `what` after
/// `timeout`. This is the only way tests wait: never a bare sleep.
pub fn wait_until<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(5);
    loop {
        if let Some(value) = probe() {
            return value;
        }
        let now = Instant::now();
        if now >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(delay.min(deadline - now));
        delay = (delay * 2).min(Duration::from_millis(200));
    }
}
