//! reveille as a systemd user service, against the real programs: a real
//! `systemd --user` manager and a real journald (see `util::systemd`) run
//! the shipped `systemd/reveille@.service`, unchanged, with the built
//! `reveille` binary copied to where its `ExecStart=` points
//! (`~/.cargo/bin/reveille`). Drop-ins are added only where a test needs a
//! shorter timer. The manager's debug log (`systemctl --user log-level
//! debug`) records every `sd_notify` datagram it receives, which is how the
//! tests see READY/RELOADING/STOPPING/WATCHDOG themselves rather than
//! their side effects only.

use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

use crate::util::fifo::{mkfifo, Reader};
use crate::util::plans::task_complete;
use crate::util::reveille_unit::{self, install_reveille, UNIT};
use crate::util::systemd::SystemdUser;
use crate::util::wait_until;

const PLAN_ID: &str = "20250101T120000_0a1b2c3d";
const PLAN_ID_2: &str = "20250102T090000_1b2c3d4e";

/// A plan as the planning tool writes it: sequential steps, no annotations.
const STOCK_PLAN: &str = "# Ship the parser

- [ ] Write the parser
  Parse the checklist format.
- [ ] Test the parser
- [ ] Release it
";

fn field<'a>(entry: &'a Value, name: &str) -> &'a str {
    entry.get(name).and_then(Value::as_str).unwrap_or("")
}

fn messages(entries: &[Value]) -> Vec<&str> {
    entries.iter().map(|e| field(e, "MESSAGE")).collect()
}

/// A `Type=notify` unit that is just a shell script: `systemd-notify` sends
/// READY and STATUS (from a child process, hence `NotifyAccess=all`).
#[test]
fn shell_notify_unit_starts_after_ready_logs_and_stops_cleanly() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    sd.install_unit(
        "standin.service",
        "[Service]\n\
         Type=notify\n\
         NotifyAccess=all\n\
         ExecStart=/bin/sh -c 'echo hello from the stand-in; \
         systemd-notify --ready --status=\"watching 3 plans\"; exec sleep infinity'\n",
    );

    // `start` blocks until READY=1: the unit is active when it returns.
    sd.systemctl_ok(&["start", "standin.service"]);
    assert_eq!(sd.property("standin.service", "ActiveState"), "active");
    assert_eq!(
        sd.property("standin.service", "StatusText"),
        "watching 3 plans"
    );

    let entry = sd.wait_for_journal("standin.service", "its stdout", |e| {
        field(e, "MESSAGE") == "hello from the stand-in"
    });
    assert_eq!(field(&entry, "_TRANSPORT"), "stdout");
    assert_eq!(field(&entry, "_UID"), sd.uid().to_string());

    sd.systemctl_ok(&["stop", "standin.service"]);
    assert_eq!(sd.property("standin.service", "ActiveState"), "inactive");
    // No `Result=` check: a stopped unit nothing refers to is unloaded at
    // once, and a fresh unit reads `Result=success` whatever happened (see
    // `stop_drains_and_exits_zero`, which enables its unit).
    sd.wait_for_journal("standin.service", "the manager's 'Stopped' line", |e| {
        field(e, "MESSAGE").starts_with("Stopped standin.service")
    });
}

/// A unit that never sends READY=1 is not active when `start` returns
/// (proves the previous test's assertion could fail).
#[test]
fn notify_unit_without_ready_times_out() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    sd.install_unit(
        "silent.service",
        "[Service]\nType=notify\nTimeoutStartSec=1\nExecStart=/bin/sleep infinity\n",
    );
    let out = sd.systemctl(&["start", "silent.service"]);
    assert!(!out.status.success(), "start must fail without READY=1");
    assert_eq!(sd.property("silent.service", "Result"), "timeout");
}

/// `~/.config/reveille/proj.toml` with `extra` in `[project]`.
fn write_config(sd: &SystemdUser, default_session: &str, extra: &str) {
    reveille_unit::write_config(sd, default_session, extra, "");
}

