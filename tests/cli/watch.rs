//! `reveille status --watch`: the live view in a real terminal (tmux)
//! following a real daemon and a named-pipe session — redrawn when a step
//! is ticked and when a prompt is delivered, honest when the daemon stops,
//! truncated to the terminal's width and following it, and the terminal
//! given back after `q` — and the snapshot stream it writes when its
//! output is not a terminal.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::{closed_pipe, full_disk, run_into, stderr};
use crate::util::agents::{tmux_unavailable, Tmux};
use crate::util::daemon::{bin, command, Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::{task_complete, task_plan, Step};
use crate::util::project::Project;
use crate::util::wait_until;

/// The last word of a long step title: never on screen when the title is
/// cut to the terminal's width.
const TAIL: &str = "TAILMARK";

/// `reveille status --watch` in an 80×24 tmux terminal, then (once it
/// ends) what it left: its exit status and the terminal's modes. The
/// shell survives a Ctrl-C as an interactive one does (a trap, which —
/// unlike an ignored signal — the program does not inherit).
fn watch_in_tmux(p: &Project) -> Tmux {
    let script = format!(
        "trap : INT; '{}' status --watch --config '{}'; echo \"watch exited $?\"; stty -a; exec cat",
        bin(),
        p.config.display()
    );
    let argv = vec!["sh".to_string(), "-c".to_string(), script];
    let env = vec![
        (
            "PATH".to_string(),
            std::env::var("PATH").unwrap_or_default(),
        ),
        ("HOME".to_string(), p.root.display().to_string()),
        ("LANG".to_string(), "C.UTF-8".to_string()),
    ];
    Tmux::start_sized(&p.root.join("tmux.sock"), &argv, &env, &p.root, (80, 24))
}

/// Wait until the screen shows every one of `needles`; returns it.
fn shows(t: &Tmux, what: &str, needles: &[&str]) -> String {
    let mut last = String::new();
    crate::util::try_wait_until(WAIT, || {
        last = t.screen();
        needles.iter().all(|n| last.contains(n)).then_some(())
    })
    .unwrap_or_else(|| panic!("the view never showed {what} ({needles:?}); it shows:\n{last}"));
    last
}

/// The row of `screen` holding `needle`.
fn row<'a>(screen: &'a str, needle: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no row with {needle:?}:\n{screen}"))
}

/// Every row as the program wrote it (wrapped rows joined) fits `cols`.
fn fits(t: &Tmux, cols: usize) {
    let joined = t.screen_joined();
    for line in joined.lines() {
        let width = line.trim_end().chars().count();
        assert!(
            width <= cols,
            "a row of {width} columns (wrapped?): {line:?}\n{joined}"
        );
    }
}

