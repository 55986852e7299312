//! The plan-file name grammar: which files in a plan directory are plans, and
//! the identity that survives the `__todo` → `__wip` → `__done` renames.
//!
//! `<stamp>_<uid>--<slug>__<state>.md`, or `<stem>.plan.json`. Everything else
//! — debug logs, editor swap and temp files — is not a plan, so a watcher can
//! drop its events without reading it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::plan::PlanFormat;

/// The filesystem-level state a markdown plan's name carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileState {
    Todo,
    Wip,
    Done,
    Abandoned,
}

impl FileState {
    /// The suffix as it appears in file names.
    pub fn as_str(self) -> &'static str {
        match self {
            FileState::Todo => "todo",
            FileState::Wip => "wip",
            FileState::Done => "done",
            FileState::Abandoned => "abandoned",
        }
    }

    fn parse(s: &str) -> Option<FileState> {
        match s {
            "todo" => Some(FileState::Todo),
            "wip" => Some(FileState::Wip),
            "done" => Some(FileState::Done),
            "abandoned" => Some(FileState::Abandoned),
            _ => None,
        }
    }
}

/// A markdown plan's file name, taken apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlanName {
    /// `YYYYMMDDTHHMMSS`, digits checked, not the calendar.
    pub stamp: String,
    /// Eight lowercase hex digits.
    pub uid: String,
    /// `[a-z0-9-]*`; may be empty. Not part of the identity.
    pub slug: String,
    /// The lifecycle suffix. Not part of the identity.
    pub state: FileState,
}

impl PlanName {
    /// `<stamp>_<uid>`: the plan's identity, unchanged by renames that touch
    /// only the slug or the state.
    pub fn id(&self) -> String {
        format!("{}_{}", self.stamp, self.uid)
    }

    /// The file name this plan has in `state`, with the same stamp, uid and slug.
    pub fn file_name(&self) -> String {
        format!(
            "{}_{}--{}__{}.md",
            self.stamp,
            self.uid,
            self.slug,
            self.state.as_str()
        )
    }
}

/// A file in a plan directory that is a plan.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PlanFile {
    /// A checklist written by the planning tool.
    Markdown(PlanName),
    /// A structured `<stem>.plan.json`; it has no lifecycle suffix.
    Json { stem: String },
}

impl PlanFile {
    /// Which parser the file needs.
    pub fn format(&self) -> PlanFormat {
        match self {
            PlanFile::Markdown(_) => PlanFormat::Markdown,
            PlanFile::Json { .. } => PlanFormat::Json,
        }
    }

    /// The key a plan is tracked under. Markdown: `<stamp>_<uid>`. JSON: the
    /// whole file name, which contains a dot and so never collides with a
    /// markdown identity.
    pub fn identity(&self) -> String {
        match self {
            PlanFile::Markdown(name) => name.id(),
            PlanFile::Json { stem } => format!("{stem}{JSON_SUFFIX}"),
        }
    }
}

const JSON_SUFFIX: &str = ".plan.json";

/// Decides whether `file_name` (a bare name, not a path) is a plan.
///
/// Editor and tool leftovers are refused before the grammar is tried, so that
/// e.g. `.x.plan.json.swp` or `x.plan.json~` never reach a parser half-written.
pub fn classify(file_name: &str) -> Option<PlanFile> {
    if is_scratch(file_name) {
        return None;
    }
    if let Some(stem) = file_name.strip_suffix(JSON_SUFFIX) {
        return (!stem.is_empty()).then(|| PlanFile::Json {
            stem: stem.to_string(),
        });
    }
    parse_markdown_name(file_name).map(PlanFile::Markdown)
}

/// Hidden files (vim `.x.swp`, emacs `.#x` lock links), backups (`x~`),
/// emacs autosaves (`#x#`), temp files, vim's `4913` write probe, and
/// anything that could not be a single path component.
fn is_scratch(name: &str) -> bool {
    const TEMP_SUFFIXES: [&str; 6] = [".tmp", ".swp", ".swx", ".swo", ".bak", ".part"];
    name.is_empty()
        || name.starts_with('.')
        || name.starts_with('#')
        || name.ends_with('~')
        || name.contains(['/', '\0'])
        || name == "4913"
        || TEMP_SUFFIXES.iter().any(|s| name.ends_with(s))
}

fn parse_markdown_name(name: &str) -> Option<PlanName> {
    markdown_parts(name).map(|(stamp, uid, slug, state)| PlanName {
        stamp: stamp.to_string(),
        uid: uid.to_string(),
        slug: slug.to_string(),
        state,
    })
}

