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
//! Order. ollie-9p acts on a write when the file is closed, each in a
//! goroutine of its own, and ollie-core's Submit on an idle agent holds its
//! submit lock from before the turn is marked running (pre-turn hooks run in
//! that window) until the turn and everything queued behind it are done. A
//! second Submit arriving inside that window waits for the lock and runs
//! after everything queued meanwhile. So after a Submit to an idle session
//! reveille waits until the session is seen busy (`confirm_started`) before
//! it writes the next prompt to it; a Submit to a busy session lands on the
//! queue at once. Prompts to one session therefore reach ollie's queue in
//! reveille's order.

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

/// How long, after a Submit to an idle session, reveille waits to see the
/// turn start before it writes that session's next prompt anyway.
pub const CONFIRM_TIMEOUT: Duration = Duration::from_secs(2);

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
    let mut file = open_in(dir, "prompt", libc::O_WRONLY)?;
    file.write_all(text.as_bytes())?;
    // Close explicitly so an error the file system reports at close is
    // seen (9pfuse reports none, but a local test tree may).
    let fd = std::os::fd::IntoRawFd::into_raw_fd(file);
    nix::unistd::close(fd).map_err(io::Error::from)
}

/// After a Submit to an idle session: wait until it is seen busy (the turn
/// started, so a later Submit queues behind it), at most `timeout`.
/// Returns whether it was seen busy; a turn that started and ended between
/// two looks is not seen, which only costs the wait.
pub fn confirm_started(dir: &OwnedFd, flavour: Flavour, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        if let Ok(Some(state)) = read_state(dir, flavour) {
            if !state.is_idle() {
                return true;
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(25));
    }
}

/// How a prompt reached an ollie session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// The agent was idle: the prompt started a turn (seen busy after).
    Woke,
    /// The agent was idle and the prompt was submitted, but no turn was
    /// seen starting within the confirmation wait.
    WokeUnconfirmed,
    /// A turn was running (its state given): the prompt is queued behind it.
    Queued(AgentState),
    /// The state could not be read; the Submit itself succeeded.
    StateUnknown,
}

/// Submit `text` to the ollie session in `dir`, reading its state first
/// (so the journal can say what happened) and, if it was idle, waiting for
/// the turn to start (so the next prompt queues behind it, in order).
pub fn deliver(dir: &OwnedFd, flavour: Flavour, text: &str) -> io::Result<Submitted> {
    let before = read_state(dir, flavour).ok().flatten();
    submit(dir, text)?;
    Ok(match before {
        Some(AgentState::Idle) => {
            if confirm_started(dir, flavour, CONFIRM_TIMEOUT) {
                Submitted::Woke
            } else {
                Submitted::WokeUnconfirmed
            }
        }
        Some(busy) => Submitted::Queued(busy),
        None => Submitted::StateUnknown,
    })
}

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
    fn submit_to_a_busy_session_reports_the_turn_it_queued_behind() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("prompt"), "").unwrap();
        std::fs::write(t.path().join("cfg"), "state=calling: grep\n").unwrap();
        let d = dir_fd(t.path());
        let how = deliver(&d, Flavour::Current, "do s2").unwrap();
        assert_eq!(
            how,
            Submitted::Queued(AgentState::Busy("calling: grep".into()))
        );
        assert_eq!(
            std::fs::read_to_string(t.path().join("prompt")).unwrap(),
            "do s2"
        );
    }
}
