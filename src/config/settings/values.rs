//! What each kind of configuration value must be — a path, a range of
//! numbers or milliseconds, a name, a session id, a template, a log level,
//! an address — and the failures, collected rather than stopping at the
//! first.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::validate_name;
use crate::config::expand::{expand_path, EnvSnapshot};
use crate::config::secret::SecretSource;
use crate::core::prompt;
use crate::core::session::check_session;

/// A stage-two failure: the dotted key and what is wrong with its value.
#[derive(Debug)]
pub(crate) struct Invalid {
    pub key: String,
    pub value: String,
    pub message: String,
}

pub(super) fn invalid(key: &str, value: impl fmt::Display, message: impl Into<String>) -> Invalid {
    Invalid {
        key: key.to_string(),
        value: value.to_string(),
        message: message.into(),
    }
}

/// Expands a path key.
pub(super) fn path(key: &str, raw: &str, env: &EnvSnapshot) -> Result<PathBuf, Invalid> {
    expand_path(raw, env).map_err(|m| invalid(key, format!("{raw:?}"), m))
}

/// Expands a path key where `""` means disabled.
pub(super) fn optional_path(
    key: &str,
    raw: &str,
    env: &EnvSnapshot,
) -> Result<Option<PathBuf>, Invalid> {
    if raw.is_empty() {
        Ok(None)
    } else {
        path(key, raw, env).map(Some)
    }
}

pub(super) fn parse_enum<T: FromStr<Err = String>>(key: &str, raw: &str) -> Result<T, Invalid> {
    raw.parse().map_err(|m| invalid(key, format!("{raw:?}"), m))
}

pub(super) fn range(key: &str, v: u64, min: u64, max: u64) -> Result<u64, Invalid> {
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(invalid(key, v, format!("must be between {min} and {max}")))
    }
}

pub(super) fn millis(key: &str, v: u64, min: u64, max: u64) -> Result<Duration, Invalid> {
    range(key, v, min, max).map(Duration::from_millis)
}

/// A session id: a directory name, or one qualified by its kind
/// (`codex:…`, `claude:…`, `opencode:…`), by the engine's own rule.
pub(super) fn session_id(key: &str, s: &str) -> Result<String, Invalid> {
    check_session(s).map_err(|problem| {
        let shown: String = s.chars().take(64).collect();
        invalid(
            key,
            format!("{s:?}"),
            format!("session id {shown:?} {problem}"),
        )
    })?;
    Ok(s.to_string())
}

pub(super) fn name(key: &str, kind: &str, s: &str) -> Result<String, Invalid> {
    validate_name(kind, s).map_err(|m| invalid(key, format!("{s:?}"), m))?;
    Ok(s.to_string())
}

/// A prompt template; `""` is the built-in one. Its placeholders are
/// checked here, once, so rendering never fails at wake time.
pub(super) fn template(key: &str, raw: &str, vars: &[&str]) -> Result<Option<String>, Invalid> {
    if raw.is_empty() {
        return Ok(None);
    }
    let shown: String = raw.chars().take(40).collect();
    prompt::check(raw, vars).map_err(|e| invalid(key, format!("{shown:?}"), e.to_string()))?;
    Ok(Some(raw.to_string()))
}

/// The spellings `log.level` accepts besides `EnvFilter` directives.
pub(super) const LEVELS: &[&str] = &["off", "error", "warn", "info", "debug", "trace"];

pub(super) fn log_level(raw: &str) -> Result<String, Invalid> {
    let key = "log.level";
    let lower = raw.trim().to_ascii_lowercase();
    if LEVELS.contains(&lower.as_str()) {
        return Ok(lower);
    }
    // A bare word would be read by EnvFilter as a target name, silently
    // filtering everything else out: only accept directive syntax.
    if raw.contains('=') || raw.contains(',') {
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(raw) {
            return Err(invalid(key, format!("{raw:?}"), e.to_string()));
        }
        return Ok(raw.to_string());
    }
    Err(invalid(
        key,
        format!("{raw:?}"),
        format!(
            "expected one of {} or tracing directives like \"reveille=debug,info\"",
            LEVELS.join(", ")
        ),
    ))
}

