//! Launching the real `reveille` binary: the one environment policy every
//! test and the wake benchmark start it with.
//!
//! The child inherits the caller's environment (PATH, HOME, …) except what
//! would steer the daemon from outside the test: `RUST_LOG`, the service
//! manager's `JOURNAL_STREAM`, `NOTIFY_SOCKET` and watchdog variables, the
//! user's `XDG_RUNTIME_DIR` (session-checklist locks belong in the test's
//! own directory) and `DBUS_SESSION_BUS_ADDRESS` (no test notifies the
//! developer's desktop), and every `REVEILLE_*` setting (including the harness's
//! own knobs, which the daemon would take for configuration). Its stdin is
//! null. The caller adds its own `env`s, args and stdio on top; a variable
//! it sets explicitly wins over the removal.
//!
//! Free of the test harness's other modules, so the benchmark includes this
//! file as it is (`#[path = "../../../tests/util/launch.rs"]`).

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

/// The `reveille` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_reveille");

/// Variables a child never inherits: each one changes what the daemon
/// logs, where, or whom it notifies.
const NOT_INHERITED: &[&str] = &[
    "RUST_LOG",
    "JOURNAL_STREAM",
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    "XDG_RUNTIME_DIR",
    // A test's daemon never notifies the developer's own desktop; the
    // desktop tests give it their private bus.
    "DBUS_SESSION_BUS_ADDRESS",
];

/// The prefix of the daemon's configuration variables.
const CONFIG_PREFIX: &str = "REVEILLE_";

/// A command running [`BIN`] under the policy.
pub fn command() -> Command {
    command_for(Path::new(BIN))
}

/// A command running `bin` under the policy.
pub fn command_for(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    for (key, _) in std::env::vars_os() {
        if !inherited(&key) {
            cmd.env_remove(&key);
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

fn inherited(key: &OsStr) -> bool {
    let key = key.to_string_lossy();
    !NOT_INHERITED.contains(&key.as_ref()) && !key.starts_with(CONFIG_PREFIX)
}
