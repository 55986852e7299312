//! Plain beads: the issues of a `.beads/issues.jsonl`, and which of them are
//! ready by the rule `bd ready` applies (SPEC §1). Pure: the file's text and
//! the current time come in as arguments.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::lines::{quoted, LineError};
use super::timestamp::parse_timestamp;
use super::tracker::valid_id;

/// Issue types `bd ready` never offers: containers and coordination records,
/// not work an agent picks up.
pub const EXCLUDED_TYPES: [&str; 8] = [
    "epic",
    "message",
    "agent",
    "molecule",
    "gate",
    "merge-request",
    "role",
    "rig",
];

/// An issue's status. The rules name only a few; any other is kept as
/// written, so `reveille ready --json` shows it unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeadStatus {
    Open,
    Closed,
    Pinned,
    Tombstone,
    /// `in_progress`, `blocked`, `deferred`, `hooked`, … (or absent: empty).
    Other(String),
}

impl BeadStatus {
    pub fn as_str(&self) -> &str {
        match self {
            BeadStatus::Open => "open",
            BeadStatus::Closed => "closed",
            BeadStatus::Pinned => "pinned",
            BeadStatus::Tombstone => "tombstone",
            BeadStatus::Other(s) => s,
        }
    }

    /// Closed or deleted: a task announced for it leaves the announced set.
    pub fn is_gone(&self) -> bool {
        matches!(self, BeadStatus::Closed | BeadStatus::Tombstone)
    }
}

impl From<String> for BeadStatus {
    fn from(s: String) -> BeadStatus {
        match s.as_str() {
            "open" => BeadStatus::Open,
            "closed" => BeadStatus::Closed,
            "pinned" => BeadStatus::Pinned,
            "tombstone" => BeadStatus::Tombstone,
            _ => BeadStatus::Other(s),
        }
    }
}

impl From<&str> for BeadStatus {
    fn from(s: &str) -> BeadStatus {
        BeadStatus::from(s.to_string())
    }
}

impl PartialEq<&str> for BeadStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for BeadStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One issue of `issues.jsonl`, reduced to what readiness and prompts need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// Checked with [`valid_id`]; unique within one parse.
    pub id: String,
    pub title: String,
    /// What the file says of the issue (any other word kept verbatim).
    pub status: BeadStatus,
    /// Empty when absent.
    pub issue_type: String,
    /// `None` when absent, null or empty.
    pub assignee: Option<String>,
    pub pinned: bool,
    pub ephemeral: bool,
    /// `defer_until` in unix seconds; `None` when absent, empty or
    /// unparseable (the latter reported as a [`LineError`]).
    pub defer_until: Option<i64>,
    /// The dependencies listed on this issue's line.
    pub dependencies: Vec<Dependency>,
    /// 1-based line of the issue in the file, for messages.
    pub line: usize,
}

/// One edge of the graph: `issue_id` waits on `depends_on_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dependency {
    /// The waiting issue (the containing issue when the field is absent).
    pub issue_id: String,
    /// Its blocker, parent or waited-for issue.
    pub depends_on_id: String,
    pub kind: DepKind,
}

/// The dependency types that matter to readiness; any other never blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum DepKind {
    /// `blocks`, and an absent `type` (bd's default for `bd dep add`).
    Blocks,
    ConditionalBlocks,
    /// `issue_id` is a child of `depends_on_id`.
    ParentChild,
    WaitsFor,
    /// `related`, `discovered-from`, … : never blocks.
    Other(String),
}

impl DepKind {
    fn from_type(kind: Option<&str>) -> DepKind {
        match kind {
            None | Some("blocks") => DepKind::Blocks,
            Some("conditional-blocks") => DepKind::ConditionalBlocks,
            Some("parent-child") => DepKind::ParentChild,
            Some("waits-for") => DepKind::WaitsFor,
            Some(other) => DepKind::Other(other.to_string()),
        }
    }
}

impl From<DepKind> for String {
    fn from(kind: DepKind) -> String {
        match kind {
            DepKind::Blocks => "blocks".into(),
            DepKind::ConditionalBlocks => "conditional-blocks".into(),
            DepKind::ParentChild => "parent-child".into(),
            DepKind::WaitsFor => "waits-for".into(),
            DepKind::Other(s) => s,
        }
    }
}

/// A line as serde sees it. Every field is optional and null-tolerant so
/// that a sparse or slightly odd export still parses; presence is checked
/// by hand afterwards. Strings borrow from the line where they can: a big
/// file is mostly fields we read once and drop.
#[derive(Deserialize)]
struct RawIssue<'a> {
    #[serde(rename = "_type", borrow)]
    record_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    title: Option<Cow<'a, str>>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    issue_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    assignee: Option<Cow<'a, str>>,
    pinned: Option<bool>,
    ephemeral: Option<bool>,
    #[serde(borrow)]
    defer_until: Option<Cow<'a, str>>,
    #[serde(borrow)]
    dependencies: Option<Vec<RawDependency<'a>>>,
}

