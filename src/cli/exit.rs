//! The exit statuses of `reveille`, each with one meaning, so that scripts
//! and the service manager can tell them apart: a configuration error is
//! not worth restarting for (the unit's `RestartPreventExitStatus=`), a
//! closed pipe is not worth a message.

/// A configuration that cannot be used: `EX_CONFIG` from sysexits(3),
/// which `systemctl status` shows as `status=78`. Fixing the file is the only
/// remedy, so systemd must not restart the daemon for it.
pub const CONFIG: u8 = 78;

/// The exit status after a closed pipe: 128 + SIGPIPE, what a shell shows
/// for a command killed by it (`yes | head` leaves `yes` at 141).
pub const CLOSED_PIPE: u8 = 141;
