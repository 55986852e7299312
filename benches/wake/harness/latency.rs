//! Wake latency: from the return of a `task_complete` rewrite to the next
//! step's prompt being readable at the session FIFO — for reveille, for the
//! do-it-yourself shell waker, for the plain-Python waker, and for the floor
//! (an inotify read and a FIFO write, nothing else). And the CPU time each
//! process waker spends per wake.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::fifo::Reader;
use super::plans::{rewrite, Plans};
use super::process::{Daemon, Script, Setup};
use super::Env;

/// Which waker is being measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waker {
    Reveille,
    Diy,
    /// `benches/python-waker.py`: raw inotify, read, first unchecked step,
    /// one NUL-terminated write — the minimum, in an interpreter.
    Python,
    Floor,
    /// The floor plus every system call reveille's promises make per
    /// wake-up, with no work between them: the `stat` of the plan's path
    /// and a `pread` of it, a journal record appended before the prompt,
    /// the `stat` of the sessions root, the FIFO opened, `fstat`-ed,
    /// written and closed, the delivered mark appended, one log line.
    /// What no implementation keeping those promises can spend less than.
    FloorDurable,
}

/// Per-trial latencies, in the order taken.
pub struct Samples {
    pub wakes: Vec<Duration>,
    /// CPU time per wake (all threads of reveille and of the Python
    /// waker; the floor's one thread), from schedstat, over the timed
    /// rewrites and the plan creations between them.
    pub cpu_per_wake: Option<Duration>,
    /// reveille only: sd_notify datagrams per wake (STATUS= updates).
    pub notify_per_wake: Option<f64>,
}

const TIMEOUT: Duration = Duration::from_secs(10);

/// Run `plans` plans of `steps` steps through one waker, sequentially: each
/// plan is created (its first step announced, not counted), then its steps
/// are ticked one by one and each next step's prompt timed.
pub fn measure(env: &Env, waker: Waker, plans: usize, steps: usize) -> Samples {
    let tmp = env.tempdir(&format!("lat-{waker:?}"));
    let setup = Setup::new(tmp.path());
    let fifo = setup.add_session("bench");
    let readers = Reader::open_all(&[&fifo]);
    let running = match waker {
        Waker::Reveille => {
            let mut d = Daemon::start(&env.daemon, &setup);
            d.wait_ready(Duration::from_secs(30));
            Running::Reveille(d)
        }
        Waker::Diy => {
            let mut s = Script::start("sh", &env.diy_script, &[&setup.plan_dir, &fifo]);
            s.wait_for("Watches established");
            Running::Script(s)
        }
        Waker::Python => {
            let mut s = Script::start("python3", &env.python_script, &[&setup.plan_dir, &fifo]);
            s.wait_for("watching");
            Running::Script(s)
        }
        Waker::Floor => Running::Floor(Floor::start(&setup.plan_dir, &fifo, None)),
        Waker::FloorDurable => {
            let files = Durable::open(tmp.path(), &setup.plan_dir, &fifo);
            Running::Floor(Floor::start(&setup.plan_dir, &fifo, Some(files)))
        }
    };
    let cpu_before = running.cpu_ns();
    let notify_before = match &running {
        Running::Reveille(d) => Some(d.notify_count.load(std::sync::atomic::Ordering::Relaxed)),
        _ => None,
    };
    let mut p = Plans {
        dir: setup.plan_dir.clone(),
        tag: "lat".into(),
        steps,
        checked: vec![0; plans],
        sessions: vec!["bench".into(); plans],
    };
    let mut wakes = Vec::with_capacity(plans * (steps - 1));
    for i in 0..plans {
        rewrite(&p.path(i), &p.text(i));
        let first = readers.try_next_receipt(TIMEOUT);
        assert!(
            first.is_some(),
            "{waker:?}: no prompt for the first step of a new plan{}",
            running.log()
        );
        for _ in 1..steps {
            std::thread::sleep(Duration::from_millis(3));
            let t0 = p.complete_next(i);
            let Some(prompt) = readers.try_next_receipt(TIMEOUT) else {
                panic!(
                    "{waker:?}: no prompt within {TIMEOUT:?} after ticking step {} of plan {i}{}",
                    p.checked[i],
                    running.log()
                );
            };
            let next = p.checked[i] + 1;
            let expect = match waker {
                Waker::Reveille => Some(format!("Step s{next} ")),
                Waker::Diy | Waker::Python => Some(format!("Step {next}:")),
                Waker::Floor | Waker::FloorDurable => None,
            };
            if let Some(e) = expect {
                assert!(
                    prompt.text.contains(&e),
                    "{waker:?}: expected a prompt for step {next}, got {:?}",
                    prompt.text
                );
            }
            wakes.push(prompt.at.saturating_duration_since(t0));
        }
    }
    // Every plan creation wakes too (its first step), so all of them count.
    let wakes_total = (plans * steps) as f64;
    let cpu_per_wake = cpu_before
        .zip(running.cpu_ns())
        .map(|(a, b)| Duration::from_nanos((b.saturating_sub(a) as f64 / wakes_total) as u64));
    let mut notify_per_wake = None;
    if let Running::Reveille(d) = running {
        if let Some(n) = notify_before {
            let sent = d.notify_count.load(std::sync::atomic::Ordering::Relaxed) - n;
            notify_per_wake = Some(sent as f64 / wakes_total);
        }
        d.stop();
    }
    Samples {
        wakes,
        cpu_per_wake,
        notify_per_wake,
    }
}

