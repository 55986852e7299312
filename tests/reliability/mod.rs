//! Reliability under crashes, pauses and floods: the real daemon, killed
//! with `kill -9` at random points, paused with SIGSTOP, flooded past the
//! inotify queue and watch limits and past its outbox cap, and soaked for
//! resource growth. `doc/RELIABILITY.md` quotes what these measured.

mod crash;
mod flood;
mod setup;
mod soak;
mod workload;