/// `~/pl/<id>--<slug>__todo.md`, written in place (one open–write–close, as
/// `task_complete` rewrites it).
fn write_plan(sd: &SystemdUser, id: &str, slug: &str, text: &str) -> PathBuf {
    sd.write_home_file(&format!("pl/{id}--{slug}__todo.md"), text, 0o644)
}

/// The manager's debug records of the `sd_notify` datagrams it got from
/// the unit, in order: e.g. `"READY=1, STATUS=…"`.
fn notifications(sd: &SystemdUser) -> Vec<String> {
    sd.journal_json(UNIT)
        .iter()
        .filter_map(|e| {
            let m = field(e, "MESSAGE");
            let (_, rest) = m.split_once("Got notification message from PID ")?;
            let (_, body) = rest.split_once(" (")?;
            Some(body.trim_end_matches(')').to_owned())
        })
        .collect()
}

/// Waits for an entry about the unit or from one of `pids` (see
/// `journal_json_with_pids`) that satisfies `pred`.
fn wait_for_entry(
    sd: &SystemdUser,
    pids: &[&str],
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    wait_until(what, Duration::from_secs(10), || {
        sd.journal_json_with_pids(UNIT, pids)
            .into_iter()
            .find(|e| pred(e))
    })
}

/// Index of the first entry about the unit whose message satisfies `pred`.
fn position(entries: &[Value], what: &str, pred: impl Fn(&str) -> bool) -> usize {
    entries
        .iter()
        .position(|e| pred(field(e, "MESSAGE")))
        .unwrap_or_else(|| panic!("no entry {what} in {:#?}", messages(entries)))
}

/// A session directory `~/s/<id>/` holding a named pipe `fifo.in`, owned by
/// the manager's user (the daemon opens it for writing), and the test's
/// reader on it.
fn session_reader(sd: &SystemdUser, session: &str) -> Reader {
    let dir = sd.make_home_dir(&format!("s/{session}"));
    let path = dir.join("fifo.in");
    mkfifo(&path);
    chown(&path, Some(sd.uid()), Some(sd.gid())).unwrap();
    Reader::open(&path)
}

/// How long a prompt may take through the service manager.
const PROMPT_WAIT: Duration = Duration::from_secs(10);

#[test]
fn reveille_unit_passes_systemd_analyze_verify() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    let out = sd.analyze_verify(UNIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "verify failed: {stderr}");
    // systemd ignores unknown or unsupported lines with a warning only.
    assert!(stderr.trim().is_empty(), "verify complained: {stderr}");
}

