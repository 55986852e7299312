//! The 9beads task tracker as reveille sees it: one line of the events log,
//! a mount's `ready` file, a bead file, the mount table (`mtab.rs`) — each
//! parsed from bytes already read
//! — and the rule for ids and mount names that will become path components.
//!
//! Everything here is a pure function of its input. Reading, tailing and
//! de-duplicating the log is the shell's job; deciding what to announce is
//! the engine's.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

use super::lines::{json_too_deep, quoted, LineError, MAX_JSON_DEPTH};

/// Longest events-log line accepted. Real events are a few hundred bytes; a
/// longer line is garbage or an attack, and parsing it would only cost time.
pub const MAX_EVENT_LINE: usize = 1 << 20;

/// Longest bead id or mount name accepted (a file name's limit on Linux).
pub const MAX_ID_LEN: usize = 255;

/// One event of the tracker's log, in either of the two shapes found in the
/// wild. Every id and mount name in here has passed [`valid_id`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrackerEvent {
    /// `created`: a bead was filed.
    Created { id: String, mount: String },
    /// `claimed` or the older `BeadClaimed`: someone took the bead.
    /// `assignee` is `None` when absent, null or empty.
    Claimed {
        id: String,
        mount: String,
        assignee: Option<String>,
    },
    /// `completed`: the bead is done.
    Completed { id: String, mount: String },
    /// `failed`: the bead's work failed.
    Failed { id: String, mount: String },
    /// `deleted`: the bead is gone.
    Deleted { id: String, mount: String },
    /// `updated`: something about the bead changed; re-read the `ready` file.
    Updated { id: String, mount: String },
    /// The older `BeadReady`: the bead entered its mount's ready set.
    Ready {
        id: String,
        mount: String,
        title: Option<String>,
        assignee: Option<String>,
    },
    /// `mount`: a project's beads were mounted under `name`. `cwd` is the
    /// project directory as the tracker reports it (not validated: it is a
    /// path, never joined onto one of ours).
    Mount { name: String, cwd: Option<String> },
    /// `umount`: the mount `name` went away.
    Umount { name: String },
    /// A well-formed event of a type reveille does not know: not an error,
    /// the tracker may grow new types.
    Unknown { type_name: String },
}

impl TrackerEvent {
    /// The mount a bead event is about (`None` for `mount`, `umount` and
    /// unknown types, which are about mounts or nothing).
    pub fn mount(&self) -> Option<&str> {
        match self {
            TrackerEvent::Created { mount, .. }
            | TrackerEvent::Claimed { mount, .. }
            | TrackerEvent::Completed { mount, .. }
            | TrackerEvent::Failed { mount, .. }
            | TrackerEvent::Deleted { mount, .. }
            | TrackerEvent::Updated { mount, .. }
            | TrackerEvent::Ready { mount, .. } => Some(mount),
            TrackerEvent::Mount { .. }
            | TrackerEvent::Umount { .. }
            | TrackerEvent::Unknown { .. } => None,
        }
    }
}

/// Why one events-log line could not be read. Each is one journal entry;
/// none stops the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventError {
    /// An empty or all-blank line: harmless, callers may skip it silently.
    Empty,
    /// Longer than [`MAX_EVENT_LINE`]; `len` is the line's length in bytes.
    TooLong { len: usize },
    /// Nested deeper than [`MAX_JSON_DEPTH`]: rejected before parsing.
    TooDeep,
    /// Not UTF-8, or not JSON.
    Malformed(String),
    /// Valid JSON that is not an event: not an object, a missing field, a
    /// field of the wrong type.
    WrongShape(String),
    /// An id or mount name that must not become a path component.
    BadName { field: &'static str, value: String },
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventError::Empty => f.write_str("empty line"),
            EventError::TooLong { len } => {
                write!(f, "line of {len} bytes exceeds {MAX_EVENT_LINE}")
            }
            EventError::TooDeep => write!(f, "JSON nested deeper than {MAX_JSON_DEPTH}"),
            EventError::Malformed(m) => write!(f, "malformed: {m}"),
            EventError::WrongShape(m) => write!(f, "not an event: {m}"),
            EventError::BadName { field, value } => {
                write!(f, "invalid {field} {}", quoted(value))
            }
        }
    }
}

