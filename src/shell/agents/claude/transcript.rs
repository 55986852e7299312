//! A session's transcript, `<config>/projects/<cwd slug>/<sessionId>.jsonl`:
//! one JSON object per line, appended by the owning process (`--resume`
//! goes on appending to the same file). It is the session's own record of
//! what happened to each message that reached it over the socket:
//!
//! - `{"type":"queue-operation","operation":"enqueue","content":TEXT}`:
//!   the message was taken into the session's inbox;
//! - a `{"type":"user",…}` entry whose `origin` is `{"kind":"peer",
//!   "msg_id":ID,…}`: a turn took it (its `message.content` is the text as
//!   the model sees it, framed as from another session);
//! - `{"type":"system","subtype":"informational","content":…}`: "Held peer
//!   message — … preview: «TEXT» …" (waiting for a person's choice),
//!   "Released …" (a person let it through), "Dropped a peer message from
//!   FROM: REASON." (the inbox's guard refused it).
//!
//! Read by byte offset; a partial last line waits for its newline; a file
//! that shrank or was replaced is read again from the start.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// What one transcript line says about messages sent to the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// Taken into the inbox, at unix ms.
    Enqueued { content: String, at: u64 },
    /// A turn took a prompt (typed, or a message: then with its `msg_id`).
    Taken {
        content: String,
        msg_id: Option<String>,
        at: u64,
    },
    /// Held for a person's Deny/Deliver choice; the preview of its text.
    Held { preview: String, at: u64 },
    /// A held message was let through or settled (approved, denied, expired).
    Settled { at: u64 },
    /// The assistant called a tool: its shell command, or its name and
    /// what it works on — what a permission prompt right after it is about.
    ToolUse { what: String },
    /// A tool call's result came back: no call is pending.
    ToolDone,
    /// Refused by the inbox's guard (duplicate, rate limit, full queue).
    Dropped {
        from: String,
        reason: String,
        at: u64,
    },
}

/// What the line says, if anything about messages; `None` for the rest
/// (the assistant's answers, attachments, snapshots — most of the bytes,
/// which are not parsed at all).
pub fn classify(line: &[u8]) -> Option<Record> {
    let text = std::str::from_utf8(line).ok()?;
    if ![
        "\"queue-operation\"",
        "\"user\"",
        "\"informational\"",
        "\"tool_use\"",
    ]
    .iter()
    .any(|k| text.contains(k))
    {
        return None;
    }
    let v: Value = serde_json::from_str(text).ok()?;
    let at = v["timestamp"].as_str().and_then(unix_ms).unwrap_or(0);
    match (v["type"].as_str()?, v["subtype"].as_str()) {
        ("queue-operation", _) if v["operation"] == "enqueue" => Some(Record::Enqueued {
            content: v["content"].as_str()?.to_string(),
            at,
        }),
        ("user", _) if has_tool_result(&v["message"]["content"]) => Some(Record::ToolDone),
        ("user", _) => Some(Record::Taken {
            content: v["message"]["content"].as_str()?.to_string(),
            msg_id: v["origin"]["msg_id"].as_str().map(str::to_string),
            at,
        }),
        ("system", Some("informational")) => informational(v["content"].as_str()?, at),
        ("assistant", _) => tool_use(&v["message"]["content"]),
        _ => None,
    }
}

/// Whether a user message's content carries a tool's result.
fn has_tool_result(content: &Value) -> bool {
    content
        .as_array()
        .is_some_and(|parts| parts.iter().any(|p| p["type"] == "tool_result"))
}

/// The last tool call of an assistant message's content.
fn tool_use(content: &Value) -> Option<Record> {
    let call = content
        .as_array()?
        .iter()
        .rev()
        .find(|c| c["type"] == "tool_use")?;
    let input = &call["input"];
    let name = call["name"].as_str().unwrap_or("a tool");
    // AskUserQuestion: the registry says only "input needed"; the
    // question itself is what the person is asked.
    let question = input["questions"][0]["question"].as_str();
    let what = match (
        question,
        input["command"].as_str(),
        input["file_path"].as_str(),
    ) {
        (Some(question), _, _) => question.to_string(),
        (None, Some(command), _) => command.to_string(),
        (None, None, Some(file)) => format!("{name} {file}"),
        (None, None, None) => name.to_string(),
    };
    Some(Record::ToolUse { what })
}

