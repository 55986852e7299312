//! Where log lines go: the journal (structured, filterable by field) when we
//! run under systemd or are told to, human-readable text on stderr
//! otherwise — coloured on a terminal unless `NO_COLOR` is set.
//!
//! # Field names in the journal
//!
//! The journald layer is built without a field prefix, so a tracing field
//! becomes a journal field of the same name, upper-cased (`.` becomes `_`):
//!
//! ```text
//! tracing::info!(plan = %id, step = %step, session = %sid, "announced");
//! journalctl --user -u reveille@proj PLAN=20250101T120000_0a1b2c3d STEP=s2
//! ```
//!
//! Span fields are copied onto every event inside the span, under the same
//! names. The domain fields are `plan`, `step`, `session`, `mount`,
//! `project`, `file` (always a whole path for a plan file), `plan_name`
//! (a plan file's bare name), `line`; never name a field `message`, `priority`,
//! `target`, `code_file`, `code_line` or `syslog_identifier`, which the
//! layer or journald already use.

use std::io::IsTerminal;
use std::os::fd::AsRawFd;
use std::path::Path;

use tracing_subscriber::layer::SubscriberExt;

pub use crate::config::LogTarget;
use crate::core::effect::{Level, Log};
use crate::core::source::Source;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

/// The `SYSLOG_IDENTIFIER=` of every entry we write (`journalctl -t reveille`).
pub const SYSLOG_IDENTIFIER: &str = "reveille";

/// Where logs actually went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSink {
    /// journald's native socket, with structured fields.
    Journald,
    /// Formatted text on stderr.
    Stderr,
}

/// Installs the global tracing subscriber. The filter is `RUST_LOG` when set,
/// else `level` (`info`, `debug`, or any `EnvFilter` directive such as
/// `reveille=debug,notify=warn`). Errors: an invalid filter, or a subscriber
/// already installed.
pub fn init(target: LogTarget, level: &str) -> Result<LogSink, String> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(env) if !env.trim().is_empty() => {
            EnvFilter::try_new(&env).map_err(|e| format!("invalid RUST_LOG {env:?}: {e}"))?
        }
        _ => EnvFilter::try_new(level).map_err(|e| format!("invalid log level {level:?}: {e}"))?,
    };

    let want_journal = match target {
        LogTarget::Journald => true,
        LogTarget::Stderr => false,
        LogTarget::Auto => stderr_is_journal_stream(),
    };
    let mut fallback = None;
    if want_journal {
        match tracing_journald::layer() {
            Ok(layer) => {
                let layer = layer
                    .with_field_prefix(None)
                    .with_syslog_identifier(SYSLOG_IDENTIFIER.to_owned());
                tracing_subscriber::registry()
                    .with(filter)
                    .with(layer)
                    .try_init()
                    .map_err(|e| format!("cannot install the log subscriber: {e}"))?;
                return Ok(LogSink::Journald);
            }
            Err(err) => fallback = Some(err),
        }
    }

    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal() && !no_color()),
        )
        .try_init()
        .map_err(|e| format!("cannot install the log subscriber: {e}"))?;
    if let Some(err) = fallback {
        tracing::warn!(error = %err, "journald is unreachable; logging to stderr instead");
    }
    Ok(LogSink::Stderr)
}

/// The `FILE=` and `PLAN_NAME=` of an engine entry. `FILE=` is a whole
/// path, always: an entry that names a plan by its bare file name (the
/// delivery lanes keep only that) gets the path it has in its plan's
/// directory — the plan directory, or `<sessions>/<id>/` for a session
/// checklist — and the bare name goes to `PLAN_NAME=`.
pub fn journal_file(
    log: &Log,
    plan_dir: &Path,
    sessions_dir: &Path,
) -> (Option<String>, Option<String>) {
    let Some(file) = &log.file else {
        return (None, log.plan_name.clone());
    };
    if file.contains('/') {
        return (Some(file.clone()), log.plan_name.clone());
    }
    let dir = match &log.plan {
        Some(Source::Plan(_) | Source::PlanJson(_)) => plan_dir.to_path_buf(),
        Some(Source::SessionPlan(id)) => sessions_dir.join(id),
        _ => return (Some(file.clone()), log.plan_name.clone()),
    };
    let whole = dir.join(file).display().to_string();
    (Some(whole), Some(file.clone()))
}

