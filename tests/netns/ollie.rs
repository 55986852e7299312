//! The real ollie-9p across a network: olliesrv's 9P relayed to TCP in the
//! far namespace (`socat TCP-LISTEN:564,fork UNIX-CONNECT:<olliesrv's
//! socket>`, as `olliesrv -tcp` serves it), mounted in the near one by
//! plan9port's `9pfuse 'tcp!<far>!564' DIR` (run with `nsenter --net=`,
//! so the mount is in our mount namespace and the daemon's), and
//! reveille's `sessions.dir` on that mount. The test itself looks at the
//! server only through olliesrv's own local mount and the fake model's
//! log, never through the link it cuts.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{which_socat, Running};
use crate::realollie::{plan_path, sequential, ticked, toml, AGENT, TICKING};
use crate::util::daemon::Daemon;
use crate::util::netns::{Link, Side};
use crate::util::plans::{plan_text, write_in_place};
use crate::util::project::Project;
use crate::util::realollie::{self, Options, RealOllie};
use crate::util::wait_until;

/// How long one condition may take on two shared cores (a healed link's
/// TCP retransmission backs off to seconds).
const T: Duration = Duration::from_secs(30);

/// The 9P port in the far namespace.
const PORT: u16 = 564;

/// socat relaying 9P, in a process group of its own: dropping it kills
/// the whole group, the listener and the child serving each connection,
/// so every connection through it ends.
pub struct Relay(Running);

impl Drop for Relay {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.0 .0.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    }
}

/// olliesrv's 9P served on `<far>:564` (what `olliesrv -tcp` does).
fn relay(link: &Link, socket: &Path) -> Relay {
    use std::os::unix::process::CommandExt;
    let listen = format!("TCP-LISTEN:{PORT},bind={},fork,reuseaddr", link.far_ip());
    let connect = format!("UNIX-CONNECT:{}", socket.display());
    let child = link
        .exec(Side::Far, &["socat", &listen, &connect])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("socat");
    let relay = Relay(Running(child));
    wait_until("the relay to listen", T, || {
        let out = link
            .exec(Side::Far, &["ss", "-Hltn", &format!("sport = :{PORT}")])
            .output()
            .ok()?;
        (!out.stdout.is_empty()).then_some(())
    });
    relay
}

/// `9pfuse 'tcp!<far>!564' DIR` in the near namespace: the remote tree,
/// unmounted on drop.
pub struct TcpMount {
    dir: PathBuf,
}

impl TcpMount {
    /// Mounts at `dir` and waits until the tree is there (`s/idx`).
    pub fn mount(link: &Link, dir: &Path) -> TcpMount {
        let bin = realollie::package().join("bin/9pfuse");
        let addr = format!("tcp!{}!{PORT}", link.far_ip());
        let dir_s = dir.display().to_string();
        // 9pfuse daemonizes once the mount is made; the daemon keeps its
        // output, so that goes to a file (a pipe would never end).
        let log = dir.with_extension("9pfuse.log");
        let file = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let status = link
            .enter(Side::Near, &[&bin.display().to_string(), &addr, &dir_s])
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .status()
            .expect("9pfuse");
        assert!(
            status.success(),
            "9pfuse {addr} {dir_s}: {status}: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        let m = TcpMount {
            dir: dir.to_path_buf(),
        };
        wait_until("the remote tree mounted", T, || {
            m.dir.join("s/idx").is_file().then_some(())
        });
        m
    }

    /// Whether the mount is in our mount table.
    pub fn mounted(&self) -> bool {
        mounted(&self.dir)
    }
}

impl Drop for TcpMount {
    fn drop(&mut self) {
        if self.mounted() {
            let _ = Command::new("fusermount")
                .args(["-u", "-z"])
                .arg(&self.dir)
                .output();
        }
    }
}

/// Whether `dir` is a mount point in `/proc/self/mounts`.
pub fn mounted(dir: &Path) -> bool {
    let table = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let want = dir.display().to_string();
    table
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(want.as_str()))
}

/// One test's world. Dropped in field order: the daemon is the test's;
/// then the mount, the relay, the namespaces, the project, the server.
pub struct Remote {
    pub mount: Option<TcpMount>,
    pub relay: Option<Relay>,
    pub link: Link,
    pub project: Project,
    pub ollie: RealOllie,
    /// Where the mount goes (a directory of the project's).
    pub mnt: PathBuf,
    pub plans: PathBuf,
}

