//! Shared test harness: waiting on conditions with backoff; the real daemon
//! against a temporary project (`project` its directory and configuration,
//! written by `config`; `daemon` the running process, started the one way
//! `launch` says; `fifo` the one reader of session pipes; `plans` the plan
//! files and the edits agents make to them); the real systemd and journald
//! (`systemd`, `journald`), agents, the fake model and the real ollie-9p.

#![allow(dead_code)] // each test module uses a different part of the harness

pub mod agents;
pub mod civil;
pub mod config;
pub mod daemon;
pub mod desktop;
pub mod fakemodel;
pub mod faultproxy;
pub mod fifo;
pub mod journald;
pub mod launch;
pub mod netns;
pub mod notify;
pub mod plans;
pub mod project;
pub mod realollie;
pub mod reveille_unit;
pub mod systemd;
pub mod tls;

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