impl std::error::Error for EventError {}

/// Parse one line of the events log, without its `\n` (a trailing `\r` is
/// tolerated).
pub fn parse_event(line: &[u8]) -> Result<TrackerEvent, EventError> {
    if line.len() > MAX_EVENT_LINE {
        return Err(EventError::TooLong { len: line.len() });
    }
    let too_deep = json_too_deep(line, MAX_JSON_DEPTH);
    if !too_deep {
        // serde_json checks UTF-8 and blankness on its way.
        if let Some(event) = parse_flat(line) {
            return Ok(event);
        }
    }
    let text =
        std::str::from_utf8(line).map_err(|e| EventError::Malformed(format!("not UTF-8: {e}")))?;
    if text.trim().is_empty() {
        return Err(EventError::Empty);
    }
    if too_deep {
        return Err(EventError::TooDeep);
    }
    parse_value(text)
}

/// The fields a current-shape event is read from, borrowed from the line
/// where it has no escapes. Other fields are skipped (and still checked to
/// be JSON).
#[derive(serde::Deserialize)]
struct Flat<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    mount: Option<Cow<'a, str>>,
    #[serde(borrow)]
    assignee: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
}

/// The fast path for the common case — a valid current-shape event — with
/// no `serde_json::Value` tree and its per-key allocations (it made the
/// events-log reader about twice as fast; see doc/PERFORMANCE.md). It
/// answers only when the line is a valid event; anything else (the older
/// envelope, a wrong type, a missing or invalid name, a duplicate key) is
/// left to [`parse_value`], which gives the error, so both paths always
/// agree (a test checks it).
fn parse_flat(line: &[u8]) -> Option<TrackerEvent> {
    let f: Flat = serde_json::from_slice(line).ok()?;
    let some = |v: &Option<Cow<str>>| v.as_deref().filter(|s| !s.is_empty()).map(str::to_string);
    let valid = |v: &Option<Cow<str>>| some(v).filter(|s| valid_id(s));
    let id_mount = || Some((valid(&f.id)?, valid(&f.mount)?));
    let event = match f.kind.as_deref()? {
        "created" => id_mount().map(|(id, mount)| TrackerEvent::Created { id, mount })?,
        "completed" => id_mount().map(|(id, mount)| TrackerEvent::Completed { id, mount })?,
        "failed" => id_mount().map(|(id, mount)| TrackerEvent::Failed { id, mount })?,
        "deleted" => id_mount().map(|(id, mount)| TrackerEvent::Deleted { id, mount })?,
        "updated" => id_mount().map(|(id, mount)| TrackerEvent::Updated { id, mount })?,
        "claimed" => {
            let (id, mount) = id_mount()?;
            TrackerEvent::Claimed {
                id,
                mount,
                assignee: some(&f.assignee),
            }
        }
        "mount" | "umount" => {
            // `name`, else `mount`: the first one present must be valid.
            let name = match some(&f.name) {
                Some(n) => Some(n).filter(|n| valid_id(n))?,
                None => valid(&f.mount)?,
            };
            if f.kind.as_deref() == Some("mount") {
                TrackerEvent::Mount {
                    name,
                    cwd: some(&f.cwd),
                }
            } else {
                TrackerEvent::Umount { name }
            }
        }
        "BeadReady" | "BeadClaimed" => return None,
        other => TrackerEvent::Unknown {
            type_name: other.to_string(),
        },
    };
    Some(event)
}

