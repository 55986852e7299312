//! Hostile and broken input against the real binary: names that climb out
//! of the roots, enqueue files that are not what they should be, plan files
//! that are not plans, garbage on the tracker's event log, broken
//! configurations, a full state directory. Each test checks that the daemon
//! wrote nothing outside its roots and state directory, said what was wrong
//! once, and still wakes a good session afterwards. `doc/RELIABILITY.md`
//! ("Hostile input and fuzzing") lists what each one produces.

mod config;
mod disk;
mod enqueue;
mod events;
mod names;
mod plans;
mod world;
