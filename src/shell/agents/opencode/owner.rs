//! Whether another opencode process may be running a session reveille is
//! about to prompt through the configured server.
//!
//! Every opencode process of a user keeps its sessions in one database
//! (`$XDG_DATA_HOME/opencode/opencode.db`), so any server can read — and
//! run — any session. A plain TUI (`opencode` without `--port`) opens no
//! listener, and a prompt sent into the session it shows through another
//! server was answered by both processes, in a loop. reveille can reach
//! only the server at its URL, so before each prompt it looks at this
//! machine's processes (`/proc`): the server is the process listening on
//! the URL's port; any *other* process with that server's database open
//! whose working directory is the session's directory may be showing the
//! session, and the prompt is refused, naming it, rather than risked.
//! `opencode attach` clients hold no database and are never in the way.
//! What cannot be seen (a server of another user, in a container) is not
//! judged.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// One opencode process.
#[derive(Debug, Clone)]
struct Process {
    pid: u32,
    cwd: Option<PathBuf>,
    /// The `opencode.db` files it has open.
    databases: Vec<PathBuf>,
    /// The socket inodes it holds.
    sockets: HashSet<u64>,
}

/// `Err` with the reason when another opencode process may own the
/// session in `directory`; `Ok` when none is seen (or nothing can be).
pub fn check(port: u16, url: &str, directory: &str) -> Result<(), String> {
    let listening = listeners(port);
    if listening.is_empty() {
        return Ok(());
    }
    let processes = opencode_processes();
    let Some(server) = processes
        .iter()
        .find(|p| p.sockets.iter().any(|s| listening.contains(s)))
    else {
        return Ok(());
    };
    let here = Path::new(directory);
    let other = processes.iter().find(|p| {
        p.pid != server.pid
            && p.cwd.as_deref() == Some(here)
            && p.databases.iter().any(|d| server.databases.contains(d))
    });
    match other {
        None => Ok(()),
        Some(p) => Err(format!(
            "another opencode process (pid {}, `{}`, in {directory}) shares the sessions of the server at {url} and may be running this one; a prompt sent through {url} would be answered by both. Quit it, or run it as `opencode attach {url}`",
            p.pid,
            cmdline(p.pid)
        )),
    }
}

/// The inodes of the sockets listening on `port` (IPv4 and IPv6).
fn listeners(port: u16) -> HashSet<u64> {
    let mut out = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st … inode: 0A is LISTEN.
            if f.len() < 10 || f[3] != "0A" {
                continue;
            }
            let local_port = f[1]
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) {
                if let Ok(inode) = f[9].parse() {
                    out.insert(inode);
                }
            }
        }
    }
    out
}

/// Every process whose name starts with `opencode`, with what it holds.
fn opencode_processes() -> Vec<Process> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let proc = entry.path();
        let named = fs::read_to_string(proc.join("comm")).is_ok_and(|c| c.starts_with("opencode"));
        if named {
            out.push(holdings(pid, &proc));
        }
    }
    out
}

fn holdings(pid: u32, proc: &Path) -> Process {
    let mut p = Process {
        pid,
        cwd: fs::read_link(proc.join("cwd")).ok(),
        databases: Vec::new(),
        sockets: HashSet::new(),
    };
    for fd in fs::read_dir(proc.join("fd"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let Ok(target) = fs::read_link(fd.path()) else {
            continue;
        };
        let text = target.to_string_lossy();
        if let Some(inode) = text
            .strip_prefix("socket:[")
            .and_then(|r| r.strip_suffix(']'))
        {
            if let Ok(inode) = inode.parse() {
                p.sockets.insert(inode);
            }
        } else if target.file_name().is_some_and(|n| n == "opencode.db")
            && !p.databases.contains(&target)
        {
            p.databases.push(target);
        }
    }
    p
}

fn cmdline(pid: u32) -> String {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_nobody_listens_on_judges_nothing() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        assert!(listeners(port).is_empty());
        assert_eq!(check(port, "http://127.0.0.1:1", "/"), Ok(()));
    }

    #[test]
    fn a_listening_socket_is_found_by_its_port() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let inodes = listeners(port);
        assert_eq!(inodes.len(), 1, "{inodes:?}");
        let me = holdings(std::process::id(), Path::new("/proc/self"));
        assert!(me.sockets.is_superset(&inodes), "this process holds it");
    }
}
