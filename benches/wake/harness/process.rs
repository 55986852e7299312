//! Running the real daemon: a config file per run (written by the tests'
//! `config::Config`, started by the tests' `launch`), `NOTIFY_SOCKET` pointing
//! at a datagram socket of our own (so `READY=1` is timed exactly), stderr
//! drained by a thread (its tail is shown when something goes wrong), and
//! the `/proc` figures the benchmark reports: peak RSS, CPU time, context
//! switches.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::config::Config;

/// The directories of one benchmark setup and the config that names them.
pub struct Setup {
    pub root: PathBuf,
    pub plan_dir: PathBuf,
    pub sessions_dir: PathBuf,
    pub state_dir: PathBuf,
    pub beads_root: PathBuf,
    /// `[events] path`; `None` disables the tracker.
    pub events: Option<PathBuf>,
    /// `[beads] issues_jsonl`.
    pub issues: Option<PathBuf>,
    /// `[events.assignees]`.
    pub assignees: Vec<(String, String)>,
    /// `[project] default_session`.
    pub default_session: Option<String>,
}

impl Setup {
    pub fn new(root: &Path) -> Setup {
        let s = Setup {
            root: root.to_path_buf(),
            plan_dir: root.join("pl"),
            sessions_dir: root.join("s"),
            state_dir: root.join("state"),
            beads_root: root.join("beads"),
            events: None,
            issues: None,
            assignees: Vec::new(),
            default_session: None,
        };
        for d in [&s.plan_dir, &s.sessions_dir, &s.beads_root.join("bench")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(s.beads_root.join("bench/ready"), "").unwrap();
        s
    }

    /// `<sessions>/<id>/fifo.in`, created as a named pipe.
    pub fn add_session(&self, id: &str) -> PathBuf {
        let dir = self.sessions_dir.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo.in");
        super::fifo::mkfifo(&fifo);
        fifo
    }

    /// Write `reveille.toml` (through the tests' `Config`); its path.
    pub fn write_config(&self) -> PathBuf {
        let mut c = Config::new();
        c.name("bench")
            .plan_dir(&self.plan_dir)
            .sessions_dir(&self.sessions_dir)
            .events(self.events.as_deref())
            .beads(&self.beads_root, &["bench"])
            .issues(self.issues.as_deref())
            .state_dir(&self.state_dir)
            .log("stderr", "info");
        if let Some(s) = &self.default_session {
            c.default_session(s);
        }
        for (assignee, session) in &self.assignees {
            c.assignee(assignee, session);
        }
        let path = self.root.join("reveille.toml");
        c.write(&path);
        path
    }
}

/// One running `reveille run`.
pub struct Daemon {
    child: Child,
    /// `sd_notify` datagrams with the instant each arrived. A thread keeps
    /// the socket drained, as the service manager does: the daemon's send
    /// blocks when the receive queue is full.
    notify: std::sync::mpsc::Receiver<(Instant, String)>,
    /// How many datagrams arrived (READY, STATUS, …).
    pub notify_count: Arc<std::sync::atomic::AtomicU64>,
    spawned: Instant,
    /// The last lines of its stderr.
    log: Arc<Mutex<VecDeque<String>>>,
}

/// Process-wide figures at one instant.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// utime + stime of the whole process (dead threads included), ms.
    pub cpu_ms: f64,
    /// Time on CPU of the live threads (`schedstat`, nanoseconds).
    pub run_ns: u64,
    /// Per live thread: (tid, name, voluntary, nonvoluntary switches).
    pub threads: Vec<(u32, String, u64, u64)>,
}

