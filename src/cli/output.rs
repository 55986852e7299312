//! Writing a command's output. Everything a command prints goes out in one
//! `write_all` and a flush, so a failure is seen once, where it happens:
//! a reader that went away (`reveille status | head`) ends the command
//! quietly with the status a shell shows for SIGPIPE; any other failure
//! (`>/dev/full`) is reported once on stderr with a non-zero status.
//! Nothing here panics — Rust's `println!` would, on both.

use std::fmt;
use std::io::{self, Write};

/// Why the output could not be written.
#[derive(Debug)]
pub enum OutputError {
    /// The reader closed the pipe (EPIPE): not worth a message.
    Closed,
    /// Anything else, such as a full disk.
    Failed(io::Error),
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputError::Closed => f.write_str("the output pipe was closed"),
            OutputError::Failed(e) => write!(f, "cannot write the output: {e}"),
        }
    }
}

impl std::error::Error for OutputError {}

/// Writes `text` to standard output and flushes it.
pub fn print(text: &str) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            io::ErrorKind::BrokenPipe => OutputError::Closed,
            _ => OutputError::Failed(e),
        })
}

/// `value` as pretty JSON, newline-terminated.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), OutputError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| OutputError::Failed(io::Error::other(e)))?;
    text.push('\n');
    print(&text)
}

/// A message on stderr, `reveille: ` first. A stderr that cannot be
/// written to is not worth dying for: the exit status still tells.
pub fn warn(message: impl fmt::Display) {
    let _ = writeln!(io::stderr().lock(), "reveille: {message}");
}

/// An error already reported where the user will read it (the journal,
/// for a daemon under systemd, whose stderr goes there too): not said again.
#[derive(Debug)]
pub struct AlreadySaid(pub String);

impl fmt::Display for AlreadySaid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AlreadySaid {}
