//! Self-tests of the test doubles, through their real FUSE mounts and plain
//! `std::fs`, as a user's shell would see them.

mod beads;
mod fuse;
mod ollie;
