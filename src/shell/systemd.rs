//! The service manager's side channel: `sd_notify(3)` messages (READY,
//! STATUS, RELOADING, STOPPING, WATCHDOG) over the `sd-notify` crate.
//!
//! Outside systemd (`NOTIFY_SOCKET` unset) a [`Notifier`] does nothing at
//! all. A failed send is logged and otherwise ignored: losing a status line
//! must never stop the daemon. (A lost `WATCHDOG=1` gets us restarted, which
//! is what the watchdog is for.)
//!
//! The socket is connected once and is non-blocking: a service manager that
//! stops reading (its queue holds about ten datagrams) must not stall the
//! event loop — the sd-notify crate's own `notify` blocks there. The
//! crate's `NotifyState` still formats the messages.

use std::fmt::Write as _;
use std::io;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use sd_notify::NotifyState;

/// Sends state changes to the service manager that started us, if any.
#[derive(Debug)]
pub struct Notifier {
    /// Connected to `NOTIFY_SOCKET`, non-blocking; `None` when it was unset
    /// (every method is then a no-op, so the daemon runs unchanged in a
    /// terminal) or could not be connected (said once, at start-up).
    sock: Option<UnixDatagram>,
}

fn connect(path: &std::ffi::OsStr) -> io::Result<UnixDatagram> {
    use std::os::unix::ffi::OsStrExt;
    let sock = UnixDatagram::unbound()?;
    let bytes = path.as_bytes();
    if let Some(name) = bytes.strip_prefix(b"@") {
        // An abstract socket (`@name`), as `sd_notify(3)` allows.
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
        sock.connect_addr(&addr)?;
    } else {
        sock.connect(path)?;
    }
    sock.set_nonblocking(true)?;
    Ok(sock)
}

impl Notifier {
    /// A notifier for the current process. Reads `NOTIFY_SOCKET` once and
    /// leaves it in the environment.
    pub fn from_env() -> Self {
        let sock = match std::env::var_os("NOTIFY_SOCKET").filter(|s| !s.is_empty()) {
            None => None,
            Some(path) => match connect(&path) {
                Ok(sock) => Some(sock),
                Err(err) => {
                    tracing::warn!(error = %err, "cannot connect to NOTIFY_SOCKET {}; not notifying systemd", path.to_string_lossy());
                    None
                }
            },
        };
        Self { sock }
    }

    /// A notifier that never sends anything (tests, `reveille check`).
    pub fn disabled() -> Self {
        Self { sock: None }
    }

    /// Whether messages are sent at all.
    pub fn is_enabled(&self) -> bool {
        self.sock.is_some()
    }

    /// `READY=1`: start-up (or a reload) is complete; we are watching.
    pub fn ready(&self) {
        self.send("READY", &[NotifyState::Ready]);
    }

    /// `READY=1` and `STATUS=<text>` in one datagram. `systemctl start`
    /// (and `reload`) return as soon as READY=1 is handled, so a STATUS=
    /// sent afterwards, even right afterwards, may not be there yet when
    /// the caller looks: send the status with the READY it describes.
    pub fn ready_with_status(&self, text: &str) {
        let line = one_line(text);
        self.send("READY", &[NotifyState::Ready, NotifyState::Status(&line)]);
    }