/// `start` returns only after READY=1, which the daemon sends after its
/// start-up reconcile; STATUS= is already set then, and follows the plans.
/// The daemon picks journald by itself (no `[log]` in its config) and runs
/// under the unit's hardening.
#[test]
fn start_returns_after_ready_with_status_and_native_journal() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    sd.systemctl_ok(&["log-level", "debug"]);
    write_config(&sd, "sess1", "");
    // Lying there before the first start: baseline, counted, not announced.
    write_plan(&sd, PLAN_ID, "ship-the-parser", STOCK_PLAN);
    sd.make_home_dir("s");

    sd.systemctl_ok(&["start", "reveille@proj"]);
    // Right when `start` returns: running, and the reconcile is done (the
    // plan is counted in the status sent with READY=1).
    assert_eq!(sd.property(UNIT, "ActiveState"), "active");
    assert_eq!(sd.property(UNIT, "SubState"), "running");
    assert_eq!(sd.property(UNIT, "StatusText"), "1 plan, 0 prompts pending");
    let pid = sd.property(UNIT, "MainPID");

    let entries = sd.journal_json_with_pids(UNIT, &[&pid]);
    let ready_line = position(&entries, "'ready:'", |m| m.starts_with("ready: "));
    let started = position(&entries, "'Started'", |m| {
        m.starts_with("Started reveille@proj.service")
    });
    assert!(ready_line < started, "{:#?}", messages(&entries));
    assert_eq!(
        field(&entries[ready_line], "MESSAGE"),
        "ready: 1 plan, 0 prompts pending"
    );
    let notes = notifications(&sd);
    let ready = notes
        .iter()
        .position(|n| n.contains("READY=1"))
        .unwrap_or_else(|| panic!("no READY=1 in {notes:?}"));
    assert!(
        notes[..=ready]
            .iter()
            .any(|n| n.contains("STATUS=1 plan, 0 prompts pending")),
        "STATUS= comes with or before READY=1: {notes:?}"
    );

    // JOURNAL_STREAM matched stderr: native entries, nothing on stdout.
    // (The manager's forked child logs as "(reveille)" before the exec.)
    let ours: Vec<&Value> = entries
        .iter()
        .filter(|e| field(e, "_PID") == pid && field(e, "SYSLOG_IDENTIFIER") != "(reveille)")
        .collect();
    assert!(!ours.is_empty(), "no entries from pid {pid}");
    for e in &ours {
        assert_eq!(field(e, "_TRANSPORT"), "journal", "{e:#}");
        assert_eq!(field(e, "SYSLOG_IDENTIFIER"), "reveille", "{e:#}");
    }
    assert_eq!(field(&entries[ready_line], "PROJECT"), "proj");
    assert_eq!(
        field(&entries[ready_line], "PRIORITY"),
        "5",
        "info is notice"
    );

    // The hardening is applied to the real daemon, which still runs.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
            .unwrap_or("")
            .to_owned()
    };
    assert_eq!(line("NoNewPrivs:"), "1");
    assert_eq!(line("Seccomp:"), "2", "seccomp filter mode");
    assert_eq!(line("Umask:"), "0077");
    assert_eq!(
        line("Uid:").split_whitespace().next(),
        Some(sd.uid().to_string().as_str())
    );

    // A plan appears: STATUS= follows.
    write_plan(&sd, PLAN_ID_2, "second", STOCK_PLAN);
    sd.wait_for_property(
        UNIT,
        "StatusText",
        // The new plan's first step waits for a session with no FIFO yet.
        "2 plans, 1 prompt pending, 1 session unreachable",
        Duration::from_secs(10),
    );
    assert_eq!(sd.property(UNIT, "MainPID"), pid);
}