fn informational(content: &str, at: u64) -> Option<Record> {
    if let Some(rest) = content.strip_prefix("Held peer message") {
        let preview = rest.split_once('«')?.1.split_once('»')?.0;
        return Some(Record::Held {
            preview: preview.to_string(),
            at,
        });
    }
    if let Some(rest) = content.strip_prefix("Dropped a peer message from ") {
        let (from, reason) = rest.split_once(": ")?;
        return Some(Record::Dropped {
            from: from.to_string(),
            reason: reason.trim_end_matches('.').to_string(),
            at,
        });
    }
    let lower = content.to_lowercase();
    (lower.contains("held")
        && ["released", "denied", "declined", "expired", "discarded"]
            .iter()
            .any(|w| lower.contains(w)))
    .then_some(Record::Settled { at })
}

/// `2026-12-02T03:38:24.316Z` (as Claude Code writes it) in unix ms.
fn unix_ms(s: &str) -> Option<u64> {
    let secs = crate::core::timestamp::parse_timestamp(s.get(..19)?)?;
    let frac = s.get(19..)?.strip_prefix('.').unwrap_or("");
    let digits: String = frac.chars().take_while(char::is_ascii_digit).collect();
    let ms = format!("{digits:0<3}")[..3].parse::<u64>().ok()?;
    u64::try_from(secs).ok().map(|s| s * 1000 + ms)
}

