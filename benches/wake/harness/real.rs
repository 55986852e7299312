//! Wake-ups as the real ollie-9p server's agent experiences them: the
//! unmodified `olliesrv` mounted by plan9port's `9pfuse`, with its fake
//! model (the test suite's `realollie` package, `../shared/realollie`).
//! Every figure is from a change (a plan written, a step ticked, a claim
//! in the tracker's log) to the model request that starts the agent's
//! turn on it — what the agent experiences — beside a bare Submit measured
//! in the same run: the bench process writing `prompt` itself, which no
//! waker can beat on this mount.
//!
//! Flows: a new plan; a step ticked right after a chain of two turns (a
//! person's, and a step queued behind it); a claim in a 9beads events log
//! on a FUSE mount, polled at `events.poll_interval_ms` like the real one.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::doubles::fuse::{Mount, Node, Tree};
use super::doubles::plan_edit;
use super::plans::plan_name;
use super::process::{Daemon, Setup};
use super::Env;

use super::realollie::{self, unix_now, Options, RealOllie};

const T: Duration = Duration::from_secs(20);
const AGENT: &str = "agent";

/// Why the real server cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    realollie::unavailable()
}

/// The measured wake latencies of one run, in seconds.
pub struct Flows {
    pub bare: Vec<f64>,
    pub new_plan: Vec<f64>,
    pub after_chain: Vec<f64>,
    pub claim: Vec<f64>,
}

/// The real server with one idle agent, and a daemon on its tree.
struct Rig {
    ollie: RealOllie,
    setup: Setup,
    daemon: Daemon,
    _tmp: tempfile::TempDir,
}

fn rig(env: &Env, configure: impl FnOnce(&mut Setup)) -> Rig {
    let ollie = RealOllie::start(Options { fake_delay: 0.05 });
    ollie.create(AGENT, &ollie.work());
    let tmp = env.tempdir("real");
    let mut setup = Setup::new(tmp.path());
    setup.sessions_dir = ollie.sessions_dir();
    // Plans under the session's cwd: its sandbox may read them.
    setup.plan_dir = ollie.work().join("pl");
    std::fs::create_dir_all(&setup.plan_dir).unwrap();
    setup.default_session = Some(AGENT.into());
    configure(&mut setup);
    let mut daemon = Daemon::start(&env.daemon, &setup);
    daemon.wait_ready(T);
    Rig {
        ollie,
        setup,
        daemon,
        _tmp: tmp,
    }
}

impl Rig {
    /// When the agent's turn on a prompt holding `needle` started (unix s).
    fn turn(&self, needle: &str) -> f64 {
        self.ollie.wait_turn(needle, T).started
    }

    fn quiet(&self) {
        self.ollie.wait_quiet(T);
    }

    fn stop(self) {
        self.daemon.stop();
    }

    /// A plan written whole (its close is the instant returned).
    fn plan(&self, i: usize, text: &str) -> (std::path::PathBuf, f64) {
        let path = self.setup.plan_dir.join(plan_name("real", i));
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        let at = unix_now();
        std::fs::rename(&tmp, &path).unwrap();
        (path, at)
    }
}

/// `n` bare Submits to an idle agent: the floor of any waker.
fn bare(n: usize) -> Vec<f64> {
    let ollie = RealOllie::start(Options { fake_delay: 0.05 });
    ollie.create(AGENT, &ollie.work());
    (0..n)
        .map(|i| {
            let needle = format!("Bare wake {i} now");
            let sent = ollie.submit(AGENT, &needle);
            let started = ollie.wait_turn(&needle, T).started;
            ollie.wait_quiet(T);
            started - sent
        })
        .collect()
}

/// `n` new one-step plans, each to the idle agent.
fn new_plan(env: &Env, n: usize) -> Vec<f64> {
    let r = rig(env, |_| {});
    let out = (0..n)
        .map(|i| {
            let needle = format!("Plan wake {i} now");
            let (_, at) = r.plan(i, &format!("# Goal {i}\n\n- [ ] {needle}\n"));
            let started = r.turn(&needle);
            r.quiet();
            started - at
        })
        .collect();
    r.stop();
    out
}

