//! Two network namespaces joined by a veth pair, made for one test and
//! always torn down: a "near" side (where a client such as 9pfuse runs)
//! and a "far" side (where a server listens), with addresses in a private
//! /30 of their own. The host's namespace is not joined to them: traffic
//! goes only between the two, so cutting the link cuts exactly it.
//!
//! ```ignore
//! let Some(link) = Link::create_or_skip() else { return };
//! let server = link.exec(Side::Far, &["socat", "TCP-LISTEN:564,fork", "UNIX-CONNECT:/x"]).spawn();
//! let mount = link.enter(Side::Near, &["9pfuse", &format!("tcp!{}!564", link.far_ip()), "/mnt"]);
//! link.cut();   // FUSE calls over it hang
//! link.heal();  // and go on
//! ```
//!
//! A server runs with `ip netns exec` (which also gives it a mount
//! namespace of its own); a client that mounts something runs with
//! `nsenter --net=/run/netns/<name>`, which keeps the caller's mount
//! namespace, so the mount is seen by the rest of the test and the daemon.
//! Needs root and `ip` (iproute2) and `nsenter` (util-linux).

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Which namespace of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Near,
    Far,
}

/// The pair of namespaces and the veth between them; deleted on drop
/// (deleting a namespace deletes its end of the veth, and so the pair).
pub struct Link {
    near: String,
    far: String,
    /// The veth end in each namespace.
    near_if: String,
    far_if: String,
    /// The /30: `.1` near, `.2` far.
    net: [u8; 3],
}

/// How many links this process made (with the pid: unique names).
static MADE: AtomicU32 = AtomicU32::new(0);

