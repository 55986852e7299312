//! The pure engine. Nothing under `core` performs I/O, reads a clock or
//! depends on tokio or notify: time and file contents arrive as arguments,
//! and decisions leave as data (`Effect`s). That keeps every rule testable
//! synchronously, without threads, sleeps or temp dirs.

pub mod beads;
pub mod lines;
pub mod plan;
pub mod timestamp;
pub mod tracker;