#[test]
fn the_live_view_follows_a_real_daemon_in_a_real_terminal() {
    if let Some(why) = tmux_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let p = Project::with_default_session("agent");
    let fifo = p.session("agent");
    let d = Daemon::start(&p);
    let t = watch_in_tmux(&p);
    shows(
        &t,
        "the running daemon",
        &[&format!("running, pid {}", d.pid())],
    );

    // No reader yet: the first step's prompt waits in the outbox.
    let long = format!("Then {} {TAIL}", "wire everything together ".repeat(6));
    let plan = task_plan(
        &p.plan_dir,
        "Ship it",
        &[Step::new("Build the thing"), Step::new(&long)],
    );
    let screen = shows(
        &t,
        "s1 pending",
        &["ready s1 Build the thing", "agent: 1 pending (s1)"],
    );
    assert!(row(&screen, "ready s1").ends_with("· pending"), "{screen}");

    // A reader appears: the prompt is delivered, and the view says so.
    let reader = Reader::open(&fifo);
    assert!(reader.next(WAIT).contains("Build the thing"));
    let screen = shows(&t, "s1 delivered", &["told s1: written", "nothing waits"]);
    assert!(row(&screen, "ready s1").ends_with("· told"), "{screen}");

    // The step is ticked: the next one is ready and told; its title is
    // cut at the edge, never wrapped.
    task_complete(&plan, "Build the thing");
    assert!(reader.next(WAIT).contains(TAIL));
    let screen = shows(&t, "s2 told", &["told s2: written", "1/2 checked"]);
    let s2 = row(&screen, "ready s2 Then");
    assert!(s2.ends_with('…') && s2.chars().count() == 80, "{s2:?}");
    assert!(!screen.contains(TAIL), "{screen}");
    fits(&t, 80);

    // A wider terminal shows more of it.
    t.resize(120, 30);
    let screen = shows(&t, "the wider terminal used", &["ready s2 Then"]);
    wait_until("the view redrawn 120 columns wide", WAIT, || {
        (row(&t.screen(), "ready s2 Then").chars().count() == 120).then_some(())
    });
    assert!(!screen.contains(TAIL));
    fits(&t, 120);

    // The daemon stops: the view says so, and still shows the state.
    d.term();
    let screen = shows(&t, "the stopped daemon", &["NOT RUNNING", "no daemon"]);
    assert!(screen.contains("ready s2 Then"), "{screen}");

    // `q`: the program ends, status 0, and the terminal is as it was.
    t.send(&["q"], true);
    let screen = shows(
        &t,
        "the exit and the terminal modes",
        &["watch exited 0", "icanon"],
    );
    let modes: Vec<&str> = screen.split_whitespace().collect();
    for (on, off) in [("icanon", "-icanon"), ("echo", "-echo"), ("isig", "-isig")] {
        assert!(
            modes.contains(&on) && !modes.contains(&off),
            "{on}: {screen}"
        );
    }
    assert_eq!(
        t.format("#{alternate_on}"),
        "0",
        "still on the alternate screen"
    );
    assert_eq!(
        t.format("#{cursor_flag}"),
        "1",
        "the cursor is still hidden"
    );
}

#[test]
fn ctrl_c_ends_the_view_and_gives_the_terminal_back() {
    if let Some(why) = tmux_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let p = Project::with_default_session("agent");
    std::fs::create_dir_all(&p.state_dir).unwrap();
    let t = watch_in_tmux(&p);
    shows(
        &t,
        "a project whose daemon never ran",
        &["NOT RUNNING", "never started"],
    );
    t.send(&["C-c"], false);
    let screen = shows(
        &t,
        "the exit and the terminal modes",
        &["watch exited 0", "icanon"],
    );
    let modes: Vec<&str> = screen.split_whitespace().collect();
    assert!(
        modes.contains(&"icanon") && modes.contains(&"echo"),
        "{screen}"
    );
    assert_eq!(t.format("#{alternate_on}"), "0");
}

/// The pid of the one child of `parent` (the program the pane's shell
/// runs), from `/proc`.
fn child_of(parent: u32) -> u32 {
    wait_until("the shell's child", WAIT, || {
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid: u32 = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (ppid == parent).then_some(pid)
        })
    })
}