/// Whether the user asked for no colour: `NO_COLOR` set to anything but
/// the empty string (https://no-color.org).
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// The least severe engine entry the installed subscriber can keep, so
/// the engine builds no entry the filter would drop (the `delivered`
/// entry of every wake-up is debug). Before a subscriber is installed
/// nothing is kept, and only errors are built.
pub fn engine_level() -> Level {
    use tracing::level_filters::LevelFilter;
    match LevelFilter::current() {
        LevelFilter::TRACE | LevelFilter::DEBUG => Level::Debug,
        LevelFilter::INFO => Level::Info,
        LevelFilter::WARN => Level::Warn,
        _ => Level::Error,
    }
}

/// systemd sets `JOURNAL_STREAM=<dev>:<ino>` for a unit whose stderr (or
/// stdout) is connected to the journal. It is inherited by children whose
/// stderr may point elsewhere, so it only counts when it matches stderr.
pub fn stderr_is_journal_stream() -> bool {
    let Ok(value) = std::env::var("JOURNAL_STREAM") else {
        return false;
    };
    match nix::sys::stat::fstat(std::io::stderr().as_raw_fd()) {
        Ok(st) => journal_stream_matches(&value, st.st_dev, st.st_ino),
        Err(_) => false,
    }
}

/// Whether a `JOURNAL_STREAM` value (`<dev>:<ino>`, decimal) names the file
/// with this device and inode.
pub fn journal_stream_matches(value: &str, dev: u64, ino: u64) -> bool {
    let Some((d, i)) = value.trim().split_once(':') else {
        return false;
    };
    matches!((d.parse::<u64>(), i.parse::<u64>()), (Ok(d), Ok(i)) if d == dev && i == ino)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_named_by_its_bare_name_gets_its_whole_path() {
        let (pl, s) = (Path::new("/p/pl"), Path::new("/p/s"));
        let name = "20260101T000000_0a0b0c0d--x__todo.md";
        let source = Source::Plan("20260101T000000_0a0b0c0d".into());
        let bare = Log::new(Level::Info, "announced").plan(&source).file(name);
        let whole = format!("/p/pl/{name}");
        assert_eq!(
            journal_file(&bare, pl, s),
            (Some(whole.clone()), Some(name.into()))
        );
        let full = Log::new(Level::Info, "x")
            .plan(&source)
            .plan_file(Path::new(&whole));
        assert_eq!(journal_file(&full, pl, s), (Some(whole), Some(name.into())));
        let checklist = Log::new(Level::Info, "x")
            .plan(&Source::SessionPlan("a".into()))
            .file("plan");
        assert_eq!(
            journal_file(&checklist, pl, s).0.as_deref(),
            Some("/p/s/a/plan")
        );
        // Not a plan: left as it is.
        let other = Log::new(Level::Info, "x").file("events");
        assert_eq!(journal_file(&other, pl, s), (Some("events".into()), None));
    }

    #[test]
    fn journal_stream_must_match_device_and_inode() {
        assert!(journal_stream_matches("8:1234", 8, 1234));
        assert!(!journal_stream_matches("8:1234", 8, 1235));
        assert!(!journal_stream_matches("9:1234", 8, 1234));
    }

    #[test]
    fn malformed_journal_stream_never_matches() {
        for bad in ["", "8", "8:", ":1234", "a:b", "8:1234:5", "-1:3"] {
            assert!(!journal_stream_matches(bad, 8, 1234), "{bad:?}");
        }
    }
}
