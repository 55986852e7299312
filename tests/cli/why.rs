//! `reveille why FILE [STEP]` and `reveille ready` on files that are not
//! plans: what each unchecked step waits for, what the daemon did with it,
//! and a clear refusal for a file that is not a plan.

use std::fs;
use std::process::Stdio;

use super::{run_into, stderr, stdout};
use crate::util::daemon::{command, Daemon, WAIT};
use crate::util::fifo::Reader;
use crate::util::plans::{task_complete, task_plan_with, Step};
use crate::util::project::Project;

fn why(p: &Project, args: &[&str]) -> std::process::Output {
    let mut cmd = command();
    cmd.arg("why").args(args).arg("--config").arg(&p.config);
    run_into(cmd, Stdio::piped())
}

#[test]
fn why_says_what_each_step_waits_for_and_what_the_daemon_did() {
    let p = Project::with_default_session("agent");
    let reader = Reader::open(&p.session("agent"));
    let d = Daemon::start(&p);
    let plan = task_plan_with(
        &p.plan_dir,
        "Explain",
        &[
            Step::new("Design").after("none"),
            Step::new("Build").after("1"),
            Step::new("Docs").after("none"),
            Step::new("Ship").after("2, 3"),
        ],
        "",
    );
    let got = [reader.next(WAIT), reader.next(WAIT)];
    assert!(
        got[0].contains("Design") && got[1].contains("Docs"),
        "{got:?}"
    );
    // A plan for a session nobody reads: its step stays pending.
    let away = task_plan_with(
        &p.plan_dir,
        "Nobody home",
        &[Step::new("Lonely")],
        "<!-- session: away -->\n\n",
    );
    d.wait_log("no session directory", WAIT);

    let file = plan.display().to_string();
    let out = why(&p, &[&file]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let expected = [
        "s1\tDesign\n  ready\n  announced; delivered to session agent\n",
        "s2\tBuild\n  waits for s1\tDesign\n  not announced\n",
        "s3\tDocs\n  ready\n  announced; delivered to session agent\n",
        "s4\tShip\n  waits for s2\tBuild\n  waits for s3\tDocs\n  not announced\n",
    ];
    for e in expected {
        assert!(text.contains(e), "{e:?} not in:\n{text}");
    }

    // `status` names steps the same way: id, tab, title.
    let text = String::from_utf8_lossy(&p.run(&["status"]).stdout).into_owned();
    for line in [
        "    ready     s1\tDesign\n",
        "    announced s1\tDesign\n",
        "    announced s3\tDocs\n",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
    let status = p.status_json();
    let plan_status = status["plans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"] == plan.display().to_string())
        .unwrap();
    assert_eq!(
        plan_status["ready"][0],
        serde_json::json!({"id": "s1", "title": "Design"})
    );
    assert_eq!(plan_status["announced"][0]["session"], "agent");

    let away_file = away.display().to_string();
    let out = why(&p, &["--json", &away_file]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["known_to_daemon"], true);
    let step = &json["steps"][0];
    assert_eq!(step["id"], "s1");
    assert_eq!(step["standing"], "ready");
    assert_eq!(step["daemon"]["state"], "pending", "{json:#}");
    assert_eq!(step["daemon"]["session"], "away");
    // Why it waits, in words (`sessions.json` is written a moment after).
    crate::util::wait_until("why to say why s1 waits", WAIT, || {
        let text = stdout(&why(&p, &[&away_file]));
        text.contains("the last write was refused: no session directory yet")
            .then_some(())
    });
    // A fresh delivery is shown as announced now, not before a restart.
    let open = crate::util::wait_until("status to list the open steps", WAIT, || {
        let status = p.status_json();
        let open = status["reminders"].as_array()?.clone();
        open.into_iter()
            .find(|o| o["id"] == "s1" && o["session"] == "agent")
    });
    assert!(open["announced_ms"].is_u64(), "{open}");

    // One step, by id or by title; a checked one says so.
    let out = why(&p, &[&file, "ship"]);
    assert_eq!(
        stdout(&out).lines().skip(1).collect::<Vec<_>>(),
        [
            "s4\tShip",
            "  waits for s2\tBuild",
            "  waits for s3\tDocs",
            "  not announced"
        ]
    );
    task_complete(&plan, "Design");
    assert!(reader.next(WAIT).contains("Build"));
    let out = why(&p, &[&file, "s1"]);
    assert!(
        stdout(&out).contains("s1\tDesign\n  checked\n"),
        "{}",
        stdout(&out)
    );
    let out = why(&p, &[&file, "s9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no step \"s9\""), "{}", stderr(&out));
}

/// The line under `id`'s title in `why`'s text answer that says what the
/// daemon did.
fn daemon_line(p: &Project, plan: &std::path::Path, id: &str) -> String {
    let out = why(p, &[&plan.display().to_string(), id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    text.lines()
        .find(|l| l.starts_with("  not announced") || l.starts_with("  announced"))
        .unwrap_or_else(|| panic!("no daemon line for {id}:\n{text}"))
        .to_string()
}

#[test]
fn why_says_why_a_ready_step_was_not_announced() {
    let mut p = Project::new();
    p.set("sessions", "outbox_cap", "1");
    p.session("agent"); // a pipe nobody reads
    let d = Daemon::start(&p);
    let orphan = task_plan_with(&p.plan_dir, "Orphan", &[Step::new("Alone")], "");
    d.wait_log("has no session", WAIT);
    let crowded = task_plan_with(
        &p.plan_dir,
        "Crowded",
        &[
            Step::new("One").after("none"),
            Step::new("Two").after("none"),
        ],
        "<!-- session: agent -->\n\n",
    );
    d.wait_log("outbox full", WAIT);
    assert_eq!(
        daemon_line(&p, &orphan, "s1"),
        "  not announced: the plan has no session: add `<!-- session: <id> -->` to it, or set project.default_session"
    );
    assert!(daemon_line(&p, &crowded, "s1").starts_with("  announced; pending"));
    assert_eq!(
        daemon_line(&p, &crowded, "s2"),
        "  not announced: the outbox of session agent is full (1 prompts, outbox_cap = 1): announced once it drains"
    );

    d.term();
    let later = task_plan_with(
        &p.plan_dir,
        "Later",
        &[Step::new("Soon")],
        "<!-- session: other -->\n\n",
    );
    let out = why(&p, &["--json", &later.display().to_string()]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["running"], serde_json::Value::Null, "{json:#}");
    assert_eq!(
        json["steps"][0]["daemon"],
        serde_json::json!({"state": "not_announced", "reason": "no daemon runs: announced when it starts"})
    );
    let text = stdout(&why(&p, &[&later.display().to_string()]));
    assert!(
        text.contains("\ndaemon  not running: nothing is announced or delivered until it starts\n"),
        "{text}"
    );
}

#[test]
fn why_on_a_plan_the_daemon_does_not_know_still_explains_it() {
    let p = Project::new();
    let elsewhere = p.root.join("20250101T120000_0a1b2c3d--x__todo.md");
    fs::write(&elsewhere, "# X\n\n- [ ] A\n- [ ] B\n").unwrap();
    let out = why(&p, &["--json", &elsewhere.display().to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["known_to_daemon"], false);
    assert_eq!(json["steps"][0]["daemon"], serde_json::Value::Null);
    assert_eq!(json["steps"][1]["waits_for"][0]["id"], "s1");
}

#[test]
fn a_file_that_is_not_a_plan_is_refused_by_why_and_ready() {
    let p = Project::new();
    let notes = p.plan_dir.join("20250101T120000_0a1b2c3d--notes__todo.md");
    fs::write(&notes, "# Notes\n\nJust prose, no checklist.\n").unwrap();
    let json = p.plan_dir.join("empty.plan.json");
    fs::write(&json, r#"{"title": "Nothing yet"}"#).unwrap();
    for file in [&notes, &json] {
        let f = file.display().to_string();
        for args in [
            vec!["why", &f],
            vec!["ready", &f],
            vec!["ready", "--json", &f],
        ] {
            let mut cmd = command();
            cmd.args(&args);
            let out = run_into(cmd, Stdio::piped());
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let err = stderr(&out);
            assert!(err.contains("not a plan"), "{args:?}: {err}");
            assert!(err.contains(&f), "{args:?}: {err}");
            assert!(out.stdout.is_empty(), "{args:?}");
        }
    }
}

#[test]
fn why_on_an_issues_file_points_at_ready() {
    let p = Project::new();
    let issues = p.root.join("issues.jsonl");
    fs::write(&issues, "").unwrap();
    let mut cmd = command();
    cmd.arg("why").arg(&issues);
    let out = run_into(cmd, Stdio::piped());
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("`reveille ready"), "{}", stderr(&out));
}

#[test]
fn ready_on_a_file_the_daemon_ignores_warns_naming_the_rule() {
    let p = Project::new();
    let cases = [
        ("20250101T120000_0A1B2C3D--x__todo.md", "lowercase hex"),
        (
            "20250101T120000_0a1b2c3d--x__doing.md",
            "\"doing\" is not one of",
        ),
        ("20250101T120000_0a1b2c3d--ship_it__todo.md", "not '_'"),
        ("ship-it__todo.md", "YYYYMMDDTHHMMSS"),
    ];
    for (name, rule) in cases {
        let file = p.plan_dir.join(name);
        fs::write(&file, "# G\n\n- [x] A\n- [ ] B\n").unwrap();
        let mut cmd = command();
        cmd.arg("ready").arg(&file);
        let out = run_into(cmd, Stdio::piped());
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert_eq!(stdout(&out), "s2\tB\n", "{name}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains("the daemon ignores"), "{name}: {err}");
        assert!(err.contains(rule), "{name}: {err}");
    }
    // A well-named plan: no warning.
    let good = p.plan_dir.join("20250101T120000_0a1b2c3d--x__todo.md");
    fs::write(&good, "# G\n\n- [ ] A\n").unwrap();
    let mut cmd = command();
    cmd.arg("ready").arg(&good);
    let out = run_into(cmd, Stdio::piped());
    assert_eq!(stderr(&out), "");
}

#[test]
fn ready_json_has_one_shape_for_plans_and_issues() {
    let p = Project::new();
    let plan = p.plan_dir.join("20250101T120000_0a1b2c3d--x__todo.md");
    fs::write(&plan, "# G\n\n- [ ] A\n  the a\n").unwrap();
    let issues = p.root.join("issues.jsonl");
    fs::write(
        &issues,
        r#"{"id":"bd-1","title":"Fix it","status":"open","issue_type":"task"}"#.to_string() + "\n",
    )
    .unwrap();
    let keys = |file: &std::path::Path| -> Vec<String> {
        let mut cmd = command();
        cmd.arg("ready").arg("--json").arg(file);
        let out = run_into(cmd, Stdio::piped());
        assert!(out.status.success(), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let mut keys: Vec<String> = json[0].as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(&plan), ["deps", "description", "id", "line", "title"]);
    assert_eq!(keys(&plan), keys(&issues));
}