enum Running {
    Reveille(Daemon),
    Script(Script),
    Floor(Floor),
}

impl Running {
    /// CPU time so far of every thread of the waker's process, or of the
    /// floor's one thread inside the harness.
    fn cpu_ns(&self) -> Option<u64> {
        match self {
            Running::Reveille(d) => Some(super::process::cpu_ns(d.pid())),
            Running::Script(s) => Some(super::process::cpu_ns(s.pid())),
            Running::Floor(f) => f.cpu_ns(),
        }
    }

    fn log(&self) -> String {
        match self {
            Running::Reveille(d) => format!("; reveille:\n{}", d.diagnose()),
            _ => String::new(),
        }
    }
}

/// Open the FIFO non-blocking, write a fixed NUL-terminated prompt, close;
/// with `check`, `fstat` what was opened first, as reveille does to tell a
/// FIFO from a regular file.
fn write_fifo(fifo: &CString, check: bool) {
    let msg = b"next step\0";
    // SAFETY: plain syscalls with a valid C string and buffers.
    unsafe {
        let w = libc::open(
            fifo.as_ptr(),
            libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        );
        if w >= 0 {
            if check {
                let mut st: libc::stat = std::mem::zeroed();
                libc::fstat(w, &mut st);
            }
            libc::write(w, msg.as_ptr().cast(), msg.len());
            libc::close(w);
        }
    }
}

/// The physical floor: one thread blocked in `read` on an inotify fd
/// watching the plan directory for `IN_CLOSE_WRITE`; for each event it
/// opens the FIFO non-blocking, writes a fixed NUL-terminated string and
/// closes it — the same open–write–close reveille does per prompt. Its
/// CPU time is what those system calls and one wake-up cost, and nothing
/// else.
pub struct Floor {
    dir: PathBuf,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The thread's id, for its schedstat.
    tid: std::sync::mpsc::Receiver<libc::pid_t>,
    tid_seen: std::cell::Cell<Option<libc::pid_t>>,
}

const STOP_NAME: &str = "floor.stop";

/// What the durable floor writes and reads besides the FIFO.
pub struct Durable {
    plan_dir: PathBuf,
    sessions: CString,
    journal: std::fs::File,
    log: std::fs::File,
    /// Plan files held open by name, as reveille holds them.
    held: std::collections::HashMap<Vec<u8>, std::fs::File>,
    buf: Vec<u8>,
}

