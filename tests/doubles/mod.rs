//! Test doubles of the programs reveille talks to, for what the real ones
//! cannot be made to do here (faults, odd versions, a tracker with no real
//! server to run), each served through a real FUSE mount (`fuse`) and at
//! least as harsh as the real program — every behaviour cites the upstream
//! file it follows — beside its self-tests (`*_tests`), which use the
//! doubles with plain `std::fs`, as a user's shell would.
//!
//! - `fuse`: the synthetic file tree layer, served the way 9pfuse serves;
//! - `ollie`: ollie-9p's session tree (the real server runs in the suite
//!   too: `util::realollie`);
//! - `beads`: 9beads' mounts, events and write-only files;
//! - `plan_edit`: what an agent's edit does to a plan file;
//! - `passthrough`: a real directory served through a mount over itself,
//!   whose reads fail on command for one process (Claude Code's
//!   transcripts, read by reveille).

#![allow(dead_code)] // each test module uses a different part of the doubles

/// What the doubles call as `super::…` (the benchmark supplies its own).
pub use crate::util::wait_until;

pub mod beads;
pub mod fuse;
pub mod ollie;
pub mod passthrough;
pub mod plan_edit;

mod beads_tests;
mod fuse_tests;
mod ollie_tests;
mod passthrough_tests;
