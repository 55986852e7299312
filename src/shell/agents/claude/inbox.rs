//! Writing one prompt into a Claude Code session's inbox: its messaging
//! socket (a unix stream socket, path `messagingSocketPath` of the
//! registry entry), two JSON lines — `{"type":"auth","token":…}` and the
//! message — and the connection closed. The session never answers.
//!
//! The message asks for `priority: "later"`: a prompt of its own, run when
//! no turn is running (at once when idle, after the running turn when
//! busy). Claude Code's default, `next`, folds the text into the running
//! turn at its next tool result, and `now` aborts the request in flight:
//! both would merge reveille's prompt into a person's turn.
//!
//! It carries `session_id`, so a process that no longer holds that session
//! (`/clear`, a switch) drops it rather than acting on it, and `msg_id`,
//! kept in the transcript entry of the turn that takes it. The socket's
//! peer is checked (`SO_PEERCRED`) to be the registered process: a stale
//! path bound again by another program gets nothing.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

/// How long a write may take before the session counts as unreachable.
const TIMEOUT: Duration = Duration::from_secs(5);

/// One message for the inbox.
#[derive(Debug, Clone)]
pub struct Message {
    pub session_id: String,
    pub msg_id: String,
    /// Who speaks, as the inbox's guard and its notices name the sender.
    pub from: String,
    pub text: String,
}

impl Message {
    /// The message as one line of the inbox protocol.
    pub fn line(&self) -> String {
        json!({
            "type": "user",
            "message": {"role": "user", "content": self.text},
            "priority": "later",
            "session_id": self.session_id,
            "msg_id": self.msg_id,
            "from": self.from,
        })
        .to_string()
    }
}

/// Write `message` to the inbox at `socket` of process `pid`, with `token`.
/// Blocking: run on a thread of its own.
pub fn write(socket: &Path, pid: u32, token: &str, message: &Message) -> Result<(), String> {
    let sid = &message.session_id;
    let unreachable = |e: std::io::Error| {
        format!(
            "cannot reach Claude Code session {sid} at {}: {e}",
            socket.display()
        )
    };
    let mut stream = UnixStream::connect(socket).map_err(unreachable)?;
    match peer_pid(&stream) {
        Some(p) if p == pid => {}
        other => {
            return Err(format!(
            "{} is served by pid {}, not by Claude Code session {sid}'s process {pid}: not written",
            socket.display(),
            other.map_or("unknown".to_string(), |p| p.to_string())
        ))
        }
    }
    stream
        .set_write_timeout(Some(TIMEOUT))
        .map_err(unreachable)?;
    let auth = json!({"type": "auth", "token": token});
    let lines = format!("{auth}\n{}\n", message.line());
    stream.write_all(lines.as_bytes()).map_err(unreachable)?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}

/// The pid of the process at the other end of `stream`.
fn peer_pid(stream: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid socket and a buffer of the size passed.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0 && cred.pid > 0).then_some(cred.pid as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixListener;

    fn message() -> Message {
        Message {
            session_id: "s1".into(),
            msg_id: "m1".into(),
            from: "reveille-p".into(),
            text: "do s2".into(),
        }
    }

    #[test]
    fn the_auth_line_and_a_later_message_reach_the_registered_process_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let me = std::process::id();
        // Two connections: the message, then one refused by its peer check.
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..2 {
                let mut text = String::new();
                listener
                    .accept()
                    .unwrap()
                    .0
                    .read_to_string(&mut text)
                    .unwrap();
                got.push(text);
            }
            got
        });
        write(&path, me, "tok", &message()).unwrap();
        let err = write(&path, me + 1, "tok", &message()).unwrap_err();
        assert!(err.contains("not by Claude Code session s1"), "{err}");
        let got = reader.join().unwrap();
        assert_eq!(got[1], "", "nothing written to another process");
        let got = &got[0];
        let lines: Vec<serde_json::Value> = got
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0], json!({"type": "auth", "token": "tok"}));
        assert_eq!(lines[1]["priority"], "later");
        assert_eq!(lines[1]["message"]["content"], "do s2");
        assert_eq!(lines[1]["session_id"], "s1");
        let gone = write(&dir.path().join("none.sock"), me, "tok", &message()).unwrap_err();
        assert!(gone.contains("cannot reach"), "{gone}");
    }
}
