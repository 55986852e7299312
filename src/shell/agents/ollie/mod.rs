//! ollie-9p sessions: recognising one by what its directory holds, reading
//! its state, and Submit — the one write that wakes an idle agent.
//!
//! In ollie-9p a session directory is a set of synthetic files. `fifo.in`
//! (`enqueue` in older versions) only pushes onto the session's prompt
//! queue, and that queue is drained when a turn *ends*: an idle agent has no
//! turn to end, so a prompt written there waits until someone else starts
//! one. `prompt` is Submit: on an idle agent it starts a turn with the text
//! at once, on a busy one it pushes the text onto the same queue, which runs
//! it after the current turn. So reveille Submits to every ollie session,
//! whatever its state, in one write.
//!
//! No write error reaches the writer: ollie-9p acts on a write when the
//! file is clunked, after `close(2)` returned, and a write to a session
//! killed a moment ago opens fine and is lost. So a Submit is confirmed by
//! what the session shows afterwards: `prompt.prev` holds the last prompt
//! written to it (ollie-9p store/sessionfile.go, set by the write handler
//! before it submits), and `statewait` shows the turn starting. Nothing
//! waits here for the turn: the engine's lane goes on at once, and the turn
//! start only confirms the wake-up for the journal (`await_turn`).
//!
//! ollie-9p as a kind of session: its sessions are directories under
//! `sessions.dir` (the `Kind::Dir` backend, `agents::pipe`, hands a
//! directory recognised here to `submit`). Its transport is `submit` (the
//! Submit and its evidence) and `spawn` (children, through `s/new` and
//! `ctl`); its observer is `poll` (the `idx` worker, over the `tree` it
//! reads) with the delivery's own `cfg`/`statewait` reads; its
//! configuration is `[sessions]` (`state_poll_ms`, `session_plans`,
//! `delivery`) and `[fanout]`.

pub mod follow;
pub mod held;
pub mod poll;
pub mod spawn;
pub mod submit;
pub mod tree;

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::fcntl::AtFlags;
use nix::sys::stat::{fstatat, SFlag};

use crate::core::session::AgentState;

/// Which generation of ollie-9p serves a session directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// `prompt`, `fifo.in`, and `cfg` with a `state=` line.
    Current,
    /// Older ollie-9p: `prompt`, `enqueue`, and a plain `state` file.
    Legacy,
}

impl Flavour {
    /// The file that reports the session's state.
    fn state_file(self) -> &'static str {
        match self {
            Flavour::Current => "cfg",
            Flavour::Legacy => "state",
        }
    }
}

/// The longest state file read: `cfg` is a handful of `key=value` lines.
const STATE_CAP: usize = 64 << 10;

/// The longest `statewait` read: one state and a newline.
const STATEWAIT_CAP: u64 = 256;

fn c(name: &str) -> CString {
    CString::new(name).expect("static file names have no NUL")
}

/// Whether `name` in `dir` is a regular file (not following symlinks).
fn is_file(dir: &OwnedFd, name: &str) -> bool {
    fstatat(Some(dir.as_raw_fd()), name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG)
}

/// An ollie-9p session is recognised by what its directory holds: a
/// `prompt` file and a state file (`cfg`, or the older `state`).
pub fn recognise(dir: &OwnedFd) -> Option<Flavour> {
    if !is_file(dir, "prompt") {
        return None;
    }
    if is_file(dir, "cfg") {
        Some(Flavour::Current)
    } else if is_file(dir, "state") {
        Some(Flavour::Legacy)
    } else {
        None
    }
}

