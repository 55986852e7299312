//! Output and errors like a well-kept Unix tool: no panic on a closed pipe
//! or a full disk, `status` from the state directory whatever became of
//! the configuration, `check` naming where it looked, every configuration
//! problem at once, and `run` saying the lock error once.

use std::fs;
use std::process::{Command, Stdio};

use super::{at_home, closed_pipe, full_disk, run_into, stderr, stdout};
use crate::util::daemon::{Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::{task_plan, Step};
use crate::util::project::Project;

/// Every command that prints, against one project with a plan.
fn printing_commands(p: &Project, plan: &std::path::Path) -> Vec<(String, Command)> {
    let config = p.config.display().to_string();
    let plan = plan.display().to_string();
    let sets: Vec<Vec<&str>> = vec![
        vec!["status", "--json", "--config", &config],
        vec!["status", "--config", &config],
        vec!["check", "--config", &config],
        vec!["ready", &plan],
        vec!["ready", "--json", &plan],
        vec!["why", &plan, "--config", &config],
        vec!["why", "--json", &plan, "--config", &config],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["--help"],
        vec!["--version"],
    ];
    sets.into_iter()
        .map(|args| {
            let mut cmd = crate::util::daemon::command();
            cmd.args(&args);
            (args.join(" "), cmd)
        })
        .collect()
}

fn project_with_plan() -> (Project, std::path::PathBuf) {
    let p = Project::with_default_session("agent");
    let plan = task_plan(
        &p.plan_dir,
        "Manners",
        &[Step::new("First"), Step::new("Second")],
    );
    (p, plan)
}

#[test]
fn a_closed_pipe_ends_every_command_quietly_with_the_sigpipe_status() {
    let (p, plan) = project_with_plan();
    for (what, cmd) in printing_commands(&p, &plan) {
        let out = run_into(cmd, closed_pipe());
        assert_eq!(out.status.code(), Some(141), "{what}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{what}");
    }
}

#[test]
fn a_full_disk_is_reported_once_with_a_failure_status() {
    let (p, plan) = project_with_plan();
    for (what, cmd) in printing_commands(&p, &plan) {
        let out = run_into(cmd, full_disk());
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.contains("No space left on device"), "{what}: {err}");
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
}

#[test]
fn status_shows_the_state_after_the_config_file_went_bad() {
    let p = Project::with_default_session("agent");
    let reader = Reader::open(&p.session("agent"));
    let d = Daemon::start(&p);
    let plan = task_plan(&p.plan_dir, "Keep going", &[Step::new("Only step")]);
    assert!(reader.next(WAIT).contains("Only step"));

    // A bad edit: a syntax error in the middle, and a typo after it.
    let text = p.config_text();
    let broken = text.replacen("[project]\n", "[project]\nmode = \nplna_dir = \"/x\"\n", 1);
    p.write_config_raw(&broken);
    let out = run_into(
        {
            let mut c = crate::util::daemon::command();
            c.args(["status", "--json", "--config"]).arg(&p.config);
            c
        },
        Stdio::piped(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("TOML syntax error").count(), 1, "{err}");
    let line = broken.lines().position(|l| l == "mode = ").unwrap() + 1;
    assert!(err.contains(&format!("line {line}")), "{err}");
    assert!(
        err.contains("project.plna_dir") && err.contains("did you mean plan_dir?"),
        "{err}"
    );
    let status: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(status["running"], d.pid(), "{status:#}");
    let plans = status["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 1, "{status:#}");
    assert_eq!(plans[0]["path"], plan.display().to_string());
    assert_eq!(plans[0]["announced"][0]["id"], "s1", "{status:#}");
}

#[test]
fn status_of_an_unknown_project_fails_naming_where_it_looked() {
    let home = tempfile::tempdir().unwrap();
    let out = run_into(
        at_home(home.path(), &["status", "--project", "nosuch"]),
        Stdio::piped(),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let config = home.path().join(".config/reveille/nosuch.toml");
    let state = home.path().join(".local/state/reveille/nosuch");
    assert!(err.contains("no project \"nosuch\""), "{err}");
    assert!(err.contains(&config.display().to_string()), "{err}");
    assert!(err.contains(&state.display().to_string()), "{err}");
    assert!(out.stdout.is_empty());

    // With a configuration file, a project never started is fine.
    fs::create_dir_all(config.parent().unwrap()).unwrap();
    fs::write(&config, "[events]\npath = \"\"\n").unwrap();
    let out = run_into(
        at_home(home.path(), &["status", "--project", "nosuch"]),
        Stdio::piped(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("never started"), "{}", stdout(&out));
}

#[test]
fn check_names_every_path_it_looked_at() {
    let home = tempfile::tempdir().unwrap();
    let out = run_into(
        at_home(home.path(), &["check", "--project", "p"]),
        Stdio::piped(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let first = stdout(&out).lines().next().unwrap_or_default().to_string();
    let looked = home.path().join(".config/reveille/p.toml");
    assert_eq!(
        first,
        format!(
            "# configuration file: none (looked for {}; built-in defaults and environment)",
            looked.display()
        )
    );
}

#[test]
fn every_configuration_problem_is_reported_at_once() {
    let p = Project::new();
    let text = p.config_text().replacen(
        "[project]\n",
        "[project]\nplan_dri = \"/x\"\nmode = \"eager\"\nnudge_done = \"maybe\"\n",
        1,
    );
    p.write_config_raw(&format!("{text}\n[sesions]\ndir = \"/y\"\n"));
    for sub in ["check", "run"] {
        let out = p.run_bounded(&[sub]);
        // A configuration error has a status of its own (EX_CONFIG).
        assert_eq!(out.status.code(), Some(78), "{sub}");
        let err = stderr(&out);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 4, "{sub}: {err}");
        for (key, hint) in [
            ("project.plan_dri", "did you mean plan_dir?"),
            ("project.mode", "expected one of reactive, queue"),
            ("project.nudge_done", "expected true or false, found text"),
            ("sesions", "did you mean sessions?"),
        ] {
            let line = lines
                .iter()
                .find(|l| l.contains(key))
                .unwrap_or_else(|| panic!("{sub}: {key} not in {err}"));
            assert!(line.starts_with("reveille: "), "{line}");
            assert!(line.contains(hint), "{line}");
            // The file and the line of the key, every kind of problem.
            let at = format!("{}, line ", p.config.display());
            assert!(line.contains(&at), "{line}");
        }
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn run_says_the_lock_error_once() {
    let p = Project::new();
    let _d = Daemon::start(&p);
    let out = p.run_bounded(&["run"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.matches("already running").count(), 1, "{err}");
}

#[test]
fn a_tracker_never_configured_is_one_info_line_not_warnings() {
    let home = tempfile::tempdir().unwrap();
    let mut p = Project::new();
    p.unset("events", "path");
    p.set("log", "level", "\"info\"");
    let log_path = p.root.join("quiet.log");
    let mut cmd = at_home(home.path(), &["run", "--config"]);
    cmd.arg(&p.config)
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log_path).unwrap());
    let mut child = cmd.spawn().expect("spawn reveille run");
    let log = crate::util::wait_until("the daemon to be ready", WAIT, || {
        let log = fs::read_to_string(&log_path).unwrap_or_default();
        log.contains("ready:").then_some(log)
    });
    let _ = child.kill();
    let _ = child.wait();
    let events = home.path().join("mnt/beads/events");
    let about: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("mnt/beads") || l.contains("ready file"))
        .collect();
    assert_eq!(about.len(), 1, "{log}");
    assert!(about[0].contains(" INFO "), "{log}");
    assert!(about[0].contains(&events.display().to_string()), "{log}");
    assert!(!log.contains(" WARN "), "{log}");
}

#[test]
fn completions_parse_and_the_man_page_covers_every_command() {
    let scratch = tempfile::tempdir().unwrap();
    for (shell, check) in [("bash", "bash -n"), ("zsh", "zsh -n"), ("fish", "fish -n")] {
        let mut cmd = crate::util::daemon::command();
        cmd.args(["completions", shell]);
        let out = run_into(cmd, Stdio::piped());
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        for sub in [
            "run",
            "check",
            "status",
            "ready",
            "why",
            "completions",
            "man",
        ] {
            assert!(script.contains(sub), "{shell} script lacks {sub}");
        }
        let path = scratch.path().join(shell);
        fs::write(&path, &script).unwrap();
        let interpreter = check.split(' ').next().unwrap();
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {interpreter}"))
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            // Only bash is certain to be on a test machine; the others are
            // checked where installed.
            assert_ne!(shell, "bash", "bash is needed to check the bash script");
            continue;
        }
        let parsed = Command::new(interpreter)
            .arg("-n")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            parsed.status.success(),
            "{check} rejects the {shell} script: {}",
            String::from_utf8_lossy(&parsed.stderr)
        );
    }

    let mut cmd = crate::util::daemon::command();
    cmd.arg("man");
    let out = run_into(cmd, Stdio::piped());
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(
        page.starts_with(".ie") || page.contains(".TH reveille 1"),
        "{page}"
    );
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH COMMANDS", ".SH EXTRA"] {
        assert!(page.contains(section), "no {section}:\n{page}");
    }
    for sub in ["run", "check", "status", "ready", "why", "completions"] {
        assert!(
            page.contains(&format!(".SS \"reveille {sub}")),
            "no {sub}:\n{page}"
        );
    }
    for topic in ["SIGHUP", "REVEILLE_", "RUST_LOG", "Exit status"] {
        assert!(page.contains(topic), "no {topic} in the man page");
    }
    // `--help` carries the same examples, files, signals and environment.
    let out = crate::util::daemon::command()
        .arg("--help")
        .output()
        .unwrap();
    let help = stdout(&out);
    for topic in ["Examples:", "Files:", "Signals", "Environment:", "SIGHUP"] {
        assert!(help.contains(topic), "no {topic} in --help:\n{help}");
    }
    let unit = include_str!("../../systemd/reveille@.service");
    assert!(unit.contains("\nDocumentation=man:reveille(1)\n"));
}