impl Durable {
    fn open(tmp: &Path, plan_dir: &Path, fifo: &Path) -> Durable {
        let append = |name: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(tmp.join(name))
                .unwrap()
        };
        let sessions = fifo.parent().and_then(Path::parent).unwrap();
        Durable {
            plan_dir: plan_dir.to_path_buf(),
            sessions: CString::new(sessions.as_os_str().as_bytes()).unwrap(),
            journal: append("journal"),
            log: append("log"),
            held: Default::default(),
            buf: vec![0; 64 * 1024],
        }
    }

    /// Everything but the FIFO write, around `deliver`.
    fn wake(&mut self, name: &[u8], deliver: impl FnOnce()) {
        use std::io::Write;
        use std::os::unix::fs::FileExt;
        let path = self.plan_dir.join(std::ffi::OsStr::from_bytes(name));
        let _ = std::fs::metadata(&path);
        let file = self
            .held
            .entry(name.to_vec())
            .or_insert_with(|| std::fs::File::open(&path).unwrap());
        let _ = file.read_at(&mut self.buf, 0);
        let _ = self.journal.write_all(&[b'a'; 600]);
        // SAFETY: a stat buffer of the right type and a valid C string.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        unsafe { libc::stat(self.sessions.as_ptr(), &mut st) };
        deliver();
        let _ = self.journal.write_all(&[b'd'; 60]);
        let _ = self.log.write_all(&[b'l'; 200]);
    }
}

impl Floor {
    pub fn start(dir: &Path, fifo: &Path, mut durable: Option<Durable>) -> Floor {
        let cdir = CString::new(dir.as_os_str().as_bytes()).unwrap();
        let cfifo = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: plain syscalls with valid C strings.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
        assert!(fd >= 0);
        let wd = unsafe { libc::inotify_add_watch(fd, cdir.as_ptr(), libc::IN_CLOSE_WRITE) };
        assert!(
            wd >= 0,
            "inotify_add_watch: {}",
            std::io::Error::last_os_error()
        );
        let (tid_tx, tid) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            let _ = tid_tx.send(unsafe { libc::gettid() });
            let mut buf = [0u8; 4096];
            loop {
                let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    break;
                }
                let mut stop = false;
                let mut off = 0usize;
                while off + std::mem::size_of::<libc::inotify_event>() <= n as usize {
                    // SAFETY: the kernel wrote whole events into `buf`; the
                    // byte buffer has no alignment, hence the unaligned read.
                    let ev: libc::inotify_event =
                        unsafe { std::ptr::read_unaligned(buf.as_ptr().add(off).cast()) };
                    let name_at = off + std::mem::size_of::<libc::inotify_event>();
                    let name = &buf[name_at..name_at + ev.len as usize];
                    let name = name.split(|&b| b == 0).next().unwrap_or(&[]);
                    if name == STOP_NAME.as_bytes() {
                        stop = true;
                    } else if let Some(d) = durable.as_mut() {
                        d.wake(name, || write_fifo(&cfifo, true));
                    } else {
                        write_fifo(&cfifo, false);
                    }
                    off = name_at + ev.len as usize;
                }
                if stop {
                    break;
                }
            }
            unsafe { libc::close(fd) };
        });
        Floor {
            dir: dir.to_path_buf(),
            thread: Some(thread),
            tid,
            tid_seen: std::cell::Cell::new(None),
        }
    }

    /// The floor thread's CPU time so far.
    fn cpu_ns(&self) -> Option<u64> {
        if self.tid_seen.get().is_none() {
            self.tid_seen.set(self.tid.recv().ok());
        }
        let tid = self.tid_seen.get()?;
        let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
        s.split_whitespace().next()?.parse().ok()
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = std::fs::write(self.dir.join(STOP_NAME), "");
            let _ = t.join();
        }
    }
}

/// Medians of what a rewrite costs with nobody watching: the whole
/// open–truncate–write–close, and the `close` alone (which every latency
/// figure includes, see `plans::rewrite`).
pub fn rewrite_cost(dir: &Path) -> (Duration, Duration) {
    let path = dir.join("rewrite-cost.md");
    let text = super::plans::plan_text(0, 21, 10, "x");
    let mut whole = Vec::new();
    let mut close = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let before_close = rewrite(&path, &text);
        let end = Instant::now();
        whole.push(end - t);
        close.push(end - before_close);
    }
    (
        super::percentile(&whole, 50.0),
        super::percentile(&close, 50.0),
    )
}
