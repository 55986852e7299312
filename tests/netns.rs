//! Across a real network: two network namespaces joined by a veth pair
//! (`util::netns`), made by each test and torn down after it.
//!
//! - the harness itself: a server in the far namespace is reached from
//!   the near one, a cut link refuses, a healed one carries again, and
//!   the namespaces are gone afterwards even when the test panicked;
//! - `ollie`: the real ollie-9p served over 9P/TCP in the far namespace,
//!   mounted by 9pfuse in the near one, reveille's sessions on that mount.

mod codex;
mod ollie;
mod opencode;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::util::netns::{Link, Side};
use crate::util::wait_until;

/// The names `ip netns list` shows.
fn namespaces() -> String {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A process ended (killed and reaped) when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `socat` in the far namespace answering every connection to
/// `<far>:<port>` with one line.
fn greeter(link: &Link, port: u16) -> Running {
    let listen = format!("TCP-LISTEN:{port},bind={},fork,reuseaddr", link.far_ip());
    let child = link
        .exec(Side::Far, &["socat", &listen, "SYSTEM:echo hello from far"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("socat");
    Running(child)
}

/// One TCP connection from the near namespace: what the server said, or
/// bash's error.
fn call_from_near(link: &Link, port: u16) -> Result<String, String> {
    let script = format!("exec 3<>/dev/tcp/{}/{port} && cat <&3", link.far_ip());
    let out = link
        .enter(Side::Near, &["bash", "-c", &script])
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

#[test]
fn a_far_server_is_reached_refused_while_cut_and_reached_again_once_healed() {
    if which_socat().is_none() {
        return;
    }
    let Some(link) = Link::create_or_skip() else {
        return;
    };
    let _server = greeter(&link, 5640);
    let said = wait_until("the far server to answer", Duration::from_secs(10), || {
        call_from_near(&link, 5640).ok()
    });
    assert_eq!(said, "hello from far");
    link.cut();
    let refused = call_from_near(&link, 5640).expect_err("a cut link carries nothing");
    assert!(refused.contains("unreachable"), "{refused}");
    link.heal();
    let said = wait_until("the far server again", Duration::from_secs(10), || {
        call_from_near(&link, 5640).ok()
    });
    assert_eq!(said, "hello from far");
}

#[test]
fn the_namespaces_are_deleted_also_when_the_test_panics() {
    if Link::unavailable().is_some() {
        eprintln!("SKIPPED: network namespace tests need root and ip");
        return;
    }
    let mut made = Vec::new();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let link = Link::create();
        made = link.namespaces();
        let listed = namespaces();
        assert!(made.iter().all(|n| listed.contains(n.as_str())), "{listed}");
        panic!("the test fails");
    }));
    assert!(failed.is_err());
    assert_eq!(made.len(), 2);
    let now = namespaces();
    for name in made {
        assert!(!now.contains(&name), "{name} left behind: {now}");
    }
}

/// `socat` on PATH, or `None` after one `SKIPPED:` line.
pub fn which_socat() -> Option<()> {
    match Command::new("socat").arg("-V").output() {
        Ok(o) if o.status.success() => Some(()),
        _ => {
            eprintln!("SKIPPED: network tests need socat (apt-get install socat)");
            None
        }
    }
}
