//! reveille wakes AI coding agents when their next piece of work becomes
//! possible.
//!
//! # Layout
//!
//! - [`config`]: figment layers (defaults < TOML file < environment <
//!   flags) validated into [`config::Settings`]; `doc/CONFIG.md` lists
//!   every key.
//! - [`core`]: the pure engine — plan parsing, dependency graph, lifecycle,
//!   announced sets, outbox decisions, prompt rendering. Inputs in, effects
//!   out; no I/O, no clock.
//! - [`shell`]: the workers that touch the world; so far `systemd`
//!   (sd_notify) and `logging` (journald or stderr).
//!
//! The rule: anything that touches the world (files, FIFOs, inotify, clocks,
//! signals, sd_notify, the journal) lives in the shell and talks to the core
//! only through `Input`s and `Effect`s.

pub mod config;
pub mod core;
pub mod shell;
