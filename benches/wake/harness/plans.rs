//! Plan files as the planning tool writes them, their in-place rewrite
//! (open, truncate, write, close), and a step ticked as an agent ticks it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The file name of plan `i` (`__wip`: an agent is on it).
pub fn plan_name(tag: &str, i: usize) -> String {
    format!("20260101T000000_{i:08x}--{tag}-{i}__wip.md")
}

/// A sequential checklist of `steps` steps, the first `checked` ticked,
/// routed to `session`.
pub fn plan_text(i: usize, steps: usize, checked: usize, session: &str) -> String {
    let mut t = format!("# Bench goal {i}\n\n<!-- session: {session} -->\n\n");
    for s in 1..=steps {
        let mark = if s <= checked { 'x' } else { ' ' };
        t.push_str(&format!(
            "- [{mark}] Step {s}: implement part {s} of goal {i}\n  Touch the code for part {s}, then run the tests.\n"
        ));
    }
    t
}

/// `task_complete`-style rewrite in place: open, truncate, write, close.
///
/// Returns the instant just before `close(2)`, which is where the kernel
/// queues `IN_CLOSE_WRITE`. Reading the clock after `close` returns would
/// be later than the event on a loaded machine: the woken waker (and the
/// reader it wakes) may run before the writer gets the CPU back, and the
/// latency would come out as zero. So every waker's figure includes the
/// `close` call itself (a few µs; see `close_cost`).
pub fn rewrite(path: &Path, text: &str) -> Instant {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
    let t0 = Instant::now();
    drop(f);
    t0
}

/// A set of plans in one directory and how far each is checked.
pub struct Plans {
    pub dir: PathBuf,
    pub tag: String,
    pub steps: usize,
    pub checked: Vec<usize>,
    pub sessions: Vec<String>,
}

impl Plans {
    pub fn path(&self, i: usize) -> PathBuf {
        self.dir.join(plan_name(&self.tag, i))
    }

    /// Write every plan as it stands.
    pub fn write_all(&self) {
        for i in 0..self.checked.len() {
            std::fs::write(self.path(i), self.text(i)).unwrap();
        }
    }

    pub fn text(&self, i: usize) -> String {
        plan_text(i, self.steps, self.checked[i], &self.sessions[i])
    }

    /// Tick one more step of plan `i` as an agent does (the tests'
    /// `task_complete`, `plan_edit::flip`); the instant just before the
    /// rewrite's `close(2)`.
    pub fn complete_next(&mut self, i: usize) -> Instant {
        self.checked[i] += 1;
        let s = self.checked[i];
        let title = format!("Step {s}: implement part {s} of goal {i}");
        super::doubles::plan_edit::flip(&self.path(i), &title, "- [ ] ", "- [x] ")
            .unwrap()
            .unwrap_or_else(|| panic!("no open step {title:?} in plan {i}"))
    }
}
