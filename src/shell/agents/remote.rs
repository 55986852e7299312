//! What reaching an agent's program over a network needs, the same for
//! every kind that can be remote (opencode's server, Codex's app-server):
//!
//! - `address`: whether a URL's host is this machine (a plain `http://` or
//!   `ws://` elsewhere is warned about: a secret would cross in the clear);
//! - `tls`: the certificates a server's must chain to (the system's roots,
//!   or a configured CA file) and the rustls configuration built on them;
//! - `link`: why a server cannot be reached, in words, said once per
//!   episode rather than once per retry.

pub mod address;
pub mod link;
pub mod tls;
