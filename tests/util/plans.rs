//! Plan files as the planning tool writes them and as agents edit them:
//! the stock text, `task_plan`'s file names, in-place rewrites (the
//! `close(2)` the daemon reacts to), the one `task_complete` (the doubles'
//! `plan_edit`, which is what an agent's tick does), state renames, and
//! the barrier that proves no other prompt is on its way.
//!
//! ```ignore
//! let plan = task_plan(&p.plan_dir, "Ship it", &[Step::new("Build"), Step::new("Test")]);
//! assert!(reader.next(WAIT).contains("Build"));
//! task_complete(&plan, "build");
//! ```

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::daemon::WAIT;
use super::fifo::Reader;

#[derive(Debug, Clone, Default)]
pub struct Step {
    pub title: String,
    pub description: String,
    /// `None`: no annotation (waits for the step before); `Some("none")`, a
    /// root; `Some("1, 2")`, after steps 1 and 2.
    pub after: Option<String>,
}

impl Step {
    pub fn new(title: &str) -> Step {
        Step {
            title: title.to_string(),
            ..Step::default()
        }
    }

    pub fn desc(mut self, description: &str) -> Step {
        self.description = description.to_string();
        self
    }

    pub fn after(mut self, refs: &str) -> Step {
        self.after = Some(refs.to_string());
        self
    }
}

/// `YYYYMMDDTHHMMSS` for unix seconds, UTC.
fn stamp(secs: u64) -> String {
    let (year, month, day) = super::civil::date(secs as i64);
    let rem = secs % 86_400;
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A fresh 8-hex-digit plan uid, unique within this test process.
fn uid8() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let mixed = (std::process::id().wrapping_mul(2_654_435_761)) ^ nanos.rotate_left(7);
    format!("{:08x}", (mixed & 0xffff_0000) | (n & 0xffff))
}

fn slug(goal: &str) -> String {
    let mut s = String::new();
    for c in goal.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') && !s.is_empty() {
            s.push('-');
        }
    }
    s.trim_end_matches('-').chars().take(40).collect()
}

/// The stock plan text the planning tool writes.
pub fn plan_text(goal: &str, steps: &[Step], extra: &str) -> String {
    let mut out = format!("# {goal}\n\n");
    out.push_str(extra);
    for s in steps {
        out.push_str(&format!("- [ ] {}", s.title));
        if let Some(after) = &s.after {
            out.push_str(&format!(" (after: {after})"));
        }
        out.push('\n');
        for line in s.description.lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

/// Write a plan as `task_plan` does:
/// `<dir>/YYYYMMDDTHHMMSS_<uid8>--<slug>__todo.md`.
pub fn task_plan(dir: &Path, goal: &str, steps: &[Step]) -> PathBuf {
    task_plan_with(dir, goal, steps, "")
}

/// `task_plan` with extra lines (e.g. a session comment) after the goal.
pub fn task_plan_with(dir: &Path, goal: &str, steps: &[Step], extra: &str) -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let name = format!("{}_{}--{}__todo.md", stamp(secs), uid8(), slug(goal));
    let path = dir.join(name);
    write_in_place(&path, plan_text(goal, steps, extra).as_bytes());
    path
}

/// Open (creating), truncate, write, close — one writer, in place.
/// Returns the instant just before the `close(2)`, the event the daemon
/// reacts to (for latency measurements).
pub fn write_in_place(path: &Path, bytes: &[u8]) -> Instant {
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    f.write_all(bytes).unwrap();
    let closing = Instant::now();
    drop(f);
    closing
}

/// Flip the first unchecked step whose title contains `substring` to `[x]`,
/// in place, as the `task_complete` tool did (`doubles::plan_edit`: case
/// ignored, indentation kept). Panics if there is none.
pub fn task_complete(path: &Path, substring: &str) {
    flip(path, substring, "- [ ] ", "- [x] ");
}

/// `task_complete`, returning the instant just before its `close(2)`.
pub fn task_complete_timed(path: &Path, substring: &str) -> Instant {
    flip(path, substring, "- [ ] ", "- [x] ")
}

/// The reverse of `task_complete`: uncheck the first checked step whose
/// title contains `substring` (an agent that reopens a step).
pub fn task_uncheck(path: &Path, substring: &str) {
    flip(path, substring, "- [x] ", "- [ ] ");
}

fn flip(path: &Path, substring: &str, from: &str, to: &str) -> Instant {
    let flipped = crate::doubles::plan_edit::flip(path, substring, from, to)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    flipped.unwrap_or_else(|| {
        panic!(
            "no step {from:?} containing {substring:?} in {}",
            path.display()
        )
    })
}

/// `x__todo.md` → `x__<state>.md`, by `rename(2)`. Returns the new path.
pub fn rename_state(path: &Path, state: &str) -> PathBuf {
    let name = path.file_name().unwrap().to_str().unwrap();
    let (head, _) = name.rsplit_once("__").expect("a plan file name");
    let to = path.with_file_name(format!("{head}__{state}.md"));
    fs::rename(path, &to).unwrap();
    to
}

/// The file name of a path, as prompts show it.
pub fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// Prove that no other prompt is on its way to `reader`'s session: write a
/// new one-step plan (routed by `extra`, e.g. a session comment, or the
/// default session) and require that its prompt is the very next one
/// received. Anything announced before it for that session would arrive
/// first, since a session's prompts are delivered in announcement order.
pub fn barrier(plan_dir: &Path, reader: &Reader, extra: &str) {
    let before = until_barrier(plan_dir, reader, extra);
    assert!(
        before.is_empty(),
        "unexpected prompts arrived before the barrier:\n{}",
        before.join("\n----\n")
    );
}

/// Like `barrier`, but returns the prompts that arrived before the
/// barrier's own (for tests that count them).
pub fn until_barrier(plan_dir: &Path, reader: &Reader, extra: &str) -> Vec<String> {
    let goal = format!("barrier {}", uid8());
    let path = task_plan_with(plan_dir, &goal, &[Step::new("Barrier step")], extra);
    let mut before = Vec::new();
    loop {
        let got = reader.try_next(WAIT).unwrap_or_else(|| {
            panic!(
                "the barrier {} never arrived; before it:\n{}",
                file_name(&path),
                before.join("\n----\n")
            )
        });
        // The goal, or the file name for templates without the goal.
        if got.contains(&goal) || got.contains(&file_name(&path)) {
            return before;
        }
        before.push(got);
    }
}

/// Write `text` next to `path` under a name no watcher cares about, then
/// rename it into place (an editor's or exporter's save).
pub fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap().to_string_lossy()
    ));
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, path).unwrap();
}

/// A fixed-time plan file name: `20260101T093000_<uid>--<slug>__todo.md`.
pub fn plan_name(uid: u32, slug: &str) -> String {
    format!("20260101T093000_{uid:08x}--{slug}__todo.md")
}

static UID: AtomicU32 = AtomicU32::new(0x7000_0000);

/// A plan uid no other `plan_name` of this test process has.
pub fn fresh_uid() -> u32 {
    UID.fetch_add(1, Ordering::SeqCst)
}
