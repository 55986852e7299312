//! reveille wakes AI coding agents when their next piece of work becomes
//! possible.
//!
//! # Layout
//!
//! - [`core`]: the pure engine — the plan model (`core::plan`: parsers and
//!   dependency graph), lifecycle, announced sets, outbox decisions, tracker
//!   readiness, prompt rendering. `(now, Input)` in, `Effect`s out; no I/O,
//!   no clock. `core::driver::drive` is the one loop over it, behind a
//!   `World` trait the shell implements.
//! - [`shell`]: the workers around it — the event loop (`daemon`), inotify
//!   and polling (`watch`), the tracker's event log (`tail`), FIFO and file
//!   delivery (`deliver`), child sessions for fan-out (`spawn`), the
//!   journal and snapshot (`store`), `status`
//!   and `why` (offline, from the state directory), the report of files
//!   ignored for their names (`ignored`), sd_notify (`systemd`) and
//!   `logging`.
//! - [`config`]: figment layers (defaults < TOML file < environment <
//!   flags) validated into [`config::Settings`]; `doc/CONFIG.md` lists
//!   every key.
//!
//! The binary (`src/main.rs`, `src/cli/`) holds the flags (one clap
//! definition for help, completions and the man page), output that never
//! panics on a closed pipe or a full disk, `ready`, and `demo`.
//!
//! The rule: anything that touches the world (files, FIFOs, inotify, clocks,
//! signals, sd_notify, the journal) lives in the shell and talks to the core
//! only through `Input`s and `Effect`s. `doc/ARCHITECTURE.md` tells the
//! whole story.

pub mod config;
pub mod core;
pub mod shell;