/// The general path: the line as a `serde_json::Value`, with an error
/// naming what is wrong.
fn parse_value(text: &str) -> Result<TrackerEvent, EventError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| EventError::Malformed(e.to_string()))?;
    let Value::Object(obj) = value else {
        return Err(shape("not a JSON object"));
    };
    let kind = match obj.get("type") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(shape("`type` is not a string")),
        None => return Err(shape("no `type` field")),
    };
    let current = |make: fn(String, String) -> TrackerEvent| -> Result<_, EventError> {
        Ok(make(name(&obj, "id")?, name(&obj, "mount")?))
    };
    match kind {
        "created" => current(|id, mount| TrackerEvent::Created { id, mount }),
        "completed" => current(|id, mount| TrackerEvent::Completed { id, mount }),
        "failed" => current(|id, mount| TrackerEvent::Failed { id, mount }),
        "deleted" => current(|id, mount| TrackerEvent::Deleted { id, mount }),
        "updated" => current(|id, mount| TrackerEvent::Updated { id, mount }),
        "claimed" => Ok(TrackerEvent::Claimed {
            id: name(&obj, "id")?,
            mount: name(&obj, "mount")?,
            assignee: opt_string(&obj, "assignee")?,
        }),
        "mount" => Ok(TrackerEvent::Mount {
            name: mount_name(&obj)?,
            cwd: opt_string(&obj, "cwd")?,
        }),
        "umount" => Ok(TrackerEvent::Umount {
            name: mount_name(&obj)?,
        }),
        "BeadReady" => {
            let data = envelope_data(&obj)?;
            Ok(TrackerEvent::Ready {
                id: first_name(data, &["id", "bead_id"])?,
                mount: envelope_mount(&obj, data)?,
                title: opt_string(data, "title")?,
                assignee: opt_string(data, "assignee")?,
            })
        }
        "BeadClaimed" => {
            let data = envelope_data(&obj)?;
            Ok(TrackerEvent::Claimed {
                id: first_name(data, &["bead_id", "id"])?,
                mount: envelope_mount(&obj, data)?,
                assignee: opt_string(data, "assignee")?,
            })
        }
        other => Ok(TrackerEvent::Unknown {
            type_name: other.to_string(),
        }),
    }
}

fn shape(message: impl Into<String>) -> EventError {
    EventError::WrongShape(message.into())
}

/// A string field that may be absent, null or empty (all `None`).
fn opt_string(obj: &Map<String, Value>, field: &str) -> Result<Option<String>, EventError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(shape(format!("`{field}` is not a string"))),
    }
}

/// A required id or mount name, checked with [`valid_id`].
fn name(obj: &Map<String, Value>, field: &'static str) -> Result<String, EventError> {
    first_name(obj, &[field])
}

