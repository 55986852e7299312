//! What an agent's edit does to a plan file — the one copy of it the tests,
//! the doubles and the benchmark use: ollie's old `task_complete(file,
//! step)` tool (and what agents do by hand today), which flips the first
//! unchecked `- [ ]` step whose title contains the text, compared without
//! case, indentation kept, and rewrites the file in place (truncate, then
//! write: the rewrite a watcher must not read half-done).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Flip the first line `from` (`"- [ ] "`) whose title contains `step`
/// (case-insensitively) to `to` (`"- [x] "`), rewriting `path` in place.
/// Returns the instant just before the rewrite's `close(2)`, or `None`
/// when no such line exists (the file is left alone).
pub fn flip(path: &Path, step: &str, from: &str, to: &str) -> std::io::Result<Option<Instant>> {
    let text = std::fs::read_to_string(path)?;
    let needle = step.to_lowercase();
    let mut done = false;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        match trimmed.strip_prefix(from) {
            Some(title) if !done && title.to_lowercase().contains(&needle) => {
                done = true;
                out.push_str(indent);
                out.push_str(to);
                out.push_str(title);
            }
            _ => out.push_str(line),
        }
    }
    if !done {
        return Ok(None);
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?;
    f.write_all(out.as_bytes())?;
    let closing = Instant::now();
    drop(f);
    Ok(Some(closing))
}

/// `task_complete(file, step)`: tick the step; whether one was ticked.
pub fn task_complete(path: &Path, step: &str) -> std::io::Result<bool> {
    flip(path, step, "- [ ] ", "- [x] ").map(|t| t.is_some())
}