/// A markdown plan name's stamp, uid, slug and state, borrowed.
fn markdown_parts(name: &str) -> Option<(&str, &str, &str, FileState)> {
    let rest = name.strip_suffix(".md")?;
    // `rsplit_once("__")` without a substring search: neither the state
    // nor the slug holds a `_`, so the state follows the last `_`, which
    // must be the second of a pair.
    let cut = rest.rfind('_')?;
    if cut == 0 || rest.as_bytes()[cut - 1] != b'_' {
        return None;
    }
    let (rest, state) = (&rest[..cut - 1], &rest[cut + 1..]);
    let state = FileState::parse(state)?;
    // The stamp and uid have fixed widths, so the first `--` after them starts
    // the slug even when the slug itself contains `--`.
    let (head, slug) = (rest.get(..24)?, rest.get(24..)?);
    let slug = slug.strip_prefix("--")?;
    let (stamp, uid) = head.split_once('_')?;
    let valid = is_stamp(stamp)
        && uid.len() == 8
        && uid.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && slug
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'));
    valid.then_some((stamp, uid, slug, state))
}

/// A path's directory and file name (`Path::parent`, `Path::file_name`),
/// by one scan for the last `/` where that is plainly right: every
/// changed file goes through this, and `Path` parses components for each.
/// `None`: no file name, or one that is not UTF-8 (never a plan's).
pub fn dir_and_name(path: &Path) -> Option<(&Path, &str)> {
    let split = path.to_str().and_then(|t| t.rfind('/').map(|i| (t, i)));
    match split {
        Some((t, i))
            if i > 0 && !t[..i].ends_with('/') && !matches!(&t[i + 1..], "" | "." | "..") =>
        {
            Some((Path::new(&t[..i]), &t[i + 1..]))
        }
        _ => Some((path.parent()?, path.file_name()?.to_str()?)),
    }
}

/// What the engine needs of a plan file's name on every change, borrowed
/// from it: `classify` without its copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanKey<'a> {
    /// A markdown plan: its identity `<stamp>_<uid>` and its state suffix.
    Markdown { id: &'a str, state: FileState },
    /// A `<stem>.plan.json`.
    Json { stem: &'a str },
}

/// `classify`, borrowed: the same names are plans, with the same identity.
pub fn plan_key(file_name: &str) -> Option<PlanKey<'_>> {
    if is_scratch(file_name) {
        return None;
    }
    if let Some(stem) = file_name.strip_suffix(JSON_SUFFIX) {
        return (!stem.is_empty()).then_some(PlanKey::Json { stem });
    }
    let (_, _, _, state) = markdown_parts(file_name)?;
    // `<stamp>_<uid>` is the name's first 24 bytes (checked just above).
    Some(PlanKey::Markdown {
        id: &file_name[..24],
        state,
    })
}

/// Which part of the plan-name rule a file name breaks, for a name that
/// looks like a plan but is not one — so the daemon, `status` and `ready`
/// can say why the file is ignored instead of ignoring it silently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameRule {
    /// The name does not start with `YYYYMMDDTHHMMSS`.
    Stamp,
    /// The stamp is not followed by `_` and eight lowercase hex digits;
    /// holds what stands where the uid should be.
    Uid(String),
    /// No `--` between the uid and the slug.
    SlugSeparator,
    /// A character outside `[a-z0-9-]` in the slug.
    SlugChar(char),
    /// No `__<state>` before `.md`.
    NoState,
    /// A state other than todo, wip, done, abandoned.
    State(String),
}

impl std::fmt::Display for NameRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NameRule::Stamp => f.write_str("it does not start with a YYYYMMDDTHHMMSS stamp"),
            NameRule::Uid(u) if u.len() == 8 && u.bytes().all(|b| b.is_ascii_hexdigit()) => {
                write!(f, "uid {u:?} must be lowercase hex")
            }
            NameRule::Uid(u) => write!(
                f,
                "the stamp must be followed by _ and an 8-digit lowercase hex uid, not {u:?}"
            ),
            NameRule::SlugSeparator => f.write_str("the uid must be followed by -- and the slug"),
            NameRule::SlugChar(c) => {
                write!(f, "the slug may hold only a-z, 0-9 and -, not {c:?}")
            }
            NameRule::NoState => {
                f.write_str("it does not end in __todo.md, __wip.md, __done.md or __abandoned.md")
            }
            NameRule::State(s) => write!(f, "state {s:?} is not one of todo, wip, done, abandoned"),
        }
    }
}

/// The rule a plan-like file name breaks: `None` for a plan, and for a name
/// that does not look like one at all (`README.md`, `debug.log`, swap
/// files). Plan-like: a `.md` name with a `--` or `__` in it, or starting
/// with a digit.
pub fn diagnose(file_name: &str) -> Option<NameRule> {
    if plan_key(file_name).is_some() || is_scratch(file_name) {
        return None;
    }
    let stem = file_name.strip_suffix(".md")?;
    let plan_like = stem.contains("--")
        || stem.contains("__")
        || stem.starts_with(|c: char| c.is_ascii_digit());
    if !plan_like {
        return None;
    }
    Some(first_broken_rule(stem))
}