#[derive(Deserialize)]
struct RawDependency<'a> {
    #[serde(borrow)]
    issue_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    depends_on_id: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
}

/// Only the record type, for lines that failed as issues: a non-issue
/// record of a shape we do not know is skipped, not reported.
#[derive(Deserialize)]
struct RecordType {
    #[serde(rename = "_type")]
    record_type: Option<serde_json::Value>,
}

/// Parse `issues.jsonl`, one JSON object per line.
///
/// - Blank lines are skipped; so are records whose `_type` is present and
///   not `issue`.
/// - A malformed line, one without a valid `id`, or a dependency without
///   `depends_on_id` is a [`LineError`]; the line (or dependency) is
///   dropped and the rest still parse.
/// - An unparseable `defer_until` is a [`LineError`] too, but the issue is
///   kept, not deferred: a typo must not hide work forever.
/// - A repeated id: the later line replaces the earlier one (keeping the
///   earlier position) and is reported.
pub fn parse_issues(text: &str) -> (Vec<Issue>, Vec<LineError>) {
    let mut issues: Vec<Issue> = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        if let Some(issue) = parse_issue_line(raw, i + 1, &mut errors) {
            issues.push(issue);
        }
    }
    merge_duplicates(&mut issues, &mut errors);
    (issues, errors)
}

/// Later lines with an id already seen replace the first one in place.
/// Done as a pass over the finished list so the map can borrow the ids.
fn merge_duplicates(issues: &mut Vec<Issue>, errors: &mut Vec<LineError>) {
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(issues.len());
    let mut replaced: Vec<(usize, usize)> = Vec::new();
    for (i, issue) in issues.iter().enumerate() {
        if let Some(&at) = first.get(issue.id.as_str()) {
            replaced.push((at, i));
        } else {
            first.insert(&issue.id, i);
        }
    }
    if replaced.is_empty() {
        return;
    }
    let mut keep = vec![true; issues.len()];
    for (at, later) in replaced {
        let issue = issues[later].clone();
        errors.push(LineError::new(
            issue.line,
            format!(
                "duplicate id {:?} (first on line {}): this line wins",
                issue.id, issues[at].line
            ),
        ));
        issues[at] = issue;
        keep[later] = false;
    }
    errors.sort_by_key(|e| e.line);
    let mut keep = keep.into_iter();
    issues.retain(|_| keep.next().unwrap_or(true));
}

/// One line to an issue; `None` when it is skipped or dropped (the reason,
/// if worth telling, pushed onto `errors`).
fn parse_issue_line(raw: &str, line: usize, errors: &mut Vec<LineError>) -> Option<Issue> {
    let issue: RawIssue<'_> = match serde_json::from_str(raw) {
        Ok(issue) => issue,
        Err(e) => {
            let other_record = serde_json::from_str::<RecordType>(raw)
                .is_ok_and(|r| r.record_type.is_some_and(|t| t != "issue"));
            if !other_record {
                errors.push(LineError::new(line, format!("not an issue: {e}")));
            }
            return None;
        }
    };
    if issue.record_type.as_deref().is_some_and(|t| t != "issue") {
        return None;
    }
    let id = match issue.id {
        Some(id) if valid_id(&id) => id.into_owned(),
        Some(id) => {
            errors.push(LineError::new(
                line,
                format!("invalid issue id {}", quoted(&id)),
            ));
            return None;
        }
        None => {
            errors.push(LineError::new(line, "issue has no `id`"));
            return None;
        }
    };
    let defer_until = match issue.defer_until.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => {
            let parsed = parse_timestamp(s);
            if parsed.is_none() {
                errors.push(LineError::new(
                    line,
                    format!(
                        "{id}: defer_until {} is not a date or RFC 3339 time; ignored",
                        quoted(s)
                    ),
                ));
            }
            parsed
        }
    };
    let mut dependencies = Vec::new();
    for dep in issue.dependencies.unwrap_or_default() {
        let Some(depends_on_id) = dep.depends_on_id.filter(|d| !d.is_empty()) else {
            errors.push(LineError::new(
                line,
                format!("{id}: a dependency has no `depends_on_id`; ignored"),
            ));
            continue;
        };
        dependencies.push(Dependency {
            issue_id: dep
                .issue_id
                .filter(|w| !w.is_empty())
                .map_or_else(|| id.clone(), Cow::into_owned),
            depends_on_id: depends_on_id.into_owned(),
            kind: DepKind::from_type(dep.kind.as_deref()),
        });
    }
    let owned = |s: Option<Cow<'_, str>>| s.map(Cow::into_owned).unwrap_or_default();
    Some(Issue {
        title: owned(issue.title),
        status: owned(issue.status).into(),
        issue_type: owned(issue.issue_type),
        assignee: issue
            .assignee
            .filter(|a| !a.is_empty())
            .map(Cow::into_owned),
        pinned: issue.pinned.unwrap_or(false),
        ephemeral: issue.ephemeral.unwrap_or(false),
        defer_until,
        dependencies,
        line,
        id,
    })
}