/// Collects stage-two failures instead of stopping at the first, so a
/// configuration with three bad values reports all three at once.
#[derive(Default)]
pub(super) struct Problems(pub(super) Vec<Invalid>);

impl Problems {
    /// The value of `r`, or a placeholder (never used: any problem makes
    /// the whole stage fail) after recording the failure.
    pub(super) fn keep<T: Default>(&mut self, r: Result<T, Invalid>) -> T {
        r.unwrap_or_else(|i| {
            self.0.push(i);
            T::default()
        })
    }
}

/// `codex.endpoint`: `""`, `ws://…`, `wss://…` or `unix://…`.
pub(super) fn endpoint(raw: &str) -> Result<Option<String>, Invalid> {
    if raw.is_empty() {
        return Ok(None);
    }
    let ws = ["ws://", "wss://"]
        .iter()
        .find_map(|s| raw.strip_prefix(s))
        .map(|rest| !rest.is_empty() && !has_userinfo(rest));
    if ws == Some(true) || raw.starts_with("unix://") {
        return Ok(Some(raw.to_string()));
    }
    Err(invalid(
        "codex.endpoint",
        format!("{raw:?}"),
        "must be a ws://host:port, wss://host:port or unix://PATH address (codex app-server --listen), \
         or empty; a token goes in token_file, never in the address",
    ))
}

/// An `http(s)://host:port` URL, without a trailing `/`.
pub(super) fn http_url(key: &str, raw: &str) -> Result<String, Invalid> {
    let rest = ["http://", "https://"]
        .iter()
        .find_map(|s| raw.strip_prefix(s))
        .unwrap_or("");
    if rest.is_empty() || rest.contains(char::is_whitespace) || has_userinfo(rest) {
        return Err(invalid(
            key,
            format!("{raw:?}"),
            "must be an http://host:port or https://host:port URL; a password goes in password_file, never in the URL",
        ));
    }
    Ok(raw.trim_end_matches('/').to_string())
}

/// Whether an address after its scheme names a user (and maybe a
/// password) before its host: a secret written into the TOML.
fn has_userinfo(rest: &str) -> bool {
    rest.split(['/', '?', '#'])
        .next()
        .is_some_and(|authority| authority.contains('@'))
}

/// The systemd credential an opencode password is taken from by default.
pub(super) const OPENCODE_PASSWORD: &str = "opencode-password";
/// The systemd credential a Codex token is taken from by default.
pub(super) const CODEX_TOKEN: &str = "codex-token";

/// A secret's file: the configured one, else the systemd credential
/// `credential` when the service manager passed it; the file must be
/// readable by its owner alone (what it holds is not read here).
pub(super) fn secret(
    key: &str,
    raw: &str,
    credential: &str,
    env: &EnvSnapshot,
) -> Result<Option<SecretSource>, Invalid> {
    let configured = optional_path(key, raw, env)?;
    let credentials = env
        .get("CREDENTIALS_DIRECTORY")
        .filter(|d| d.starts_with('/'))
        .map(std::path::Path::new);
    let Some(source) = SecretSource::find(configured.as_deref(), credential, credentials) else {
        return Ok(None);
    };
    source
        .check()
        .map_err(|m| invalid(key, format!("{:?}", source.path().display().to_string()), m))?;
    Ok(Some(source))
}

/// An HTTP Basic user name: not empty, no `:` (it ends the name).
pub(super) fn user_name(key: &str, raw: &str) -> Result<String, Invalid> {
    if raw.is_empty() || raw.contains(':') || raw.chars().any(char::is_control) {
        return Err(invalid(
            key,
            format!("{raw:?}"),
            "must be a user name without ':' (HTTP Basic)",
        ));
    }
    Ok(raw.to_string())
}

/// A `s/new` value: one word (the create line is split on whitespace).
pub(super) fn word(key: &str, raw: &str) -> Result<Option<String>, Invalid> {
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            key,
            format!("{raw:?}"),
            "must be one word (no spaces)",
        ));
    }
    Ok(Some(raw.to_string()))
}