/// A stock plan and a `task_complete`-style rewrite wake the default
/// session's FIFO reader, one prompt per step as it unblocks; the
/// "announced" entries carry PLAN/STEP/SESSION/PROJECT and journalctl
/// filters on them.
#[test]
fn plan_changes_wake_a_fifo_reader_and_log_fields() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    write_config(&sd, "sess1", "");
    sd.make_home_dir("pl");
    let reader = session_reader(&sd, "sess1");
    sd.systemctl_ok(&["start", "reveille@proj"]);

    let plan = write_plan(&sd, PLAN_ID, "ship-the-parser", STOCK_PLAN);
    let first = reader.next(PROMPT_WAIT);
    assert!(first.contains("Write the parser"), "{first}");
    assert!(first.contains("Parse the checklist format."), "{first}");
    assert!(first.contains(&plan.file_name().unwrap().to_string_lossy().into_owned()));

    // Flip the first box in place, as an agent does.
    task_complete(&plan, "Write the parser");
    let second = reader.next(PROMPT_WAIT);
    assert!(second.contains("Test the parser"), "{second}");

    let announced = sd.wait_for_journal(UNIT, "announced s2", |e| {
        field(e, "STEP") == "s2" && field(e, "MESSAGE").starts_with("announced")
    });
    // Step 3 still waits for step 2: nothing else was written.
    assert_eq!(reader.rest(), "", "only the unblocked steps are sent");
    assert_eq!(field(&announced, "_TRANSPORT"), "journal");
    assert_eq!(field(&announced, "PLAN"), PLAN_ID);
    assert_eq!(field(&announced, "SESSION"), "sess1");
    assert_eq!(field(&announced, "PROJECT"), "proj");
    assert_eq!(field(&announced, "PRIORITY"), "5", "info is notice");
    // FILE= is the whole path, PLAN_NAME= the bare name.
    assert_eq!(field(&announced, "FILE"), plan.display().to_string());
    assert_eq!(
        field(&announced, "PLAN_NAME"),
        plan.file_name().unwrap().to_string_lossy()
    );

    // What `journalctl _SYSTEMD_USER_UNIT=reveille@proj.service PLAN=…` shows.
    let by_plan = sd.journal_matching(&[
        &format!("_SYSTEMD_USER_UNIT={UNIT}"),
        &format!("PLAN={PLAN_ID}"),
    ]);
    let steps: Vec<&str> = by_plan
        .iter()
        .filter(|e| field(e, "MESSAGE").starts_with("announced"))
        .map(|e| field(e, "STEP"))
        .collect();
    assert_eq!(steps, ["s1", "s2"], "{:#?}", messages(&by_plan));
    assert!(by_plan.iter().all(|e| field(e, "PLAN") == PLAN_ID));
    let by_session = sd.journal_matching(&["SESSION=sess1", "STEP=s2"]);
    assert!(
        messages(&by_session)
            .iter()
            .any(|m| m.starts_with("announced s2")),
        "{:#?}",
        messages(&by_session)
    );
    // A plan nobody wrote matches nothing.
    assert!(sd
        .journal_matching(&["PLAN=20990101T000000_00000000"])
        .is_empty());
}