/// The directory Claude Code keeps the transcripts of sessions started in
/// `cwd` in: every character that is not an ASCII letter or digit becomes
/// `-` (one per UTF-16 unit, as JavaScript counts). A slug over 200
/// characters gets a hash suffix this module does not compute: `None`,
/// and the caller looks for the session's file under `projects/`.
pub fn project_dir(config: &Path, cwd: &Path) -> Option<PathBuf> {
    let mut slug = String::new();
    for c in cwd.to_string_lossy().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else {
            slug.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    (slug.len() <= 200).then(|| config.join("projects").join(slug))
}

/// A transcript read by byte offset.
#[derive(Debug)]
pub struct Tail {
    pub path: PathBuf,
    offset: u64,
    inode: Option<u64>,
    partial: Vec<u8>,
}

/// New records, and whether the file was read again from the start (a
/// new file, or one that shrank: what was learnt from it before is void).
#[derive(Debug, Default)]
pub struct Batch {
    pub records: Vec<Record>,
    pub restarted: bool,
}

impl Tail {
    pub fn new(path: PathBuf) -> Tail {
        Tail {
            path,
            offset: 0,
            inode: None,
            partial: Vec::new(),
        }
    }

    /// Everything appended since the last read. A missing file is empty.
    /// A read that fails changes nothing: the next one goes on from where
    /// the last good one ended.
    pub fn read(&mut self) -> std::io::Result<Batch> {
        let mut out = Batch::default();
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        let replaced = self.inode.is_some_and(|i| i != meta.ino()) || meta.len() < self.offset;
        let (offset, mut bytes) = if replaced {
            (0, Vec::new())
        } else {
            (self.offset, self.partial.clone())
        };
        file.seek(SeekFrom::Start(offset))?;
        let n = file.read_to_end(&mut bytes)?;
        out.restarted = replaced && self.inode.is_some();
        self.inode = Some(meta.ino());
        self.offset = offset + n as u64;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        self.partial = bytes.split_off(complete);
        out.records = bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(classify)
            .collect();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn lines_about_messages_are_read_and_the_rest_is_not() {
        let at = "\"timestamp\":\"2026-12-02T03:38:24.316Z\"";
        let lines = [
            format!(r#"{{"type":"queue-operation","operation":"enqueue",{at},"content":"do s2"}}"#),
            format!(r#"{{"type":"queue-operation","operation":"dequeue",{at}}}"#),
            format!(
                r#"{{"type":"user","message":{{"role":"user","content":"framed do s2"}},{at},"origin":{{"kind":"peer","msg_id":"id-1"}}}}"#
            ),
            format!(
                r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result"}}]}},{at}}}"#
            ),
            format!(
                r#"{{"type":"system","subtype":"informational","content":"Held peer message — from x; preview: «do s3» — not delivered",{at}}}"#
            ),
            format!(
                r#"{{"type":"system","subtype":"informational","content":"Released 1 held cross-session message to Claude's queue (you approved it).",{at}}}"#
            ),
            format!(
                r#"{{"type":"system","subtype":"informational","content":"Dropped a peer message from reveille-p: identical to the previous message from this sender.",{at}}}"#
            ),
            r#"{"type":"assistant","message":{"content":"queue-operation"}}"#.to_string(),
        ];
        let ms = 1_796_182_704_316;
        let got: Vec<Record> = lines
            .iter()
            .filter_map(|l| classify(l.as_bytes()))
            .collect();
        assert_eq!(
            got,
            vec![
                Record::Enqueued {
                    content: "do s2".into(),
                    at: ms
                },
                Record::Taken {
                    content: "framed do s2".into(),
                    msg_id: Some("id-1".into()),
                    at: ms
                },
                // A tool's result: no call pending (not a prompt taken).
                Record::ToolDone,
                Record::Held {
                    preview: "do s3".into(),
                    at: ms
                },
                Record::Settled { at: ms },
                Record::Dropped {
                    from: "reveille-p".into(),
                    reason: "identical to the previous message from this sender".into(),
                    at: ms
                },
            ]
        );
    }

    #[test]
    fn a_tool_call_is_read_with_its_command() {
        let line = br#"{"type":"assistant","message":{"content":[{"type":"text","text":"x"},
            {"type":"tool_use","id":"t","name":"Bash","input":{"command":"sed -i x f","description":"d"}}]}}"#;
        let line: Vec<u8> = line.iter().copied().filter(|&b| b != b'\n').collect();
        assert_eq!(
            classify(&line),
            Some(Record::ToolUse {
                what: "sed -i x f".into()
            })
        );
        let done = br#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}"#;
        assert_eq!(classify(done), Some(Record::ToolDone));
        let edit = br#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Edit","input":{"file_path":"/w/a.rs"}}]}}"#;
        assert_eq!(
            classify(edit),
            Some(Record::ToolUse {
                what: "Edit /w/a.rs".into()
            })
        );
    }

    #[test]
    fn a_partial_line_waits_and_a_replaced_file_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let line = |c: &str| {
            format!(r#"{{"type":"queue-operation","operation":"enqueue","content":"{c}"}}"#)
        };
        let mut f = File::create(&path).unwrap();
        write!(f, "{}\n{}", line("a"), &line("b")[..10]).unwrap();
        let mut tail = Tail::new(path.clone());
        assert_eq!(tail.read().unwrap().records.len(), 1);
        writeln!(f, "{}", &line("b")[10..]).unwrap();
        let got = tail.read().unwrap();
        assert_eq!(
            got.records,
            vec![Record::Enqueued {
                content: "b".into(),
                at: 0
            }]
        );
        std::fs::write(&path, format!("{}\n", line("c"))).unwrap();
        let got = tail.read().unwrap();
        assert!(got.restarted);
        assert_eq!(got.records.len(), 1);
    }

    #[test]
    fn a_read_that_fails_loses_nothing_and_is_no_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (file, path) = (dir.path().join("f.jsonl"), dir.path().join("s.jsonl"));
        let line = |c: &str| {
            format!(r#"{{"type":"queue-operation","operation":"enqueue","content":"{c}"}}"#)
        };
        let mut f = File::create(&file).unwrap();
        write!(f, "{}\n{}", line("a"), &line("b")[..10]).unwrap();
        std::os::unix::fs::symlink(&file, &path).unwrap();
        let mut tail = Tail::new(path.clone());
        assert_eq!(tail.read().unwrap().records.len(), 1);
        // The transcript's name now opens something that cannot be read
        // (a directory: EISDIR, as a failing disk gives EIO).
        let retarget = |to: &Path| {
            std::fs::remove_file(&path).unwrap();
            std::os::unix::fs::symlink(to, &path).unwrap();
        };
        retarget(dir.path());
        assert!(tail.read().is_err());
        retarget(&file);
        writeln!(f, "{}", &line("b")[10..]).unwrap();
        let got = tail.read().unwrap();
        assert!(!got.restarted);
        assert_eq!(
            got.records,
            vec![Record::Enqueued {
                content: "b".into(),
                at: 0
            }],
            "the line begun before the failed read, whole"
        );
    }

    #[test]
    fn the_project_directory_is_the_cwd_slug() {
        let c = Path::new("/c");
        assert_eq!(
            project_dir(c, Path::new("/tmp/cx/wörk_1")),
            Some(PathBuf::from("/c/projects/-tmp-cx-w-rk-1"))
        );
        assert_eq!(project_dir(c, &Path::new("/").join("a".repeat(250))), None);
    }
}