/// The first of `fields` present, required, checked with [`valid_id`].
fn first_name(obj: &Map<String, Value>, fields: &[&'static str]) -> Result<String, EventError> {
    for &field in fields {
        if let Some(value) = opt_string(obj, field)? {
            return checked(field, value);
        }
    }
    Err(shape(format!("no `{}` field", fields.join("` or `"))))
}

fn checked(field: &'static str, value: String) -> Result<String, EventError> {
    if valid_id(&value) {
        Ok(value)
    } else {
        Err(EventError::BadName { field, value })
    }
}

/// `mount`/`umount` carry `name`; tolerate `mount` as seen in other events.
fn mount_name(obj: &Map<String, Value>) -> Result<String, EventError> {
    first_name(obj, &["name", "mount"])
}

fn envelope_data(obj: &Map<String, Value>) -> Result<&Map<String, Value>, EventError> {
    match obj.get("data") {
        Some(Value::Object(data)) => Ok(data),
        Some(_) => Err(shape("`data` is not an object")),
        None => Err(shape("no `data` field")),
    }
}

/// The older envelope names its mount in `data.mount`, or in `source` as
/// `beads/<mount>`; `data` wins because it is the more specific.
fn envelope_mount(
    obj: &Map<String, Value>,
    data: &Map<String, Value>,
) -> Result<String, EventError> {
    if let Some(mount) = opt_string(data, "mount")? {
        return checked("mount", mount);
    }
    match opt_string(obj, "source")? {
        Some(source) => match source.strip_prefix("beads/") {
            Some(mount) => checked("mount", mount.to_string()),
            None => Err(shape(format!(
                "`source` {} is not beads/<mount>",
                quoted(&source)
            ))),
        },
        None => Err(shape("no `data.mount` or `source` field")),
    }
}

/// Whether `s` may be used as a bead id or mount name, i.e. as one path
/// component under `beads_root` or the state directory.
///
/// Accepted: 1..=255 bytes; no `/`, no NUL or other control character
/// (tabs and newlines would also break the `ready` format and log lines);
/// no leading `.` — which rules out `.` and `..` and keeps ids from looking
/// like the hidden, temp and swap files the watchers ignore. Real ids
/// (`bd-a1b2`) and mount names (project names) are never affected.
pub fn valid_id(s: &str) -> bool {
    // The shared path-component rule, and no leading dot: a bead file
    // named `.x` would be hidden, and no tracker id starts with one.
    super::session::check_name(s).is_ok() && !s.starts_with('.')
}

/// One row of a 9beads list file: `<mount>/ready`, `<mount>/list`,
/// `<mount>/deferred`, `<mount>/closed` or their root versions (9beads'
/// `readMountList` in `p9/server.go` writes them all the same way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyRow {
    /// The bead id, checked with [`valid_id`].
    pub id: String,
    /// As the tracker wrote it (`open`, `in_progress`, `deferred`,
    /// `closed`, …); kept for the engine to decide, not interpreted here.
    pub status: String,
    /// How many dependencies the bead has, of any kind and whether or not
    /// they are closed (9beads counts `GetDependencies`); 0 for the `-`
    /// 9beads writes when there are none. A ready bead can have some.
    pub blockers: u32,
    /// `None` for `-` (unassigned). 9beads' `claim` without a name assigns
    /// the literal `9beads`, which is kept as written.
    pub assignee: Option<String>,
    /// Last-update stamp (`YYYY-MM-DD` from 9beads), opaque; `None` for `-`.
    pub updated: Option<String>,
    /// The rest of the line, tabs included; control characters other than
    /// tab (a NUL would end a prompt on a `nul`-framed pipe) become spaces,
    /// and a title written with newlines in it comes back joined by spaces.
    /// Empty for `-`.
    pub title: String,
}

/// Parse one of 9beads' list files (see [`ReadyRow`]): one bead per line,
/// tab-separated `id status blockers assignee updated title`. Blank lines
/// are skipped. 9beads writes a title verbatim, so a title with a newline
/// in it continues on the next line: a line with no tab right after a row
/// is that row's title going on. A row with too few fields, a blockers
/// count that is neither `-` nor a number, or an invalid id is a
/// [`LineError`] and is dropped; the other rows are still returned.
pub fn parse_ready(text: &str) -> (Vec<ReadyRow>, Vec<LineError>) {
    let mut rows: Vec<ReadyRow> = Vec::new();
    let mut errors = Vec::new();
    // Whether the previous line was a row whose title may go on.
    let mut open_row = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() {
            open_row = false;
            continue;
        }
        if open_row && !line.contains('\t') {
            if let Some(row) = rows.last_mut() {
                row.title.push(' ');
                row.title.push_str(&clean_title(line));
            }
            continue;
        }
        match parse_ready_row(line) {
            Ok(row) => {
                rows.push(row);
                open_row = true;
            }
            Err(message) => {
                errors.push(LineError::new(i + 1, message));
                open_row = false;
            }
        }
    }
    (rows, errors)
}

fn parse_ready_row(line: &str) -> Result<ReadyRow, String> {
    let fields: Vec<&str> = line.splitn(6, '\t').collect();
    let [id, status, blockers, assignee, updated, title] = fields[..] else {
        return Err(format!(
            "expected 6 tab-separated fields (id status blockers assignee updated title), found {}",
            fields.len()
        ));
    };
    if !valid_id(id) {
        return Err(format!("invalid bead id {}", quoted(id)));
    }
    let blockers = match blockers.trim() {
        // 9beads writes `-` for a bead with no dependencies at all.
        "-" | "" => 0,
        n => n.parse::<u32>().map_err(|_| {
            format!(
                "blockers count {} is neither `-` nor a number",
                quoted(blockers)
            )
        })?,
    };
    let dash = |s: &str| (s != "-" && !s.is_empty()).then(|| s.to_string());
    Ok(ReadyRow {
        id: id.to_string(),
        status: status.to_string(),
        blockers,
        assignee: dash(assignee),
        updated: dash(updated),
        title: dash(title).map(|t| clean_title(&t)).unwrap_or_default(),
    })
}

