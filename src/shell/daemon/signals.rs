//! The signals the daemon answers: SIGTERM and SIGINT stop it (the
//! shutdown future `run` is given), SIGHUP reloads the configuration.

use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use tokio::signal::unix::{signal, Signal, SignalKind};

use super::DaemonError;

/// A future that completes at the first SIGTERM or SIGINT: the shutdown
/// the binary hands to `run`. A second one, while the drain still waits
/// for background writes, exits at once (status 128 + signal), as users of
/// daemons expect when they press Ctrl-C twice. Must be called inside the
/// runtime.
pub fn terminated() -> Result<impl Future<Output = ()>, DaemonError> {
    let stopping = Arc::new(AtomicBool::new(false));
    for (sig, status) in [(SIGTERM, 128 + SIGTERM), (SIGINT, 128 + SIGINT)] {
        // The order matters: the exit checks the flag before this signal
        // sets it, so only a second signal exits.
        signal_hook::flag::register_conditional_shutdown(sig, status, stopping.clone())
            .and_then(|_| signal_hook::flag::register(sig, stopping.clone()))
            .map_err(|e| DaemonError::Runtime(e.to_string()))?;
    }
    let mut term = stream(SignalKind::terminate())?;
    let mut int = stream(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

/// SIGHUP, for the loop: re-read the configuration.
pub(super) fn hangup() -> Result<Signal, DaemonError> {
    stream(SignalKind::hangup())
}

fn stream(kind: SignalKind) -> Result<Signal, DaemonError> {
    signal(kind).map_err(|e| DaemonError::Runtime(e.to_string()))
}