fn first_broken_rule(stem: &str) -> NameRule {
    if !stem.get(..15).is_some_and(is_stamp) {
        return NameRule::Stamp;
    }
    let after_stamp = &stem[15..];
    let uid = after_stamp.strip_prefix('_').and_then(|r| r.get(..8));
    match uid {
        Some(u) if u.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) => {}
        _ => {
            let shown: String = after_stamp.chars().take(9).collect();
            return NameRule::Uid(shown.trim_start_matches('_').to_string());
        }
    }
    let Some(rest) = stem[24..].strip_prefix("--") else {
        return NameRule::SlugSeparator;
    };
    let Some((slug, state)) = rest.rsplit_once("__") else {
        return NameRule::NoState;
    };
    if let Some(c) = slug
        .chars()
        .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-'))
    {
        return NameRule::SlugChar(c);
    }
    NameRule::State(state.to_string())
}

fn is_stamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 15
        && b[8] == b'T'
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[9..].iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "20260101T093000_0a1b2c3d";

    fn md(name: &str) -> Option<PlanName> {
        match classify(name) {
            Some(PlanFile::Markdown(n)) => Some(n),
            _ => None,
        }
    }

    #[test]
    fn accepts_plan_names() {
        let cases = [
            ("--ship-it__todo.md", "ship-it", FileState::Todo),
            ("--ship-it__wip.md", "ship-it", FileState::Wip),
            ("--ship-it__done.md", "ship-it", FileState::Done),
            ("--x__abandoned.md", "x", FileState::Abandoned),
            ("--__todo.md", "", FileState::Todo),
            ("--a--b-__wip.md", "a--b-", FileState::Wip),
            ("--v2-0__todo.md", "v2-0", FileState::Todo),
        ];
        for (suffix, slug, state) in cases {
            let name = format!("{BASE}{suffix}");
            let n = md(&name).unwrap_or_else(|| panic!("{name} should be a plan"));
            assert_eq!(n.stamp, "20260101T093000", "{name}");
            assert_eq!(n.uid, "0a1b2c3d", "{name}");
            assert_eq!(n.slug, slug, "{name}");
            assert_eq!(n.state, state, "{name}");
            assert_eq!(n.id(), BASE, "{name}");
            assert_eq!(n.file_name(), name);
        }
    }

    #[test]
    fn dir_and_name_agrees_with_path() {
        for p in [
            "/pl/20260101T093000_0a1b2c3d--x__todo.md",
            "pl/a.md",
            "/a//b",
            "/a/b/",
            "/a/b/.",
            "/a/..",
            "/x",
            "x",
            "/",
            "",
            "/a/./b",
        ] {
            let path = Path::new(p);
            let std = path.parent().zip(path.file_name().and_then(|n| n.to_str()));
            let ours = dir_and_name(path);
            match (std, ours) {
                (Some((d, n)), Some((od, on))) => {
                    assert_eq!((d, n), (od, on), "{p}");
                }
                (None, None) => {}
                _ => panic!("{p}: {std:?} but {ours:?}"),
            }
        }
    }

    #[test]
    fn plan_key_agrees_with_classify() {
        let names = [
            format!("{BASE}--ship-it__todo.md"),
            format!("{BASE}--a--b-__abandoned.md"),
            format!("{BASE}--__wip.md"),
            format!("{BASE}--Ship__todo.md"),
            "20260101T093000_0A1B2C3D--x__todo.md".to_string(),
            "20260101T0930_0a1b2c3d--x__todo.md".to_string(),
            format!("{BASE}--x__doing.md"),
            format!(".{BASE}--x__todo.md.swp"),
            "roadmap.plan.json".to_string(),
            ".plan.json".to_string(),
            "notes.md".to_string(),
        ];
        for name in &names {
            let owned = classify(name);
            let borrowed = plan_key(name);
            match (&owned, borrowed) {
                (Some(PlanFile::Markdown(n)), Some(PlanKey::Markdown { id, state })) => {
                    assert_eq!((n.id().as_str(), n.state), (id, state), "{name}")
                }
                (Some(PlanFile::Json { stem }), Some(PlanKey::Json { stem: s })) => {
                    assert_eq!(stem, s, "{name}")
                }
                (None, None) => {}
                _ => panic!("{name}: {owned:?} but {borrowed:?}"),
            }
        }
    }

    #[test]
    fn identity_survives_slug_and_state_renames() {
        let a = classify(&format!("{BASE}--first__todo.md")).unwrap();
        let b = classify(&format!("{BASE}--renamed__done.md")).unwrap();
        assert_eq!(a.identity(), b.identity());
        let other = classify("20260101T093000_0a1b2c3e--first__todo.md").unwrap();
        assert_ne!(a.identity(), other.identity());
    }

    #[test]
    fn rejects_near_misses() {
        let cases = [
            "20260101T093000_0a1b2c3d--ship__todo.txt",
            "20260101T093000_0a1b2c3d--ship__later.md",
            "20260101T093000_0a1b2c3d--Ship__todo.md",
            "20260101T093000_0a1b2c3d--ship_it__todo.md",
            "20260101T093000_0a1b2c3d--ship___todo.md",
            "20260101T093000_0a1b2c3d--ship__to_do.md",
            "20260101T093000_0a1b2c3d--ship__todo_.md",
            "_todo.md",
            "20260101T093000_0A1B2C3D--ship__todo.md",
            "20260101T093000_0a1b2c3--ship__todo.md",
            "20260101T093000_0a1b2c3dd--ship__todo.md",
            "20260101X093000_0a1b2c3d--ship__todo.md",
            "2026010AT093000_0a1b2c3d--ship__todo.md",
            "20260101T09300_0a1b2c3d--ship__todo.md",
            "20260101T093000-0a1b2c3d--ship__todo.md",
            "20260101T093000_0a1b2c3d-ship__todo.md",
            "20260101T093000_0a1b2c3d--ship__todo",
            "20260101T093000_0a1b2c3d--ship.md",
            "20260101T093000_0a1b2c3d__todo.md",
            "20260101T093000_0a1b2c3é--ship__todo.md",
            "debug.log",
            "README.md",
            "",
        ];
        for name in cases {
            assert_eq!(classify(name), None, "{name:?}");
        }
    }

    #[test]
    fn rejects_editor_and_tool_scratch_files() {
        let plan = format!("{BASE}--ship__todo.md");
        let cases = [
            format!(".{plan}.swp"),
            format!(".{plan}.swx"),
            format!(".#{plan}"),
            format!("#{plan}#"),
            format!("{plan}~"),
            format!("{plan}.tmp"),
            format!(".{plan}"),
            "4913".to_string(),
            ".x.plan.json".to_string(),
            "x.plan.json~".to_string(),
            "x.plan.json.tmp".to_string(),
            ".x.plan.json.swp".to_string(),
            ".plan.json".to_string(),
            "a/x.plan.json".to_string(),
        ];
        for name in &cases {
            assert_eq!(classify(name), None, "{name:?}");
        }
        assert!(md(&plan).is_some());
    }

    #[test]
    fn json_plans() {
        assert_eq!(
            classify("refactor.plan.json"),
            Some(PlanFile::Json {
                stem: "refactor".into()
            })
        );
        let f = classify("a.b.plan.json").unwrap();
        assert_eq!(f.format(), PlanFormat::Json);
        assert_eq!(f.identity(), "a.b.plan.json");
        assert_eq!(classify("x.json"), None);
    }

    #[test]
    fn diagnose_names_the_rule_a_plan_like_name_breaks() {
        let cases = [
            ("20260101T093000_0A1B2C3D--ship__todo.md", "lowercase hex"),
            (
                "20260101T093000_0a1b2c3d--ship__doing.md",
                "\"doing\" is not one of",
            ),
            ("20260101T093000_0a1b2c3d--ship_it__todo.md", "not '_'"),
            ("20260101T093000_0a1b2c3d--Ship__todo.md", "not 'S'"),
            ("ship-it__todo.md", "YYYYMMDDTHHMMSS"),
            ("20260101T093000_0a1b2c3d--ship.md", "__todo.md"),
            ("20260101T093000_0a1b2c3d-ship__todo.md", "followed by --"),
            ("20260101T093000_0a1b2c3--ship__todo.md", "8-digit"),
            ("20260101T093000-0a1b2c3d--ship__todo.md", "8-digit"),
        ];
        for (name, needle) in cases {
            let rule = diagnose(name).unwrap_or_else(|| panic!("{name}: no rule"));
            assert!(rule.to_string().contains(needle), "{name}: {rule}");
        }
        for fine in [
            "20260101T093000_0a1b2c3d--ship__todo.md",
            "x.plan.json",
            "README.md",
            "notes.md",
            "debug.log",
            ".20260101T093000_0a1b2c3d--ship__todo.md.swp",
        ] {
            assert_eq!(diagnose(fine), None, "{fine}");
        }
    }

    #[test]
    fn file_state_serializes_lowercase() {
        let s = serde_json::to_string(&FileState::Abandoned).unwrap();
        assert_eq!(s, "\"abandoned\"");
    }
}
