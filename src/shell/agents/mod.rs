//! Backends for the agent programs people run — one module per program,
//! each an implementation of `shell::backend::Backend` that reaches that
//! program's sessions through the program's own way in (its server, its
//! socket, its queue) and reports what the program says about them.

pub mod opencode;