/// The one-letter state of process `pid` (`S`, `T` for stopped, …).
fn process_state(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or_default();
    after
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn ctrl_z_gives_the_terminal_back_until_continued_and_sigterm_ends_it() {
    if let Some(why) = tmux_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let p = Project::with_default_session("agent");
    std::fs::create_dir_all(&p.state_dir).unwrap();
    let t = watch_in_tmux(&p);
    shows(&t, "the view", &["NOT RUNNING"]);
    let pid = child_of(t.pid);

    t.send(&["C-z"], false);
    wait_until("the view stopped, the terminal given back", WAIT, || {
        (process_state(pid) == "T" && t.format("#{alternate_on}") == "0").then_some(())
    });
    assert_eq!(t.format("#{cursor_flag}"), "1");

    kill(Pid::from_raw(pid as i32), Signal::SIGCONT).unwrap();
    wait_until("the view back on the alternate screen", WAIT, || {
        (t.format("#{alternate_on}") == "1" && t.screen().contains("NOT RUNNING")).then_some(())
    });

    kill(Pid::from_raw(pid as i32), Signal::SIGTERM).unwrap();
    let screen = shows(
        &t,
        "the exit and the terminal modes",
        &["watch exited 0", "icanon"],
    );
    let modes: Vec<&str> = screen.split_whitespace().collect();
    assert!(
        modes.contains(&"icanon") && modes.contains(&"echo"),
        "{screen}"
    );
    assert_eq!(t.format("#{alternate_on}"), "0");
    assert_eq!(t.format("#{cursor_flag}"), "1");
}

/// `reveille status --watch <args>` with its stdout a pipe, each line
/// handed over a channel.
fn stream(p: &Project, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = command()
        .args(["status", "--watch"])
        .args(args)
        .arg("--config")
        .arg(&p.config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn reveille status --watch");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// The next JSON Lines snapshot for which `want` holds (earlier ones are
/// skipped); panics after `WAIT`.
fn snapshot(
    rx: &mpsc::Receiver<String>,
    what: &str,
    want: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no snapshot with {what} within {WAIT:?}"));
        let v: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line}"));
        if want(&v) {
            return v;
        }
    }
}

fn end(mut child: Child, sig: Signal) -> std::process::ExitStatus {
    kill(Pid::from_raw(child.id() as i32), sig).unwrap();
    wait_until("status --watch to end", WAIT, || child.try_wait().unwrap())
}

#[test]
fn not_on_a_terminal_it_writes_a_json_line_each_time_the_status_changes() {
    let p = Project::with_default_session("agent");
    let fifo = p.session("agent");
    let _reader = Reader::open(&fifo);
    // The daemon never ran: no state directory yet.
    let (child, rx) = stream(&p, &["--json"]);
    let first = snapshot(&rx, "the first snapshot", |_| true);
    assert_eq!(first["running"], serde_json::Value::Null, "{first}");
    assert_eq!(first["started_before"], false, "{first}");

    // The state directory appears with the daemon, which is seen running.
    let d = Daemon::start(&p);
    let pid = d.pid();
    snapshot(&rx, "the daemon running", |v| v["running"] == pid);

    // A plan: its step is announced and delivered, in the stream too.
    task_plan(&p.plan_dir, "Stream it", &[Step::new("Only step")]);
    let v = snapshot(&rx, "s1 told to agent", |v| {
        v["sessions"][0]["last_delivery"]["step"] == "s1"
    });
    assert_eq!(
        v["sessions"][0]["last_delivery"]["outcome"], "written",
        "{v}"
    );
    assert_eq!(v["plans"][0]["ready"][0]["title"], "Only step", "{v}");

    // `kill -9` leaves no trace in the state directory; the tick sees it.
    d.kill9();
    snapshot(&rx, "the daemon gone", |v| v["running"].is_null());
    assert!(end(child, Signal::SIGTERM).success());
}

#[test]
fn not_on_a_terminal_the_text_snapshots_are_dated_and_sigint_ends_them() {
    let p = Project::with_default_session("agent");
    std::fs::create_dir_all(&p.state_dir).unwrap();
    let (child, rx) = stream(&p, &[]);
    let first = rx.recv_timeout(WAIT).expect("a first line");
    assert!(first.starts_with("--- 2"), "{first}");
    let second = rx.recv_timeout(WAIT).expect("a second line");
    assert!(second.starts_with("project it (not running)"), "{second}");
    assert!(end(child, Signal::SIGINT).success());
}

#[test]
fn a_closed_pipe_or_a_full_disk_ends_the_stream_as_for_any_command() {
    let p = Project::with_default_session("agent");
    std::fs::create_dir_all(&p.state_dir).unwrap();
    let config = p.config.display().to_string();
    for json in [false, true] {
        let mut args = vec!["status", "--watch", "--config", &config];
        if json {
            args.push("--json");
        }
        let mut cmd = command();
        cmd.args(&args);
        let out = run_into(cmd, closed_pipe());
        assert_eq!(out.status.code(), Some(141), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
        let mut cmd = command();
        cmd.args(&args);
        let out = run_into(cmd, full_disk());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("No space left on device"),
            "{}",
            stderr(&out)
        );
    }
}