    /// `STATUS=<text>`: a one-line summary shown by `systemctl status`.
    /// Line breaks would end the field early, so they become spaces.
    pub fn status(&self, text: &str) {
        let line = one_line(text);
        self.send("STATUS", &[NotifyState::Status(&line)]);
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=<now>` in the same datagram, as
    /// `sd_notify(3)` asks; send [`ready`](Self::ready) when the reload is
    /// done (whether the new configuration was taken or refused).
    pub fn reloading(&self) {
        if !self.is_enabled() {
            return;
        }
        match NotifyState::monotonic_usec_now() {
            Ok(now) => self.send("RELOADING", &[NotifyState::Reloading, now]),
            Err(err) => {
                tracing::warn!(error = %err, "cannot read CLOCK_MONOTONIC; sending RELOADING=1 alone");
                self.send("RELOADING", &[NotifyState::Reloading]);
            }
        }
    }

    /// `STOPPING=1`: shutdown has begun (draining, persisting state).
    pub fn stopping(&self) {
        self.send("STOPPING", &[NotifyState::Stopping]);
    }

    /// `WATCHDOG=1`: the event loop is alive. Call it from the loop itself,
    /// every [`watchdog_interval`](Self::watchdog_interval), so that a
    /// stalled loop misses it.
    pub fn watchdog(&self) {
        self.send("WATCHDOG", &[NotifyState::Watchdog]);
    }

    /// How often to send [`watchdog`](Self::watchdog): half of
    /// `WATCHDOG_USEC`, when the watchdog is meant for this process
    /// (`WATCHDOG_PID` unset or our pid). `None` when there is no watchdog
    /// or no service manager to ping.
    pub fn watchdog_interval(&self) -> Option<Duration> {
        if !self.is_enabled() {
            return None;
        }
        watchdog_interval_from(
            std::env::var("WATCHDOG_USEC").ok().as_deref(),
            std::env::var("WATCHDOG_PID").ok().as_deref(),
            std::process::id(),
        )
    }

    fn send(&self, what: &str, states: &[NotifyState<'_>]) {
        let Some(sock) = &self.sock else {
            return;
        };
        let mut msg = String::new();
        for s in states {
            let _ = writeln!(msg, "{s}");
        }
        match sock.send(msg.as_bytes()) {
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                tracing::warn!("sd_notify {what} dropped: the service manager is not reading its notify socket");
            }
            Err(err) => tracing::warn!(error = %err, "sd_notify {what} failed"),
        }
    }
}

/// The watchdog rule of `sd_watchdog_enabled(3)`, on plain values: half the
/// timeout, if `usec` is a positive number and `pid` is absent or ours.
pub fn watchdog_interval_from(
    usec: Option<&str>,
    pid: Option<&str>,
    our_pid: u32,
) -> Option<Duration> {
    let usec: u64 = usec?.trim().parse().ok().filter(|&u| u > 0)?;
    if let Some(pid) = pid {
        if pid.trim().parse::<u32>().ok()? != our_pid {
            return None;
        }
    }
    Some(Duration::from_micros(usec) / 2)
}

/// `STATUS=` is one line of a newline-separated datagram.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchdog_is_half_the_timeout() {
        assert_eq!(
            watchdog_interval_from(Some("30000000"), None, 7),
            Some(Duration::from_secs(15))
        );
    }

    #[test]
    fn watchdog_for_our_pid_only() {
        assert_eq!(
            watchdog_interval_from(Some("1000000"), Some("7"), 7),
            Some(Duration::from_millis(500))
        );
        assert_eq!(watchdog_interval_from(Some("1000000"), Some("8"), 7), None);
        assert_eq!(watchdog_interval_from(Some("1000000"), Some("x"), 7), None);
    }

    #[test]
    fn no_watchdog_without_a_positive_timeout() {
        assert_eq!(watchdog_interval_from(None, None, 7), None);
        assert_eq!(watchdog_interval_from(Some("0"), None, 7), None);
        assert_eq!(watchdog_interval_from(Some("soon"), None, 7), None);
    }

    #[test]
    fn status_is_one_line() {
        assert_eq!(one_line("3 plans\nwatching\r\n"), "3 plans watching  ");
    }

    #[test]
    fn disabled_notifier_sends_nothing_and_has_no_watchdog() {
        let n = Notifier::disabled();
        assert!(!n.is_enabled());
        assert_eq!(n.watchdog_interval(), None);
        n.ready();
        n.ready_with_status("x");
        n.reloading();
        n.status("x");
        n.stopping();
        n.watchdog();
    }
}