/// Indices (in file order) of the issues `bd ready` would list at
/// `now_unix`: status `open`, not pinned, not ephemeral, not an
/// [`EXCLUDED_TYPES`] type, `defer_until` absent or not after now, and not
/// blocked.
///
/// Blocked means: a `blocks`/`conditional-blocks` dependency on an issue
/// whose status is neither `closed` nor `pinned`; or a `parent-child`
/// parent that is blocked (transitively); or a `waits-for` target that has
/// a child (an issue with a `parent-child` dependency on it) not `closed`.
///
/// Dependencies on ids that are not in the file do not block (the other
/// end may live in another file or have been deleted); an issue with status
/// `tombstone` counts as not in the file, as bd treats deleted issues.
/// Dependencies are honoured whichever line lists them, by `issue_id`.
/// O(issues + dependencies); parent cycles cannot loop.
pub fn ready(issues: &[Issue], now_unix: i64) -> Vec<usize> {
    let blocked = blocked(issues);
    issues
        .iter()
        .enumerate()
        .filter(|&(i, issue)| !blocked[i] && is_candidate(issue, now_unix))
        .map(|(i, _)| i)
        .collect()
}

/// Everything but blocking: the per-issue half of the rule.
fn is_candidate(issue: &Issue, now_unix: i64) -> bool {
    issue.status == BeadStatus::Open
        && !issue.pinned
        && !issue.ephemeral
        && !EXCLUDED_TYPES.contains(&issue.issue_type.as_str())
        && issue.defer_until.is_none_or(|t| t <= now_unix)
}

/// Which issues are blocked, by index: direct blocks first, then spread
/// from every blocked parent to its children, breadth first, each issue
/// visited once — so cycles terminate and the cost stays linear.
fn blocked(issues: &[Issue]) -> Vec<bool> {
    let index: HashMap<&str, usize> = issues
        .iter()
        .enumerate()
        .filter(|(_, issue)| issue.status != BeadStatus::Tombstone)
        .map(|(i, issue)| (issue.id.as_str(), i))
        .collect();
    let n = issues.len();
    let mut blocked = vec![false; n];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut has_open_child = vec![false; n];
    let mut waits: Vec<(usize, usize)> = Vec::new();
    let edges = issues.iter().flat_map(|issue| &issue.dependencies);
    for dep in edges {
        let (Some(&waiter), Some(&target)) = (
            index.get(dep.issue_id.as_str()),
            index.get(dep.depends_on_id.as_str()),
        ) else {
            continue;
        };
        match dep.kind {
            DepKind::Blocks | DepKind::ConditionalBlocks => {
                let status = &issues[target].status;
                if !matches!(status, BeadStatus::Closed | BeadStatus::Pinned) {
                    blocked[waiter] = true;
                }
            }
            DepKind::ParentChild => {
                children[target].push(waiter);
                if issues[waiter].status != BeadStatus::Closed {
                    has_open_child[target] = true;
                }
            }
            DepKind::WaitsFor => waits.push((waiter, target)),
            DepKind::Other(_) => {}
        }
    }
    for (waiter, target) in waits {
        if has_open_child[target] {
            blocked[waiter] = true;
        }
    }
    let mut queue: VecDeque<usize> = (0..n).filter(|&i| blocked[i]).collect();
    while let Some(parent) = queue.pop_front() {
        for &child in &children[parent] {
            if !blocked[child] {
                blocked[child] = true;
                queue.push_back(child);
            }
        }
    }
    blocked
}

/// `reveille ready issues.jsonl`: `id<TAB>title` per ready issue. Tabs and
/// line breaks in a title become spaces so each issue stays one line.
pub fn ready_lines(issues: &[Issue], ready: &[usize]) -> String {
    let mut out = String::new();
    for issue in ready.iter().filter_map(|&i| issues.get(i)) {
        out.push_str(&issue.id);
        out.push('\t');
        out.extend(
            issue
                .title
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c }),
        );
        out.push('\n');
    }
    out
}

/// One entry of `reveille ready issues.jsonl --json`.
#[derive(Serialize)]
struct ReadyJson<'a> {
    id: &'a str,
    title: &'a str,
    status: &'a str,
    issue_type: &'a str,
    assignee: Option<&'a str>,
    line: usize,
}

/// `reveille ready issues.jsonl --json`: one JSON array of
/// `{id, title, status, issue_type, assignee, line}`, then a newline.
pub fn ready_json(issues: &[Issue], ready: &[usize]) -> String {
    let rows: Vec<ReadyJson> = ready
        .iter()
        .filter_map(|&i| issues.get(i))
        .map(|issue| ReadyJson {
            id: &issue.id,
            title: &issue.title,
            status: issue.status.as_str(),
            issue_type: &issue.issue_type,
            assignee: issue.assignee.as_deref(),
            line: issue.line,
        })
        .collect();
    // Serialising strings and integers into a String cannot fail.
    let mut out = serde_json::to_string(&rows).unwrap_or_else(|_| "[]".to_string());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests;
