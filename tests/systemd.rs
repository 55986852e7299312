//! The systemd-facing pieces against the real programs: a real
//! `systemd --user` manager and a real journald (see `util::systemd`).
//! A stand-in daemon — this very test binary, running `standin_daemon` —
//! plays reveille inside `systemd/reveille@.service`, so the unit file, the
//! `Notifier` and the journald logging are checked together.

use std::time::Duration;

use serde_json::Value;

use crate::util::systemd::SystemdUser;

/// The unit file as shipped.
const REVEILLE_UNIT: &str = include_str!("../systemd/reveille@.service");
const PLAN_ID: &str = "20250101T120000_0a1b2c3d";

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
    assert_eq!(sd.property("standin.service", "Result"), "success");
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

/// Installs the shipped unit with a stand-in `~/.cargo/bin/reveille` that
/// runs `standin_daemon` in this test binary (as the unit's main process).
fn install_reveille(sd: &SystemdUser) {
    let test_binary = std::env::current_exe().expect("test binary path");
    sd.install_executable(
        ".cargo/bin/reveille",
        &format!(
            "#!/bin/sh\n\
             # Stand-in for reveille: the integration tests' standin_daemon.\n\
             export REVEILLE_STANDIN=\"$*\"\n\
             exec '{}' systemd::standin_daemon --exact --ignored --nocapture --test-threads=1\n",
            test_binary.display()
        ),
    );
    sd.install_unit("reveille@.service", REVEILLE_UNIT);
}

#[test]
fn reveille_unit_passes_systemd_analyze_verify() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    let out = sd.analyze_verify("reveille@proj.service");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "verify failed: {stderr}");
    // systemd ignores unknown or unsupported lines with a warning only.
    assert!(stderr.trim().is_empty(), "verify complained: {stderr}");
}

#[test]
fn reveille_unit_runs_hardened_reloads_logs_fields_and_stops() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    let unit = "reveille@proj.service";

    sd.systemctl_ok(&["start", "reveille@proj"]);
    assert_eq!(sd.property(unit, "ActiveState"), "active");
    assert_eq!(sd.property(unit, "StatusText"), "stand-in: watching 1 plan");
    assert_eq!(sd.property(unit, "WatchdogUSec"), "30s");

    // %i reached the command line, and the hardening is really applied.
    let pid = sd.property(unit, "MainPID");
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

    // The very first entry about the unit is there (journalctl
    // --after-cursor with matches would lose it: see util::journald::query).
    let starting = sd.wait_for_journal(unit, "the manager's 'Starting' line", |e| {
        field(e, "MESSAGE").starts_with("Starting reveille@proj.service")
    });
    assert_eq!(sd.journal_json(unit)[0], starting, "it is the first entry");

    // Auto logging chose journald, with our identifier and bare field names.
    let start = sd.wait_for_journal(unit, "the stand-in's start record", |e| {
        field(e, "MESSAGE") == "stand-in starting"
    });
    assert_eq!(field(&start, "SINK"), "Journald");
    assert_eq!(field(&start, "ARGS"), "run --project proj");
    assert_eq!(
        field(&start, "WATCHDOG_MS"),
        "15000",
        "half of WatchdogSec=30"
    );
    assert_eq!(field(&start, "SYSLOG_IDENTIFIER"), "reveille");
    assert!(
        field(&start, "INET").contains("Address family not supported"),
        "AF_INET is refused: {:?}",
        field(&start, "INET")
    );
    // The manager accepted every line: no "ignoring"/"Unknown" about it.
    let complaints: Vec<String> =
        crate::util::journald::query(&[format!("_PID={}", sd.manager_pid())], None)
            .iter()
            .map(|e| field(e, "MESSAGE").to_owned())
            .filter(|m| m.contains("reveille@") && (m.contains("gnoring") || m.contains("nknown")))
            .collect();
    assert!(complaints.is_empty(), "manager warnings: {complaints:?}");
    let announced = sd.wait_for_journal(unit, "PLAN= field", |e| field(e, "PLAN") == PLAN_ID);
    assert_eq!(field(&announced, "MESSAGE"), "announced step");
    assert_eq!(field(&announced, "STEP"), "s2");
    assert_eq!(field(&announced, "SESSION"), "sess-1");
    assert_eq!(field(&announced, "MOUNT"), "myproj");
    assert_eq!(field(&announced, "PROJECT"), "proj");
    assert_eq!(field(&announced, "PRIORITY"), "5", "info is notice");
    assert!(field(&announced, "F_PLAN").is_empty(), "no field prefix");
    // ...so journalctl can filter on them directly.
    let by_field = sd.journal_matching(&[
        &format!("PLAN={PLAN_ID}"),
        "STEP=s2",
        "SYSLOG_IDENTIFIER=reveille",
    ]);
    assert_eq!(messages(&by_field), ["announced step"]);

    // Reload: SIGHUP → RELOADING=1 + MONOTONIC_USEC → READY=1. On 252 the
    // reload job may finish when `kill` exits, before the daemon reacts, so
    // wait for the status the daemon sets before READY=1.
    sd.systemctl_ok(&["reload", "reveille@proj"]);
    sd.wait_for_property(
        unit,
        "StatusText",
        "stand-in: reloaded 1",
        Duration::from_secs(10),
    );
    sd.wait_for_journal(unit, "the reload record", |e| {
        field(e, "MESSAGE") == "reloading"
    });
    assert_eq!(sd.property(unit, "ActiveState"), "active");
    assert_eq!(
        sd.property(unit, "MainPID"),
        pid,
        "a reload is not a restart"
    );

    sd.systemctl_ok(&["stop", "reveille@proj"]);
    assert_eq!(sd.property(unit, "Result"), "success");
    let entries = sd.journal_json(unit);
    let msgs = messages(&entries);
    let stopping = msgs.iter().position(|m| *m == "stopping");
    let stopped = msgs.iter().position(|m| m.starts_with("Stopped "));
    assert!(
        matches!((stopping, stopped), (Some(a), Some(b)) if a < b),
        "stand-in logs 'stopping' before the manager's 'Stopped': {msgs:?}"
    );
}