/// `systemctl reload`: RELOADING=1 (+ MONOTONIC_USEC) then READY=1, same
/// process; an invalid config is refused — `systemctl reload` fails, the
/// unit's `ExecReload=` (`reveille reload`) exits 78 with the reason, and
/// `Status:` says the previous configuration runs until a good reload —
/// and the old one kept; a valid change takes effect.
#[test]
fn reload_keeps_the_process_refuses_bad_config_and_applies_good_config() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    sd.systemctl_ok(&["log-level", "debug"]);
    write_config(&sd, "sess1", "");
    sd.make_home_dir("pl");
    let sess1 = session_reader(&sd, "sess1");
    let sess2 = session_reader(&sd, "sess2");
    sd.systemctl_ok(&["start", "reveille@proj"]);
    let pid = sd.property(UNIT, "MainPID");

    let reload = |what: &str, ok: bool| {
        let before = notifications(&sd).len();
        let t = Instant::now();
        let out = sd.systemctl(&["reload", "reveille@proj"]);
        assert_eq!(
            out.status.success(),
            ok,
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "reload took {:?}",
            t.elapsed()
        );
        // `reveille reload` waits for the daemon's answer, so the job ends
        // after the daemon's own RELOADING=1 … READY=1.
        let notes = notifications(&sd);
        let new = &notes[before..];
        let reloading = new
            .iter()
            .position(|n| n.contains("RELOADING=1"))
            .unwrap_or_else(|| panic!("{what}: no RELOADING=1 in {new:?}"));
        assert!(
            new[reloading].contains("MONOTONIC_USEC="),
            "RELOADING=1 carries MONOTONIC_USEC: {new:?}"
        );
        assert!(
            new[reloading..].iter().any(|n| n.contains("READY=1")),
            "{new:?}"
        );
        sd.wait_for_property(UNIT, "ActiveState", "active", Duration::from_secs(5));
        assert_eq!(
            sd.property(UNIT, "MainPID"),
            pid,
            "a reload is not a restart"
        );
    };

    // An unknown key: refused, logged as an error naming it, old config kept.
    write_config(&sd, "sess2", "colour = \"blue\"");
    reload("the bad config", false);
    let refused = wait_for_entry(&sd, &[&pid], "the reload error", |e| {
        field(e, "MESSAGE").starts_with("reload failed")
    });
    assert_eq!(field(&refused, "PRIORITY"), "3", "an error");
    assert!(field(&refused, "MESSAGE").contains("colour"), "{refused:#}");
    // What `systemctl status` shows: the refusal in Status:, and the
    // ExecReload= process's own exit, EX_CONFIG.
    let status = sd.property(UNIT, "StatusText");
    assert!(
        status.contains("; reload refused, running the previous configuration: project.colour"),
        "{status}"
    );
    let shown = String::from_utf8_lossy(&sd.systemctl(&["status", UNIT]).stdout).into_owned();
    assert!(
        shown.contains("reload refused, running the previous configuration"),
        "{shown}"
    );
    assert!(
        shown.contains("ExecReload=") && shown.contains("(code=exited, status=78)"),
        "{shown}"
    );
    // The reason reached the journal from `reveille reload` too. Any
    // entry of the manager's user: journald files the stderr of a process
    // as short-lived as the ExecReload= one under the unit only if it
    // learns its cgroup before the process is gone.
    wait_until("reveille reload's reason", Duration::from_secs(10), || {
        sd.journal_matching(&[]).into_iter().find(|e| {
            let m = field(e, "MESSAGE");
            m.starts_with("reveille: reload refused") && m.contains("line 4")
        })
    });
    write_plan(&sd, PLAN_ID, "one", STOCK_PLAN);
    let p = sess1.next(PROMPT_WAIT);
    assert!(p.contains("Write the parser"), "{p}");
    assert_eq!(sess2.rest(), "");

    // A valid change: new plans go to the new default session, and the
    // status no longer says a reload was refused.
    write_config(&sd, "sess2", "");
    reload("the good config", true);
    wait_for_entry(&sd, &[&pid], "the reload record", |e| {
        field(e, "MESSAGE") == "configuration reloaded"
    });
    let status = sd.property(UNIT, "StatusText");
    assert!(!status.contains("refused"), "{status}");
    write_plan(&sd, PLAN_ID_2, "two", STOCK_PLAN);
    let p = sess2.next(PROMPT_WAIT);
    assert!(p.contains(PLAN_ID_2), "{p}");
    assert_eq!(sess1.rest(), "");
    assert_eq!(sd.property(UNIT, "SubState"), "running");
}

/// A configuration error at start exits 78, which the unit does not
/// restart for: one failure, no restart loop, no start limit hit — and
/// once the file is fixed a plain `start` works (no `reset-failed`).
#[test]
fn a_config_error_is_not_restarted_and_a_fixed_file_starts() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    // As shipped but for a quick restart, so a restart loop would show.
    sd.install_unit(
        "reveille@.service.d/fast-restart.conf",
        "[Service]\nRestartSec=100ms\n",
    );
    write_config(&sd, "sess1", "plna_dir = \"~/pl\"");
    let out = sd.systemctl(&["start", "reveille@proj"]);
    assert!(!out.status.success(), "a bad configuration must not start");
    sd.wait_for_property(UNIT, "ActiveState", "failed", Duration::from_secs(10));
    assert_eq!(sd.property(UNIT, "ExecMainStatus"), "78");
    assert_eq!(sd.property(UNIT, "Result"), "exit-code");
    let why = sd.wait_for_journal(UNIT, "the configuration error", |e| {
        field(e, "MESSAGE").contains("project.plna_dir")
    });
    assert!(field(&why, "MESSAGE").contains("line 4"), "{why:#}");
    // Restarting every 100 ms would have used the start limit up by now:
    // the unit is still failed, and was never restarted.
    wait_until(
        "the manager to have settled",
        Duration::from_secs(5),
        || {
            sd.journal_json(UNIT)
                .iter()
                .any(|e| field(e, "MESSAGE").contains("Failed with result 'exit-code'"))
                .then_some(())
        },
    );
    let deadline = Instant::now() + Duration::from_millis(800);
    while Instant::now() < deadline {
        assert_eq!(sd.property(UNIT, "NRestarts"), "0");
        assert_eq!(sd.property(UNIT, "ActiveState"), "failed");
    }
    assert!(
        !sd.journal_json(UNIT)
            .iter()
            .any(|e| field(e, "MESSAGE").contains("Start request repeated too quickly")),
        "the start limit was hit"
    );

    write_config(&sd, "sess1", "");
    sd.systemctl_ok(&["start", "reveille@proj"]);
    assert_eq!(sd.property(UNIT, "ActiveState"), "active");
    assert_eq!(sd.property(UNIT, "NRestarts"), "0");
}

