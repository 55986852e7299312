//! The shell: small workers that touch the world (sd_notify, the journal,
//! and later files, FIFOs, inotify, signals) and talk to the core only
//! through `Input`s and `Effect`s.

pub mod logging;
pub mod systemd;