impl Daemon {
    /// Start `bin run --config <setup's config>`.
    pub fn start(bin: &Path, setup: &Setup) -> Daemon {
        let config = setup.write_config();
        let sock = setup.root.join("notify.sock");
        let _ = std::fs::remove_file(&sock);
        let notify = UnixDatagram::bind(&sock).expect("bind the notify socket");
        let mut cmd = super::launch::command_for(bin);
        cmd.arg("run")
            .arg("--config")
            .arg(&config)
            .env("HOME", &setup.root)
            .env("NOTIFY_SOCKET", &sock)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // Its own process group, so nothing reaches it by accident.
        cmd.process_group(0);
        let spawned = Instant::now();
        let mut child = cmd.spawn().expect("spawn reveille");
        let log = Arc::new(Mutex::new(VecDeque::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let mut l = sink.lock().unwrap();
                if l.len() >= 40 {
                    l.pop_front();
                }
                l.push_back(line);
            }
        });
        let (tx, notify_rx) = std::sync::mpsc::channel();
        let notify_count = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let count = notify_count.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = notify.recv(&mut buf) {
                count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                if tx.send((Instant::now(), msg)).is_err() {
                    // Nobody listens any more; keep draining.
                    let mut sink = [0u8; 4096];
                    while notify.recv(&mut sink).is_ok() {
                        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    return;
                }
            }
        });
        Daemon {
            child,
            notify: notify_rx,
            notify_count,
            spawned,
            log,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The tail of its stderr, for error messages.
    pub fn log_tail(&self) -> String {
        self.log
            .lock()
            .unwrap()
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Each thread's name, state and wait channel, and the stderr tail: what
    /// to look at when a prompt does not come.
    pub fn diagnose(&self) -> String {
        let pid = self.pid();
        let mut out = String::new();
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for e in dir.flatten() {
                let p = e.path();
                let read = |f: &str| std::fs::read_to_string(p.join(f)).unwrap_or_default();
                let status = read("status");
                let state = status
                    .lines()
                    .find_map(|l| l.strip_prefix("State:"))
                    .unwrap_or("")
                    .trim()
                    .to_string();
                out.push_str(&format!(
                    "thread {} {}: {state}, wchan {}\n",
                    e.file_name().to_string_lossy(),
                    read("comm").trim(),
                    read("wchan").trim()
                ));
            }
        }
        out.push_str("stderr:\n");
        out.push_str(&self.log_tail());
        out
    }

    /// Wait for `READY=1`; the time since spawn.
    pub fn wait_ready(&mut self, timeout: Duration) -> Duration {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "reveille sent no READY=1 within {timeout:?}; its stderr:\n{}",
                self.log_tail()
            );
            if let Ok((at, msg)) = self
                .notify
                .recv_timeout(left.min(Duration::from_millis(100)))
            {
                if msg.lines().any(|l| l == "READY=1") {
                    return at - self.spawned;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "reveille exited with {status}; its stderr:\n{}",
                    self.log_tail()
                );
            }
        }
    }

    /// Peak resident set (`VmHWM`), KiB.
    pub fn vm_hwm_kib(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        field_kib(&s, "VmHWM:")
    }

    /// CPU time and per-thread context switches now.
    pub fn usage(&self) -> Usage {
        let pid = self.pid();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the `(comm)`: state is field 3; utime 14, stime 15.
        let after = stat.rsplit_once(") ").map_or("", |(_, r)| r);
        let f: Vec<&str> = after.split_whitespace().collect();
        let tick = clock_tick();
        let ticks = f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let mut threads = Vec::new();
        let run_ns = cpu_ns(pid);
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for e in dir.flatten() {
                let tid: u32 = e.file_name().to_string_lossy().parse().unwrap_or(0);
                let s = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
                let name = s
                    .lines()
                    .find_map(|l| l.strip_prefix("Name:"))
                    .unwrap_or("")
                    .trim()
                    .to_string();
                threads.push((
                    tid,
                    name,
                    field_num(&s, "voluntary_ctxt_switches:"),
                    field_num(&s, "nonvoluntary_ctxt_switches:"),
                ));
            }
        }
        Usage {
            cpu_ms: ticks as f64 * 1000.0 / tick,
            run_ns,
            threads,
        }
    }

    /// SIGTERM, then wait for the exit (it drains and persists).
    pub fn stop(mut self) {
        // SAFETY: signalling the child we spawned, by its pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("reveille did not stop within 20 s of SIGTERM");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Context switches between two `Usage`s, over threads alive at both.
pub fn switches(a: &Usage, b: &Usage) -> (u64, u64, Vec<String>) {
    let (mut vol, mut nonvol) = (0, 0);
    let mut per = Vec::new();
    for (tid, name, v, n) in &b.threads {
        if let Some((_, _, v0, n0)) = a.threads.iter().find(|t| t.0 == *tid) {
            vol += v - v0;
            nonvol += n - n0;
            per.push(format!("{name}:{}", (v - v0) + (n - n0)));
        }
    }
    (vol, nonvol, per)
}

/// Time on CPU of every live thread of process `pid` (the first field of
/// `/proc/<pid>/task/*/schedstat`), nanoseconds.
pub fn cpu_ns(pid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    dir.flatten()
        .filter_map(|e| {
            let s = std::fs::read_to_string(e.path().join("schedstat")).ok()?;
            s.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

fn field_num(s: &str, key: &str) -> u64 {
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn field_kib(s: &str, key: &str) -> u64 {
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn clock_tick() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Run a script (`sh` or `python3`) in its own process group; killed (the
/// whole group, by its id) on drop.
pub struct Script {
    child: Child,
    pub stderr: Option<std::process::ChildStderr>,
}

impl Script {
    /// `interpreter script args…`; the interpreter is the child itself, so
    /// its pid is the script's (for `cpu_ns`).
    pub fn start(interpreter: &str, script: &Path, args: &[&Path]) -> Script {
        let mut cmd = Command::new(interpreter);
        cmd.arg(script)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().expect("spawn the script");
        let stderr = child.stderr.take();
        Script { child, stderr }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Block until a stderr line contains `what`.
    pub fn wait_for(&mut self, what: &str) {
        let stderr = self.stderr.take().unwrap();
        let mut r = BufReader::new(stderr);
        let mut line = String::new();
        loop {
            line.clear();
            let n = r.read_line(&mut line).unwrap_or(0);
            assert!(n > 0, "the script ended before saying {what:?}");
            if line.contains(what) {
                break;
            }
        }
        // Keep draining so the script never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while r.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        // SAFETY: signalling the process group we created, by its id.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGTERM) };
        let _ = self.child.wait();
    }
}
