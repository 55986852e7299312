//! What `reveille check` shows: every resolved key with its value, written
//! the way the configuration file would write it, and where it came from.

use std::path::Path;
use std::time::Duration;

use super::layers::entry_key;
use super::secret::SecretSource;
use super::{ConfigError, Loaded, Settings};

/// A string as TOML (and JSON) quote it.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialise")
}

fn path(p: &Path) -> String {
    quoted(&p.to_string_lossy())
}

fn optional_path(p: &Option<impl AsRef<Path>>) -> String {
    p.as_ref().map_or_else(|| quoted(""), |p| path(p.as_ref()))
}

fn optional(s: &Option<String>) -> String {
    quoted(s.as_deref().unwrap_or(""))
}

/// Where a secret comes from — its file — never what it is.
fn secret_file(s: &Option<SecretSource>) -> String {
    optional_path(&s.as_ref().map(SecretSource::path))
}

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}

/// Every resolved key of `s` in file order, as `(dotted key, value)`.
/// Each `[events.assignees]` entry is its own key; an empty table is shown
/// as `events.assignees = {}`.
pub(crate) fn entries(s: &Settings) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |k: &str, v: String| out.push((k.to_string(), v));
    let p = &s.project;
    add("project.name", quoted(&p.name));
    add("project.dir", path(&p.dir));
    add("project.plan_dir", path(&p.plan_dir));
    add("project.default_session", optional(&p.default_session));
    add("project.mode", quoted(p.mode.as_str()));
    add("project.nudge_done", p.nudge_done.to_string());
    add("project.max_plan_bytes", p.max_plan_bytes.to_string());
    add("project.settle_ms", ms(p.settle));
    let ss = &s.sessions;
    add("sessions.dir", path(&ss.dir));
    add("sessions.enqueue", quoted(&ss.enqueue));
    add("sessions.framing", quoted(ss.framing.as_str()));
    add("sessions.outbox_cap", ss.outbox_cap.to_string());
    add("sessions.session_plans", ss.session_plans.to_string());
    add("sessions.retry_initial_ms", ms(ss.retry_initial));
    add("sessions.retry_max_ms", ms(ss.retry_max));
    add("sessions.delivery", quoted(ss.delivery.as_str()));
    add("sessions.state_poll_ms", ms(ss.state_poll));
    let remind_after = ss.remind_after.map_or("0".to_string(), ms);
    add("sessions.remind_after_ms", remind_after);
    add("sessions.remind_max", ss.remind_max.to_string());
    let e = &s.events;
    add("events.path", optional_path(&e.path));
    add("events.beads_root", path(&e.beads_root));
    let mounts: Vec<String> = e.mounts.iter().map(|m| quoted(m)).collect();
    add("events.mounts", format!("[{}]", mounts.join(", ")));
    add("events.poll_interval_ms", ms(e.poll_interval));
    add("events.notify_completed", e.notify_completed.to_string());
    add(
        "events.resync_ms",
        e.resync.map_or_else(|| "0".to_string(), ms),
    );
    if e.assignees.is_empty() {
        add("events.assignees", "{}".to_string());
    }
    for (who, session) in &e.assignees {
        add(&entry_key("events.assignees", who), quoted(session));
    }
    add("beads.issues_jsonl", optional_path(&s.beads.issues_jsonl));
    let t = &s.prompt;
    add("prompt.template", optional(&t.template));
    add("prompt.done_template", optional(&t.done_template));
    add("prompt.claim_template", optional(&t.claim_template));
    add("prompt.completed_template", optional(&t.completed_template));
    add("prompt.remind_template", optional(&t.remind_template));
    add("state.dir", path(&s.state.dir));
    add("state.sync_interval_ms", ms(s.state.sync_interval));
    add("state.compact_bytes", s.state.compact_bytes.to_string());
    add("log.target", quoted(s.log.target.as_str()));
    add("log.level", quoted(&s.log.level));
    let f = &s.fanout;
    add("fanout.max_children", f.max_children.to_string());
    add("fanout.max_total", f.max_total.to_string());
    add("fanout.keep_children", f.keep_children.to_string());
    add("fanout.backend", optional(&f.backend));
    add("fanout.model", optional(&f.model));
    add("codex.home", path(&s.codex.home));
    add("codex.endpoint", optional(&s.codex.endpoint));
    add("codex.token_file", secret_file(&s.codex.token));
    add("codex.ca_file", optional_path(&s.codex.ca_file));
    add("claude.config_dir", path(&s.claude.config_dir));
    let o = &s.opencode;
    add("opencode.url", quoted(&o.url));
    add("opencode.username", quoted(&o.username));
    add("opencode.password_file", secret_file(&o.password));
    add("opencode.ca_file", optional_path(&o.ca_file));
    let n = &s.notify;
    let command: Vec<String> = n.command.iter().map(|c| quoted(c)).collect();
    add("notify.command", format!("[{}]", command.join(", ")));
    add("notify.desktop", quoted(n.desktop.as_str()));
    add(
        "notify.stuck_after_ms",
        n.stuck_after
            .map_or("0".to_string(), |d| d.as_millis().to_string()),
    );
    out
}