fn open_in(dir: &OwnedFd, name: &str, flags: libc::c_int) -> io::Result<File> {
    let name = c(name);
    // SAFETY: `name` is a valid C string and `dir` an fd we own.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd returned by openat, owned by nobody else.
    Ok(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// The session's state now. Synthetic files report sizes that need not
/// match their content, so this reads to end of file, not to a size.
pub fn read_state(dir: &OwnedFd, flavour: Flavour) -> io::Result<Option<AgentState>> {
    let file = open_in(dir, flavour.state_file(), libc::O_RDONLY)?;
    // In one read: a synthetic file read in pieces while it changes comes
    // back torn (an empty String starts with a 32-byte probe read).
    let mut text = String::with_capacity(STATE_CAP);
    file.take(STATE_CAP as u64).read_to_string(&mut text)?;
    Ok(match flavour {
        Flavour::Current => text
            .lines()
            .find_map(|l| l.strip_prefix("state="))
            .and_then(AgentState::parse),
        Flavour::Legacy => AgentState::parse(&text),
    })
}

/// Submit `text`: one open, one write, one close of `prompt` (ollie-9p
/// acts on the whole text when the file is closed).
pub fn submit(dir: &OwnedFd, text: &str) -> io::Result<()> {
    submit_through(open_prompt(dir)?, text)
}

/// `prompt`, opened to write (closed unwritten it submits nothing:
/// ollie-9p trims what was written and ignores an empty prompt).
pub fn open_prompt(dir: &OwnedFd) -> io::Result<File> {
    open_in(dir, "prompt", libc::O_WRONLY)
}

/// Submit `text` through `prompt` opened by `open_prompt`.
pub fn submit_through(mut file: File, text: &str) -> io::Result<()> {
    file.write_all(text.as_bytes())?;
    // Close explicitly so an error the file system reports at close is
    // seen (9pfuse reports none, but a local test tree may).
    let fd = std::os::fd::IntoRawFd::into_raw_fd(file);
    nix::unistd::close(fd).map_err(io::Error::from)
}

/// Whether the session took `text`: its `prompt.prev` holds it (trimmed,
/// as ollie-9p keeps it). A write to a session killed a moment ago opens
/// and closes fine and is lost; this is how that is told apart.
pub fn took(dir: &OwnedFd, text: &str) -> io::Result<bool> {
    let file = open_in(dir, "prompt.prev", libc::O_RDONLY)?;
    let mut prev = String::with_capacity(text.len() + 64);
    file.take(text.len() as u64 + 4096)
        .read_to_string(&mut prev)?;
    Ok(prev.trim() == text.trim())
}

/// Submit `text` and check that the session took it (an older ollie-9p
/// has no `prompt.prev` to check by: taken).
pub fn deliver(dir: &OwnedFd, flavour: Flavour, text: &str) -> io::Result<bool> {
    submit(dir, text)?;
    match flavour {
        Flavour::Current => took(dir, text),
        Flavour::Legacy => Ok(true),
    }
}

/// One read of `statewait`: blocks until the session's state differs from
/// the state when the read began (or ~5 s pass, or the session dies), then
/// returns the state. `None`: no `statewait` (an older ollie-9p) or an
/// unreadable answer.
pub fn wait_state(dir: &OwnedFd) -> Option<AgentState> {
    let file = open_in(dir, "statewait", libc::O_RDONLY).ok()?;
    let mut text = String::new();
    file.take(STATEWAIT_CAP).read_to_string(&mut text).ok()?;
    AgentState::parse(&text)
}

/// After a Submit to an idle session: whether a turn is seen starting —
/// the state busy now, or `statewait` answering busy, or answering idle
/// sooner than its timeout (a short turn came and went between two
/// looks). At most one `statewait` read (≤ ~5 s), on the caller's thread.
pub fn await_turn(dir: &OwnedFd, flavour: Flavour) -> Option<AgentState> {
    if let Ok(Some(busy)) = read_state(dir, flavour).map(|s| s.filter(|s| !s.is_idle())) {
        return Some(busy);
    }
    // An older ollie-9p has no `statewait`: one look is all there is.
    if flavour == Flavour::Legacy {
        return None;
    }
    let asked = Instant::now();
    match wait_state(dir)? {
        AgentState::Idle if asked.elapsed() >= STATEWAIT_TIMEOUT => None,
        state => Some(state),
    }
}

/// How long `statewait` waits for a change before it answers with the
/// state as it is (ollie-9p: 5 s); a little less, to tell a real change
/// from the timeout.
const STATEWAIT_TIMEOUT: Duration = Duration::from_millis(4500);

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::FromRawFd;

    fn dir_fd(path: &std::path::Path) -> OwnedFd {
        let p = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; the fd is owned by the returned value.
        let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
        assert!(fd >= 0);
        // SAFETY: a fresh fd.
        unsafe { OwnedFd::from_raw_fd(fd) }
    }

    #[test]
    fn recognised_by_its_files_and_its_state_is_read_to_the_end() {
        let t = tempfile::tempdir().unwrap();
        let d = dir_fd(t.path());
        assert_eq!(recognise(&d), None);
        std::fs::write(t.path().join("prompt"), "").unwrap();
        assert_eq!(recognise(&d), None, "prompt alone is not a session");
        std::fs::write(t.path().join("state"), "thinking\n").unwrap();
        assert_eq!(recognise(&d), Some(Flavour::Legacy));
        assert_eq!(
            read_state(&d, Flavour::Legacy).unwrap(),
            Some(AgentState::Busy("thinking".into()))
        );
        std::fs::write(t.path().join("cfg"), "cwd=/x\nstate=idle\nmodel=m\n").unwrap();
        assert_eq!(recognise(&d), Some(Flavour::Current));
        assert_eq!(
            read_state(&d, Flavour::Current).unwrap(),
            Some(AgentState::Idle)
        );
    }

    #[test]
    fn a_submit_is_taken_when_prompt_prev_holds_it() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("prompt"), "").unwrap();
        std::fs::write(t.path().join("cfg"), "state=calling: grep\n").unwrap();
        std::fs::write(t.path().join("prompt.prev"), "do s2\n").unwrap();
        let d = dir_fd(t.path());
        assert!(deliver(&d, Flavour::Current, "  do s2\n").unwrap());
        assert_eq!(
            std::fs::read_to_string(t.path().join("prompt")).unwrap(),
            "  do s2\n"
        );
        assert!(
            !took(&d, "do s3").unwrap(),
            "another prompt is not this one"
        );
        assert_eq!(
            await_turn(&d, Flavour::Current),
            Some(AgentState::Busy("calling: grep".into()))
        );
    }
}