/// A title as a prompt can carry it: control characters but tab become
/// spaces.
fn clean_title(title: &str) -> String {
    title
        .chars()
        .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
        .collect()
}

/// A bead file, `<beads_root>/<mount>/<id>`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BeadFile {
    /// Required; checked with [`valid_id`].
    pub id: String,
    /// Empty when absent.
    pub title: String,
    /// Empty when absent.
    pub status: String,
    /// The parent bead's id, if any.
    pub parent: Option<String>,
    pub labels: Vec<String>,
    /// Ids of the beads blocking this one.
    pub blockers: Vec<String>,
    /// `None` when absent, empty, `~` or `null`.
    pub assignee: Option<String>,
    /// Everything after the closing `---` line.
    pub body: String,
}

/// Parse a bead file: YAML front matter between `---` lines, then the body.
///
/// Only the subset 9beads writes is understood: `key: value` scalars (plain
/// or quoted), flow lists `[a, "b"]` and block lists (`key:` followed by
/// `  - item` lines); `#` comment lines and unknown keys are ignored. A
/// scalar where a list is expected is a one-item list.
pub fn parse_bead_file(text: &str) -> Result<BeadFile, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => return Err("no front matter: the first line is not `---`".into()),
    }
    let mut bead = BeadFile::default();
    let mut id = None;
    // The list key whose `- item` lines we are collecting, if any.
    let mut open_list: Option<&str> = None;
    let mut closed = false;
    for (n, raw) in lines.by_ref().enumerate() {
        let line = raw.trim_end();
        if line == "---" {
            closed = true;
            break;
        }
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed
            .strip_prefix("- ")
            .or((trimmed == "-").then_some(""))
        {
            let Some(key) = open_list else {
                return Err(format!("line {}: list item outside a list", n + 2));
            };
            if let Some(list) = list_field(&mut bead, key) {
                let item = unquote(item.trim());
                if !item.is_empty() {
                    list.push(item.to_string());
                }
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err(format!("line {}: expected `key: value`", n + 2));
        };
        let (key, value) = (key.trim(), value.trim());
        open_list = value.is_empty().then_some(key);
        match key {
            "id" => id = scalar(value),
            "title" => bead.title = scalar(value).unwrap_or_default(),
            "status" => bead.status = scalar(value).unwrap_or_default(),
            "parent" => bead.parent = scalar(value),
            "assignee" => bead.assignee = scalar(value),
            "labels" => bead.labels = list(value),
            "blockers" => bead.blockers = list(value),
            _ => {}
        }
    }
    if !closed {
        return Err("front matter is not closed by a `---` line".into());
    }
    bead.body = lines.collect();
    match id {
        Some(id) if valid_id(&id) => bead.id = id,
        Some(id) => return Err(format!("invalid bead id {}", quoted(&id))),
        None => return Err("front matter has no `id`".into()),
    }
    Ok(bead)
}

fn list_field<'a>(bead: &'a mut BeadFile, key: &str) -> Option<&'a mut Vec<String>> {
    match key {
        "labels" => Some(&mut bead.labels),
        "blockers" => Some(&mut bead.blockers),
        _ => None,
    }
}

/// A scalar value; `None` for empty, `~` and `null`.
fn scalar(value: &str) -> Option<String> {
    let v = unquote(value);
    (!v.is_empty() && (v != "~" && v != "null" || value.starts_with(['"', '\''])))
        .then(|| v.to_string())
}

/// A flow list `[a, b]`, or a scalar as a one-item list.
fn list(value: &str) -> Vec<String> {
    let inner = match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        Some(inner) => inner,
        None => return scalar(value).into_iter().collect(),
    };
    inner
        .split(',')
        .map(|item| unquote(item.trim()))
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect()
}

fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

mod mtab;
pub use mtab::{parse_mtab, MtabRow};

#[cfg(test)]
mod tests;