/// `kill -CONT`s a pid when dropped, so a failing test leaves no stopped
/// process behind.
struct Continue(Pid);

impl Drop for Continue {
    fn drop(&mut self) {
        let _ = kill(self.0, Signal::SIGCONT);
    }
}

/// WATCHDOG=1 comes from the event loop: a stopped loop misses it, systemd
/// kills the daemon (Result=watchdog) and restarts it (Restart=on-failure).
#[test]
fn watchdog_kills_and_restarts_a_stalled_daemon() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    sd.systemctl_ok(&["log-level", "debug"]);
    sd.install_unit(
        "reveille@.service.d/fast-watchdog.conf",
        "[Service]\nWatchdogSec=2\nRestartSec=200ms\nTimeoutAbortSec=5\nLimitCORE=0\n",
    );
    write_config(&sd, "sess1", "");
    sd.systemctl_ok(&["start", "reveille@proj"]);
    let first = sd.property(UNIT, "MainPID");
    assert_eq!(sd.property(UNIT, "WatchdogUSec"), "2s");
    // Pings every second keep it alive past the 2 s timeout.
    wait_until("3 WATCHDOG=1 pings", Duration::from_secs(10), || {
        let pings = notifications(&sd)
            .iter()
            .filter(|n| n.contains("WATCHDOG=1"))
            .count();
        (pings >= 3).then_some(())
    });
    assert_eq!(sd.property(UNIT, "NRestarts"), "0");
    assert_eq!(sd.property(UNIT, "MainPID"), first);

    let pid = Pid::from_raw(first.parse().unwrap());
    let _cont = Continue(pid);
    kill(pid, Signal::SIGSTOP).unwrap();
    sd.wait_for_journal(UNIT, "the manager's watchdog timeout", |e| {
        field(e, "MESSAGE").contains("Watchdog timeout")
    });
    // systemd sends the WatchdogSignal (SIGABRT), then SIGCONT itself, so
    // even a stopped process gets it: no help from us (`_cont` is only for
    // a failing test).
    sd.wait_for_journal(UNIT, "the watchdog failure", |e| {
        field(e, "MESSAGE").contains("Failed with result 'watchdog'")
    });
    sd.wait_for_journal(UNIT, "death by SIGABRT", |e| {
        let m = field(e, "MESSAGE");
        m.contains("Main process exited") && m.contains("status=6/ABRT")
    });
    sd.wait_for_property(UNIT, "NRestarts", "1", Duration::from_secs(10));
    sd.wait_for_property(UNIT, "ActiveState", "active", Duration::from_secs(10));
    let second = sd.property(UNIT, "MainPID");
    assert_ne!(second, first);
    assert!(
        !Path::new(&format!("/proc/{first}")).exists() || {
            // A zombie of another parent would still be listed; ours is reaped.
            std::fs::read_to_string(format!("/proc/{first}/status")).is_err()
        }
    );
    // The new process did its own start-up reconcile.
    let readies = sd
        .journal_json_with_pids(UNIT, &[&first, &second])
        .iter()
        .filter(|e| field(e, "MESSAGE").starts_with("ready: "))
        .count();
    assert_eq!(readies, 2);
    sd.systemctl_ok(&["stop", "reveille@proj"]);
}

