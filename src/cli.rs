//! The command line of the `reveille` binary: the flags (one clap
//! definition, from which `--help`, the completions and the man page are
//! all made), writing output like a well-behaved Unix tool, and the
//! offline commands that read one file, and the live view of `status
//! --watch`.

pub mod args;
pub mod demo;
pub mod exit;
pub mod live;
pub mod offline;
pub mod output;
pub mod project;
pub mod reload;