impl Remote {
    /// The real server with session [`AGENT`], relayed to TCP in the far
    /// namespace and mounted over it; a project whose sessions are on that
    /// mount. `None` after a `skipped`/`SKIPPED` line where it cannot run.
    pub fn start() -> Option<Remote> {
        which_socat()?;
        if let Some(why) = Link::unavailable() {
            eprintln!("SKIPPED: network namespace tests need {why}");
            return None;
        }
        let ollie = realollie::start_or_skip(Options::default())?;
        ollie.create(AGENT, &ollie.work());
        let link = Link::create();
        let relay = relay(&link, &ollie.socket());
        let mut project = Project::with_default_session(AGENT);
        let mnt = project.root.join("remote");
        std::fs::create_dir(&mnt).unwrap();
        let mount = TcpMount::mount(&link, &mnt);
        let plans = ollie.work().join("pl");
        std::fs::create_dir(&plans).unwrap();
        project.set("project", "plan_dir", &toml(&plans.display().to_string()));
        let sessions = mnt.join("s").display().to_string();
        project.set("sessions", "dir", &toml(&sessions));
        project.set("prompt", "template", &toml(TICKING));
        Some(Remote {
            mount: Some(mount),
            relay: Some(relay),
            link,
            project,
            ollie,
            mnt,
            plans,
        })
    }

    /// Whether the remote tree is mounted now.
    pub fn mounted(&self) -> bool {
        mounted(&self.mnt)
    }

    /// A plan of `titles`, one after the other, routed to [`AGENT`].
    pub fn plan(&self, goal: &str, titles: &[&str]) -> PathBuf {
        let path = plan_path(&self.plans, goal);
        write_in_place(&path, plan_text(goal, &sequential(titles), "").as_bytes());
        path
    }

    /// Waits until the agent ticked every one of `titles` in `plan`.
    pub fn wait_ticked(&self, plan: &Path, titles: &[&str], d: &Daemon) {
        let done =
            crate::util::try_wait_until(T, || titles.iter().all(|t| ticked(plan, t)).then_some(()));
        if done.is_none() {
            panic!(
                "the agent did not tick {titles:?} within {T:?}; the plan:\n{}\n{}\nreveille said:\n{}",
                std::fs::read_to_string(plan).unwrap_or_default(),
                self.ollie.describe(),
                d.log()
            );
        }
    }

    /// Each of `titles` ran in exactly one turn of the agent.
    pub fn each_once(&self, titles: &[&str]) {
        self.ollie.wait_quiet(T);
        for title in titles {
            let turns = self
                .ollie
                .turns()
                .into_iter()
                .filter(|t| t.ticks().iter().any(|(_, x)| x == title))
                .count();
            assert_eq!(turns, 1, "{title:?}: {}", self.ollie.describe());
        }
    }
}

#[test]
fn a_plan_runs_to_its_end_over_9p_tcp_through_a_link_cut_mid_plan() {
    let Some(remote) = Remote::start() else {
        return;
    };
    let d = Daemon::start(&remote.project);
    // The first step's turn is slow: the link is cut while it runs, so the
    // second step becomes ready (the agent's tick, on the server's side)
    // while reveille cannot reach the session.
    let titles = ["Lay out, delay=1", "Build up", "Finish off"];
    let plan = remote.plan("over the network", &titles);
    remote.ollie.wait_turn(titles[0], T);
    remote.link.cut();
    wait_until("the agent to tick step 1", T, || {
        ticked(&plan, titles[0]).then_some(())
    });
    let s1 = remote.ollie.wait_turn(titles[0], T);
    wait_until("the first turn to end", T, || {
        remote.ollie.turns_with(titles[0])[0].ended.map(drop)
    });
    assert!(s1.started > 0.0);
    assert!(
        remote.ollie.turns_with(titles[1]).is_empty(),
        "step 2 crossed a cut link"
    );
    remote.link.heal();
    remote.wait_ticked(&plan, &titles, &d);
    remote.each_once(&titles);
}

