//! Backends for the agent programs people run, one module per program,
//! each an implementation of `shell::backend::Backend` reaching that
//! program's sessions through the program's own way in (and its workers
//! that observe them): `codex` for Codex threads through their
//! app-server.

pub mod codex;