/// `stop`: SIGTERM → STOPPING=1, drain, persist, exit 0 → Result=success.
#[test]
fn stop_drains_and_exits_zero() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    sd.systemctl_ok(&["log-level", "debug"]);
    write_config(&sd, "sess1", "");
    // Enabled, as users run it: default.target then refers to the unit, so
    // the manager keeps it loaded after it stops and `Result=` etc. are the
    // last run's, not a fresh unit's defaults.
    sd.systemctl_ok(&["enable", "--now", "reveille@proj"]);
    assert_eq!(sd.property(UNIT, "ActiveState"), "active");
    let pid = sd.property(UNIT, "MainPID");

    sd.systemctl_ok(&["stop", "reveille@proj"]);
    assert_eq!(sd.property(UNIT, "ActiveState"), "inactive");
    assert_eq!(sd.property(UNIT, "Result"), "success");
    assert_eq!(sd.property(UNIT, "ExecMainPID"), pid);
    assert_eq!(sd.property(UNIT, "ExecMainCode"), "1", "CLD_EXITED");
    assert_eq!(sd.property(UNIT, "ExecMainStatus"), "0");

    let entries = sd.journal_json_with_pids(UNIT, &[&pid]);
    let stopping = position(&entries, "'stopping:'", |m| m.starts_with("stopping: "));
    let stopped = position(&entries, "'stopped:'", |m| m.starts_with("stopped: "));
    let manager = position(&entries, "'Stopped'", |m| {
        m.starts_with("Stopped reveille@proj.service")
    });
    assert!(
        stopping < stopped && stopped < manager,
        "{:#?}",
        messages(&entries)
    );
    position(&entries, "'exited … 0/SUCCESS'", |m| {
        m.contains("Main process exited, code=exited, status=0/SUCCESS")
    });
    assert!(
        notifications(&sd).iter().any(|n| n.contains("STOPPING=1")),
        "{:?}",
        notifications(&sd)
    );
    // The state was persisted for the next start.
    assert!(sd.home().join("state").is_dir());
}

/// `RestrictAddressFamilies=` is really applied by this manager, and lets
/// through what the transports need: the shipped unit with only its
/// command replaced (a one-shot shell) may open AF_INET and AF_INET6
/// sockets (an opencode server, a Codex app-server on `ws://`), and is
/// still refused a netlink socket (`ip link`).
#[test]
fn reveille_unit_permits_inet_and_refuses_netlink() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    sd.install_unit(
        "reveille@.service.d/probe.conf",
        "[Service]\nType=oneshot\nExecStart=\n\
         ExecStart=/bin/bash -c 'exec 3<>/dev/udp/127.0.0.1/9 && echo inet allowed; \
         exec 4<>/dev/udp/::1/9 && echo inet6 allowed; exec /bin/ip -o link show lo'\n",
    );
    let out = sd.systemctl(&["start", "reveille@proj"]);
    assert!(!out.status.success(), "the netlink probe must fail");
    let entry = sd.wait_for_journal(UNIT, "ip's socket error", |e| {
        field(e, "MESSAGE").contains("netlink")
    });
    assert!(
        field(&entry, "MESSAGE").contains("Address family not supported"),
        "{entry:#}"
    );
    let said = sd.journal_json(UNIT);
    for allowed in ["inet allowed", "inet6 allowed"] {
        assert!(
            said.iter().any(|e| field(e, "MESSAGE") == allowed),
            "{allowed:?} missing: {:#?}",
            messages(&said)
        );
    }
    assert!(
        said.iter()
            .all(|e| !field(e, "MESSAGE").contains("LOOPBACK")),
        "ip listed the links: {:#?}",
        messages(&said)
    );
}