/// The report `reveille check` prints: which file was read, then one line
/// per key, `key = value` and its origin, in aligned columns.
pub fn render_check(loaded: &Loaded) -> String {
    let mut out = match &loaded.file {
        Some(f) => format!("# configuration file: {}\n", f.display()),
        None => {
            let looked: Vec<String> = loaded
                .looked_at
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            let looked = if looked.is_empty() {
                "nowhere to look: neither XDG_CONFIG_HOME nor HOME is set".to_string()
            } else {
                format!("looked for {}", looked.join(", "))
            };
            format!("# configuration file: none ({looked}; built-in defaults and environment)\n")
        }
    };
    let key_width = loaded
        .sources
        .iter()
        .map(|(k, _, _)| k.len())
        .max()
        .unwrap_or(0);
    let value_width = loaded
        .sources
        .iter()
        .map(|(_, v, _)| v.chars().count())
        .filter(|&w| w <= 48)
        .max()
        .unwrap_or(0);
    for (key, value, origin) in &loaded.sources {
        out.push_str(&format!(
            "{key:<key_width$} = {value:<value_width$}  # {origin}\n"
        ));
    }
    out
}

/// The directory keys whose path exists but is not a directory — a regular
/// file where the plans should be is not "missing yet", it is a mistake:
/// one error each, naming the key and where it was set. Paths that do not
/// exist are fine (the daemon waits for them), unless they are beneath
/// something that is not a directory: then they cannot appear.
pub fn not_directories(loaded: &Loaded) -> Vec<ConfigError> {
    let s = &loaded.settings;
    let dirs: [(&str, &Path); 6] = [
        ("project.plan_dir", &s.project.plan_dir),
        ("sessions.dir", &s.sessions.dir),
        ("events.beads_root", &s.events.beads_root),
        ("state.dir", &s.state.dir),
        ("codex.home", &s.codex.home),
        ("claude.config_dir", &s.claude.config_dir),
    ];
    dirs.into_iter()
        .filter_map(|(key, p)| {
            let message = if p.exists() {
                (!p.is_dir()).then(|| format!("is not a directory but {}", what_it_is(p)))?
            } else {
                // Missing is fine, unless something beneath a file.
                let blocker = p.ancestors().skip(1).find(|a| a.exists())?;
                (!blocker.is_dir()).then(|| {
                    format!(
                        "cannot appear: {} is not a directory but {}",
                        blocker.display(),
                        what_it_is(blocker)
                    )
                })?
            };
            Some(ConfigError {
                key: Some(key.to_string()),
                value: Some(path(p)),
                origin: loaded
                    .sources
                    .iter()
                    .find(|(k, _, _)| k == key)
                    .map(|(_, _, o)| o.clone()),
                message,
            })
        })
        .collect()
}

/// What a path that is not a directory is, in words.
pub fn what_it_is(path: &Path) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path).map(|m| m.file_type()) {
        Ok(t) if t.is_file() => "a regular file",
        Ok(t) if t.is_fifo() => "a named pipe",
        Ok(t) if t.is_socket() => "a socket",
        Ok(t) if t.is_char_device() || t.is_block_device() => "a device",
        Ok(_) => "not a directory",
        Err(_) => "gone",
    }
}