#[test]
fn a_mount_lost_with_its_connection_is_followed_until_it_is_back_and_the_step_delivered_once() {
    let Some(mut remote) = Remote::start() else {
        return;
    };
    let d = Daemon::start(&remote.project);
    let titles = ["Lay out, delay=1", "Build up", "Finish off"];
    let plan = remote.plan("over a lost connection", &titles);
    remote.ollie.wait_turn(titles[0], T);
    // s1's Submit confirmed (its read of prompt.prev done): a relay
    // dropped under that read leaves s1 in doubt until the tree is back,
    // and s2 is then not tried while it is away.
    wait_until("s1 confirmed", T, || {
        remote.project.pending(AGENT).is_empty().then_some(())
    });
    // The relay ends: every connection through it closes, 9pfuse exits
    // and its mount goes. The agent goes on (its server is fine) and
    // ticks step 1: step 2 is ready with nowhere to go.
    drop(remote.relay.take());
    wait_until("the mount to go", T, || (!remote.mounted()).then_some(()));
    wait_until("the agent to tick step 1", T, || {
        ticked(&plan, titles[0]).then_some(())
    });
    d.wait_log("announced s2 to session agent", T);
    let why = d.wait_log("cannot deliver to session agent", T);
    assert!(why.contains("does not exist (not mounted?"), "{why}");
    // The prompt waits in the outbox while the tree is away.
    wait_until("the first turn to end", T, || {
        remote.ollie.turns_with(titles[0])[0].ended.map(drop)
    });
    assert_eq!(remote.project.pending(AGENT), ["s2"]);
    assert!(remote.ollie.turns_with(titles[1]).is_empty());

    // Served and mounted again, as a person (or a unit) would.
    remote.relay = Some(relay(&remote.link, &remote.ollie.socket()));
    drop(remote.mount.take());
    remote.mount = Some(TcpMount::mount(&remote.link, &remote.mnt));
    remote.wait_ticked(&plan, &titles, &d);
    remote.each_once(&titles);
    d.wait_log("session agent is reachable again", T);
    // Said once for the whole episode, not once per retry.
    assert_eq!(
        d.log_count("cannot deliver to session agent"),
        1,
        "{}",
        d.log()
    );
    assert_eq!(
        d.log_count("session states unknown until"),
        1,
        "{}",
        d.log()
    );
    assert!(remote.project.pending(AGENT).is_empty());
}

#[test]
fn a_daemon_started_while_the_tree_is_not_mounted_follows_it_once_it_is() {
    let Some(mut remote) = Remote::start() else {
        return;
    };
    drop(remote.mount.take());
    let d = Daemon::start(&remote.project);
    d.wait_log("remote/s does not exist yet; watching", T);
    let titles = ["Lay out", "Build up", "Finish off"];
    let plan = remote.plan("before the mount", &titles);
    d.wait_log("announced s1 to session agent", T);
    d.wait_log("cannot deliver to session agent", T);
    // A mount is no inotify event: the daemon looks for the awaited root
    // and follows the tree's session states once it is there.
    remote.mount = Some(TcpMount::mount(&remote.link, &remote.mnt));
    d.wait_log("following ollie-9p session states through", T);
    remote.wait_ticked(&plan, &titles, &d);
    remote.each_once(&titles);
    assert_eq!(
        d.log_count("cannot deliver to session agent"),
        1,
        "{}",
        d.log()
    );
    let status = remote.project.status_json();
    assert!(
        !status.to_string().contains("does not exist"),
        "status still waits for the mounted tree: {status}"
    );
}

/// While the link is cut, everything of the daemon's that does not cross
/// it goes on: a step made ready by a local plan change is announced (and
/// waits for the link). Today the event loop itself reads the tree's
/// `idx` and opens the sessions root, and a cut link makes that read hang
/// until it heals: nothing at all happens meanwhile (measured: a tick made
/// 5 s before the heal was announced 0.1 s after it), and under the unit a
/// cut longer than `WatchdogSec=` (30 s) gets the daemon killed.
#[test]
fn a_cut_link_does_not_stop_the_daemon_from_announcing_a_local_change() {
    let Some(remote) = Remote::start() else {
        return;
    };
    let d = Daemon::start(&remote.project);
    let titles = ["Lay out, delay=1", "Build up"];
    let plan = remote.plan("a frozen loop", &titles);
    remote.ollie.wait_turn(titles[0], T);
    remote.link.cut();
    wait_until("the agent to tick step 1", T, || {
        ticked(&plan, titles[0]).then_some(())
    });
    let announced = crate::util::try_wait_until(T, || {
        (d.log_count("announced s2 to session agent") > 0).then_some(())
    });
    remote.link.heal();
    assert!(
        announced.is_some(),
        "step 2 was not announced while the link was cut:\n{}",
        d.log()
    );
    remote.wait_ticked(&plan, &titles, &d);
    remote.each_once(&titles);
}
