//! Wake-ups as an ollie-9p agent experiences them, through the test
//! suite's ollie-9p double served over a real FUSE mount (the kernel path
//! 9pfuse uses): how long from a plan's close until the idle agent starts
//! its turn, beside a bare Submit measured in the same run; and what an
//! idle session tree costs — FUSE requests and context switches per
//! second with 1, 20 and 100 idle sessions.

use std::time::{Duration, Instant};

use super::doubles::fuse::fuse_unavailable;
use super::doubles::ollie::{Ollie, Options};
use super::plans::{plan_name, rewrite};
use super::process::{Daemon, Setup};
use super::Env;

const T: Duration = Duration::from_secs(20);

/// Why the double cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    fuse_unavailable()
}

/// Turns of 100 ms: shorter than any agent's, long enough that a turn is
/// seen running (reveille waits to see a Submitted turn start before it
/// writes the session's next prompt; a turn that starts and ends between
/// two of its looks costs the next prompt that wait, at most 2 s).
fn double() -> (Ollie, tempfile::TempDir) {
    let ollie = Ollie::with(Options {
        turn: Duration::from_millis(100),
        ..Options::default()
    });
    (ollie, tempfile::tempdir().unwrap())
}

/// Wait until `session` has run a turn whose prompt contains `needle`;
/// the instant it started.
fn turn_started(ollie: &Ollie, session: &str, needle: &str) -> Instant {
    super::doubles::wait_until(&format!("a turn on {needle}"), T, || {
        ollie
            .turns(session)
            .into_iter()
            .find(|t| t.prompt.contains(needle))
            .map(|t| t.started)
    })
}

/// `n` wake-ups of one idle agent: each a new one-step plan, from its
/// close (the instant before `close(2)`) to the agent's turn starting.
pub fn reveille(env: &Env, n: usize) -> Vec<Duration> {
    let (ollie, cwd) = double();
    ollie.create("agent", cwd.path());
    let tmp = env.tempdir("agents");
    let mut setup = Setup::new(tmp.path());
    setup.sessions_dir = ollie.sessions_dir();
    setup.default_session = Some("agent".into());
    let mut d = Daemon::start(&env.daemon, &setup);
    d.wait_ready(T);
    let mut wakes = Vec::with_capacity(n);
    for i in 0..n {
        let needle = format!("Agent wake {i} now");
        let path = setup.plan_dir.join(plan_name("agent", i));
        let closed = rewrite(&path, &format!("# Agent goal {i}\n\n- [ ] {needle}\n"));
        let started = turn_started(&ollie, "agent", &needle);
        wakes.push(started.saturating_duration_since(closed));
        ollie.wait_idle("agent", T);
    }
    d.stop();
    wakes
}

/// The same wake-ups with no daemon: the bench process itself Submits the
/// prompt to `prompt` right after the close — what any waker must at
/// least pay on this mount (open, write, close, the server's release).
pub fn bare_submit(n: usize) -> Vec<Duration> {
    let (ollie, cwd) = double();
    ollie.create("agent", cwd.path());
    let prompt = ollie.session_dir("agent").join("prompt");
    let mut wakes = Vec::with_capacity(n);
    for i in 0..n {
        let needle = format!("Bare wake {i} now");
        let closed = Instant::now();
        std::fs::write(&prompt, &needle).unwrap();
        let started = turn_started(&ollie, "agent", &needle);
        wakes.push(started.saturating_duration_since(closed));
        ollie.wait_idle("agent", T);
    }
    wakes
}

/// What an idle session tree costs the daemon and the server.
#[derive(Debug, Clone)]
pub struct IdleCost {
    pub sessions: usize,
    /// FUSE requests the server answered, per second.
    pub ops_per_s: f64,
    /// The daemon's context switches (all threads), per second.
    pub switches_per_s: f64,
}

/// `sessions` idle ollie sessions, no plan changing, nothing pending, the
/// default poll intervals: count requests and switches over `window`,
/// after the start-up scan has settled.
pub fn idle(env: &Env, sessions: usize, window: Duration) -> IdleCost {
    let (ollie, cwd) = double();
    for i in 0..sessions {
        ollie.create(&format!("idle-{i:03}"), cwd.path());
    }
    let tmp = env.tempdir("agents-idle");
    let mut setup = Setup::new(tmp.path());
    setup.sessions_dir = ollie.sessions_dir();
    let mut d = Daemon::start(&env.daemon, &setup);
    d.wait_ready(T);
    // The start-up scan lists every session's checklist; let it and the
    // first state polls pass.
    settle(Duration::from_secs(3));
    let (ops0, u0, t0) = (ollie.ops(), d.usage(), Instant::now());
    settle(window);
    let (ops1, u1, secs) = (ollie.ops(), d.usage(), t0.elapsed().as_secs_f64());
    d.stop();
    let switches =
        |u: &super::process::Usage| -> u64 { u.threads.iter().map(|(_, _, v, n)| v + n).sum() };
    IdleCost {
        sessions,
        ops_per_s: (ops1 - ops0) as f64 / secs,
        switches_per_s: switches(&u1).saturating_sub(switches(&u0)) as f64 / secs,
    }
}

/// The measured window itself: nothing to wait for but time (this is an
/// idle measurement), so a plain sleep is what it is.
fn settle(d: Duration) {
    std::thread::sleep(d);
}
