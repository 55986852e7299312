//! The real `reveille run` binary against temp dirs, real named pipes, real
//! readers and real inotify (SPEC §2–§6, §8). Each test starts its own
//! project and daemon; none sleeps and hopes: waits are on log lines, on
//! prompts read with timeouts, and on barrier wake-ups.

mod checklists;
mod cli;
mod delivery;
mod errors;
mod latency;
mod restart;
mod subjects;
mod tracker;
mod wake;