impl Link {
    /// Why links cannot be made here, if they cannot.
    pub fn unavailable() -> Option<String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Some("root (they create network namespaces)".into());
        }
        for tool in ["ip", "nsenter"] {
            let found = Command::new(tool).arg("-V").output().is_ok();
            if !found {
                return Some(format!("{tool} (apt-get install iproute2 util-linux)"));
            }
        }
        None
    }

    /// A fresh pair, or `None` after one `SKIPPED:` line saying why not.
    pub fn create_or_skip() -> Option<Link> {
        if let Some(why) = Link::unavailable() {
            eprintln!("SKIPPED: network namespace tests need {why}");
            return None;
        }
        Some(Link::create())
    }

    /// A fresh pair, up and addressed; panics with `ip`'s words if it
    /// cannot be made (what was made is deleted again).
    pub fn create() -> Link {
        let n = MADE.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let tag = format!("{pid}x{n}");
        // 10.<a>.<b>.0/30, different for each link of this process; the
        // namespaces are joined to nothing else, so no other network sees
        // these addresses.
        let k = (pid.wrapping_mul(64) ^ n.wrapping_mul(4)) & 0xffff;
        let link = Link {
            near: format!("rvnear{tag}"),
            far: format!("rvfar{tag}"),
            near_if: format!("rvn{tag}"),
            far_if: format!("rvf{tag}"),
            net: [10, (k >> 8) as u8, (k & 0xfc) as u8],
        };
        assert!(link.near_if.len() <= 15, "{} is too long", link.near_if);
        ip(&["netns", "add", &link.near]);
        ip(&["netns", "add", &link.far]);
        // From here on, Drop deletes both.
        ip(&[
            "link",
            "add",
            &link.near_if,
            "netns",
            &link.near,
            "type",
            "veth",
            "peer",
            "name",
            &link.far_if,
            "netns",
            &link.far,
        ]);
        for (ns, dev, ip_addr) in [
            (&link.near, &link.near_if, link.near_ip()),
            (&link.far, &link.far_if, link.far_ip()),
        ] {
            let cidr = format!("{ip_addr}/30");
            ip(&["-n", ns, "addr", "add", &cidr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        link
    }

    /// The near end's address.
    pub fn near_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(self.net[0], self.net[1], self.net[2], 1)
    }

    /// The far end's address.
    pub fn far_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(self.net[0], self.net[1], self.net[2], 2)
    }

    /// The two namespaces' names (near, far), as `ip netns list` shows them.
    pub fn namespaces(&self) -> Vec<String> {
        vec![self.near.clone(), self.far.clone()]
    }

    fn name(&self, side: Side) -> &str {
        match side {
            Side::Near => &self.near,
            Side::Far => &self.far,
        }
    }

    /// `ip netns exec <side> argv…`: for a server (it gets a mount
    /// namespace of its own, so nothing it mounts is seen outside).
    pub fn exec(&self, side: Side, argv: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", self.name(side)]).args(argv);
        cmd
    }

    /// `nsenter --net=/run/netns/<side> argv…`: the network of `side`,
    /// everything else the caller's (a FUSE mount it makes is ours).
    pub fn enter(&self, side: Side, argv: &[&str]) -> Command {
        let mut cmd = Command::new("nsenter");
        let path = Path::new("/run/netns").join(self.name(side));
        cmd.arg(format!("--net={}", path.display())).args(argv);
        cmd
    }

    /// Run `f` with this thread in `side`'s network (the rest of the
    /// process stays where it is), and come back after it, also when `f`
    /// panics. What `f` starts is there: a child process forked meanwhile
    /// (a server, the daemon), a socket bound meanwhile (its listener
    /// stays in that network however long it lives), a thread spawned
    /// meanwhile. Mounts and files are the caller's: both sides see the
    /// same file system.
    pub fn within<T>(&self, side: Side, f: impl FnOnce() -> T) -> T {
        let _back = Within::enter(&Path::new("/run/netns").join(self.name(side)));
        f()
    }

    /// Cut the link: the near end goes down, so nothing crosses (TCP
    /// connections are not ended: their packets are lost until `heal`).
    pub fn cut(&self) {
        ip(&["-n", &self.near, "link", "set", &self.near_if, "down"]);
    }

    /// Heal it: the near end up again (its address and route come back).
    pub fn heal(&self) {
        ip(&["-n", &self.near, "link", "set", &self.near_if, "up"]);
    }

    /// Cut it the other way: the link stays up, but the far side drops
    /// every packet that comes in over it (a firewall's DROP rule, or a
    /// router in between that lost its way). A client's route stays:
    /// what it sends is retransmitted until `pass`, not refused at once.
    pub fn drop_packets(&self) {
        self.firewall("-I", "INPUT", "-i");
    }

    /// Remove [`Link::drop_packets`]'s rule.
    pub fn pass_packets(&self) {
        self.firewall("-D", "INPUT", "-i");
    }

    /// Cut it one way: what the near side sends arrives, what the far
    /// side sends back over the link is dropped (a request is taken, its
    /// answer lost).
    pub fn drop_answers(&self) {
        self.firewall("-I", "OUTPUT", "-o");
    }

    /// Remove [`Link::drop_answers`]'s rule.
    pub fn pass_answers(&self) {
        self.firewall("-D", "OUTPUT", "-o");
    }

    fn firewall(&self, op: &str, chain: &str, dir: &str) {
        let out = self
            .exec(
                Side::Far,
                &["iptables", op, chain, dir, &self.far_if, "-j", "DROP"],
            )
            .output()
            .expect("run iptables");
        assert!(
            out.status.success(),
            "iptables {op}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        for ns in [&self.near, &self.far] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// This thread in another network namespace until dropped.
struct Within {
    home: std::fs::File,
}

impl Within {
    fn enter(ns: &Path) -> Within {
        let home = std::fs::File::open("/proc/thread-self/ns/net").expect("this thread's netns");
        setns(&std::fs::File::open(ns).expect("open the netns"), ns);
        Within { home }
    }
}

impl Drop for Within {
    fn drop(&mut self) {
        setns(&self.home, Path::new("/proc/thread-self/ns/net"));
    }
}

/// `setns(2)` this thread into the network namespace open as `file`.
fn setns(file: &std::fs::File, what: &Path) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid descriptor of a network namespace; only this
    // thread's namespace changes.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(
        rc,
        0,
        "setns {}: {}",
        what.display(),
        std::io::Error::last_os_error()
    );
}

/// `ip <args>`, which must succeed.
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}