/// `n` times: a person's turn with a step queued behind it (one chain),
/// then the step after it ticked while the agent is idle.
fn after_chain(env: &Env, n: usize) -> Vec<f64> {
    let r = rig(env, |_| {});
    let out = (0..n)
        .map(|i| {
            r.ollie
                .submit(AGENT, &format!("a person's question {i} delay=0.3"));
            r.ollie.wait_turn(&format!("person's question {i}"), T);
            let first = format!("First {i} queued");
            let second = format!("Second {i} after the chain");
            let text = format!("# Chain {i}\n\n- [ ] {first}\n- [ ] {second}\n");
            let (path, _) = r.plan(i, &text);
            r.turn(&first);
            r.quiet();
            let at = tick(&path, &first);
            let started = r.turn(&second);
            r.quiet();
            started - at
        })
        .collect();
    r.stop();
    out
}

/// Tick `title` in place (the tests' `task_complete`, `plan_edit`); the
/// unix time just before the rewrite's close.
fn tick(path: &Path, title: &str) -> f64 {
    let closing = plan_edit::flip(path, title, "- [ ] ", "- [x] ")
        .unwrap()
        .unwrap_or_else(|| panic!("no open step {title:?} in {}", path.display()));
    unix_now() - closing.elapsed().as_secs_f64()
}

/// `n` claims: a `claimed` event appended to a 9beads-like log on a FUSE
/// mount (polled, as the real one is), the bead's `list` row naming the
/// claimer, whose session is the agent.
fn claim(env: &Env, n: usize) -> Vec<f64> {
    let tracker = Arc::new(Tracker::default());
    let mount = Mount::new(tracker.clone()).expect("mount the tracker");
    let root = mount.path().to_path_buf();
    let r = rig(env, |s| {
        s.beads_root = root.clone();
        s.events = Some(root.join("events"));
        s.assignees = vec![("agent-1".into(), AGENT.into())];
    });
    // The daemon follows the log from its end (a first start): the first
    // claim is appended after READY, so it is news.
    let out = (0..n)
        .map(|i| {
            let id = format!("bd-{i:04x}");
            let at = tracker.claim(&id, &format!("Claimed work {i}"));
            let started = r.turn(&format!("Task {id} was assigned"));
            r.quiet();
            started - at
        })
        .collect();
    r.stop();
    drop(mount);
    out
}

/// Every flow, `n` wake-ups each.
pub fn run(env: &Env, n: usize) -> Flows {
    Flows {
        bare: bare(n),
        new_plan: new_plan(env, n),
        after_chain: after_chain(env, n),
        claim: claim(env, n),
    }
}

/// A 9beads mount named `bench` as reveille reads it: `events` (a log that
/// only grows), `bench/ready` (nothing ready: claims only), `bench/list`
/// (every bead with its assignee), `mtab`.
#[derive(Default)]
struct Tracker {
    events: Mutex<Vec<u8>>,
    list: Mutex<String>,
}

impl Tracker {
    /// Claim `id` for agent-1; the instant the event was appended.
    fn claim(&self, id: &str, title: &str) -> f64 {
        self.list.lock().unwrap().push_str(&format!(
            "{id}\tin_progress\t-\tagent-1\t2026-12-02\t{title}\n"
        ));
        let line = format!("{{\"id\":\"{id}\",\"mount\":\"bench\",\"type\":\"claimed\"}}\n");
        let mut events = self.events.lock().unwrap();
        events.extend_from_slice(line.as_bytes());
        unix_now()
    }
}

impl Tree for Tracker {
    fn node(&self, path: &str) -> Option<Node> {
        match path {
            "" | "bench" => Some(Node::Dir),
            "events" | "mtab" | "bench/ready" | "bench/list" => Some(Node::File),
            _ => None,
        }
    }
    fn list(&self, dir: &str) -> Vec<String> {
        match dir {
            "" => vec!["events".into(), "mtab".into(), "bench".into()],
            "bench" => vec!["ready".into(), "list".into()],
            _ => Vec::new(),
        }
    }
    fn read(&self, path: &str) -> Result<Vec<u8>, i32> {
        Ok(match path {
            "events" => self.events.lock().unwrap().clone(),
            "mtab" => b"bench\t/nonexistent/bench\n".to_vec(),
            "bench/list" => self.list.lock().unwrap().clone().into_bytes(),
            "bench/ready" => Vec::new(),
            _ => return Err(libc::ENOENT),
        })
    }
    fn write(&self, _path: &str, _text: &[u8]) -> Result<(), i32> {
        Err(libc::EACCES)
    }
    fn remove(&self, _path: &str) -> Result<(), i32> {
        Err(libc::EPERM)
    }
    /// 9beads: stat reports the log's length.
    fn size(&self, path: &str) -> u64 {
        match path {
            "events" => self.events.lock().unwrap().len() as u64,
            _ => 0,
        }
    }
}