/// A loop that stops sending WATCHDOG=1 is killed and restarted.
#[test]
fn reveille_unit_watchdog_restarts_a_stalled_daemon() {
    let Some(sd) = SystemdUser::start() else {
        return;
    };
    install_reveille(&sd);
    let unit = "reveille@proj.service";
    sd.install_unit(
        "reveille@.service.d/fast-watchdog.conf",
        "[Service]\nWatchdogSec=1\nRestartSec=100ms\n",
    );
    sd.systemctl_ok(&["start", "reveille@proj"]);
    let first = sd.property(unit, "MainPID");
    // Pinging every 500 ms keeps it alive past several timeouts.
    sd.wait_for_journal(unit, "watchdog pings", |e| {
        field(e, "MESSAGE") == "watchdog sent 4 pings"
    });
    assert_eq!(sd.property(unit, "NRestarts"), "0");

    sd.systemctl_ok(&["kill", "--signal=SIGUSR1", "reveille@proj"]);
    sd.wait_for_journal(unit, "the manager's watchdog timeout", |e| {
        field(e, "MESSAGE").contains("Watchdog timeout")
    });
    sd.wait_for_property(unit, "NRestarts", "1", Duration::from_secs(10));
    sd.wait_for_property(unit, "ActiveState", "active", Duration::from_secs(10));
    assert_ne!(sd.property(unit, "MainPID"), first);
    sd.systemctl_ok(&["stop", "reveille@proj"]);
}

/// Not a test: the stand-in daemon that `reveille@.service` runs in the
/// tests above (when `REVEILLE_STANDIN` is set). It does what the spec asks
/// of the real daemon's systemd side, with the real `Notifier` and logging.
#[test]
#[ignore = "run by the systemd tests as a stand-in daemon"]
fn standin_daemon() {
    use reveille::shell::logging::{self, LogTarget};
    use reveille::shell::systemd::Notifier;
    use tokio::signal::unix::{signal, SignalKind};

    let Ok(args) = std::env::var("REVEILLE_STANDIN") else {
        return;
    };
    let sink = logging::init(LogTarget::Auto, "info").expect("logging");
    let notifier = Notifier::from_env();
    let interval = notifier.watchdog_interval();
    // RestrictAddressFamilies=AF_UNIX must make this fail.
    let inet = std::net::UdpSocket::bind("127.0.0.1:0")
        .map_or_else(|e| e.to_string(), |_| "allowed".into());
    tracing::info!(
        sink = ?sink,
        args = %args,
        inet = %inet,
        watchdog_ms = interval.map_or(0, |d| d.as_millis() as u64),
        "stand-in starting"
    );
    tracing::info!(
        plan = PLAN_ID,
        step = "s2",
        session = "sess-1",
        mount = "myproj",
        project = "proj",
        "announced step"
    );
    notifier.status("stand-in: watching 1 plan");
    notifier.ready();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut hup = signal(SignalKind::hangup()).unwrap();
        let mut term = signal(SignalKind::terminate()).unwrap();
        let mut usr1 = signal(SignalKind::user_defined1()).unwrap();
        let mut tick = tokio::time::interval(interval.unwrap_or(Duration::from_secs(3600)));
        let (mut reloads, mut pings, mut stalled) = (0, 0u32, false);
        loop {
            tokio::select! {
                _ = hup.recv() => {
                    reloads += 1;
                    notifier.reloading();
                    tracing::info!(reloads, "reloading");
                    notifier.status(&format!("stand-in: reloaded {reloads}"));
                    notifier.ready();
                }
                _ = usr1.recv() => {
                    stalled = true;
                    tracing::info!("stalling: no more watchdog pings");
                }
                _ = term.recv() => {
                    notifier.stopping();
                    tracing::info!("stopping");
                    std::process::exit(0);
                }
                _ = tick.tick(), if interval.is_some() && !stalled => {
                    notifier.watchdog();
                    pings += 1;
                    if pings == 4 {
                        tracing::info!("watchdog sent 4 pings");
                    }
                }
            }
        }
    });
}
