//! Tests of `load` as a whole: layering, provenance and error messages.
//! The environment is always an explicit snapshot; no test touches the
//! process environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

const HOME: &str = "/home/u";

fn env(pairs: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
    let mut v = vec![("HOME".to_string(), HOME.to_string())];
    v.extend(
        pairs
            .iter()
            .map(|(k, val)| (k.to_string(), val.to_string())),
    );
    Some(v)
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("x.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn with_file(
    text: &str,
    pairs: &[(&str, &str)],
) -> (tempfile::TempDir, Result<Loaded, ConfigErrors>) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), text);
    let loaded = load(&LoadOptions {
        config: Some(path),
        project: None,
        env: env(pairs),
    });
    (dir, loaded)
}

fn source(loaded: &Loaded, key: &str) -> (String, String) {
    let (_, v, o) = loaded
        .sources
        .iter()
        .find(|(k, _, _)| k == key)
        .unwrap_or_else(|| panic!("no source for {key}"));
    (v.clone(), o.to_string())
}

fn pair(value: &str, origin: &str) -> (String, String) {
    (value.to_string(), origin.to_string())
}

/// An error's origin as it is shown.
fn origin(e: &ConfigError) -> String {
    e.origin.as_ref().map(Origin::to_string).unwrap_or_default()
}

#[test]
fn defaults_work_with_nothing_configured() {
    let loaded = load(&LoadOptions {
        env: env(&[]),
        ..LoadOptions::default()
    })
    .unwrap();
    let s = &loaded.settings;
    assert_eq!(loaded.file, None);
    assert_eq!(s.project.name, "default");
    assert_eq!(s.project.plan_dir, PathBuf::from("/home/u/src/default/pl"));
    assert_eq!(s.project.default_session, None);
    assert_eq!(s.project.mode, Mode::Reactive);
    assert!(s.project.nudge_done);
    assert_eq!(s.project.max_plan_bytes, 4_194_304);
    assert_eq!(s.project.settle, Duration::from_millis(50));
    assert_eq!(s.sessions.dir, PathBuf::from("/home/u/mnt/ollie/s"));
    assert_eq!(s.sessions.enqueue, "fifo.in");
    assert_eq!(s.sessions.framing, Framing::Auto);
    assert_eq!(s.sessions.outbox_cap, 1000);
    assert!(s.sessions.session_plans);
    assert_eq!(s.sessions.retry_initial, Duration::from_millis(50));
    assert_eq!(s.sessions.retry_max, Duration::from_millis(2000));
    assert_eq!(
        s.events.path,
        Some(PathBuf::from("/home/u/mnt/beads/events"))
    );
    assert_eq!(s.events.beads_root, PathBuf::from("/home/u/mnt/beads"));
    // No mount named: the project's are found by its directory, the
    // parent of plan_dir.
    assert!(s.events.mounts.is_empty());
    assert_eq!(s.project.dir, PathBuf::from("/home/u/src/default"));
    assert_eq!(s.events.poll_interval, Duration::from_millis(100));
    assert!(!s.events.notify_completed);
    assert!(s.events.assignees.is_empty());
    assert_eq!(s.beads.issues_jsonl, None);
    assert_eq!(s.prompt.template, None);
    assert_eq!(s.prompt.completed_template, None);
    assert_eq!(
        s.state.dir,
        PathBuf::from("/home/u/.local/state/reveille/default")
    );
    assert_eq!(s.state.sync_interval, Duration::from_millis(100));
    assert_eq!(s.state.compact_bytes, 1_048_576);
    assert_eq!(s.log.target, LogTarget::Auto);
    assert_eq!(s.log.level, "info");
    assert!(loaded.sources.iter().all(|(_, _, o)| *o == Origin::Default));
}

#[test]
fn file_overrides_defaults() {
    let (dir, loaded) = with_file(
        "[project]\nname = \"myproj\"\nmode = \"queue\"\n[sessions]\noutbox_cap = 7\n",
        &[],
    );
    let loaded = loaded.unwrap();
    let s = &loaded.settings;
    assert_eq!(s.project.name, "myproj");
    assert_eq!(s.project.mode, Mode::Queue);
    assert_eq!(s.sessions.outbox_cap, 7);
    // Defaults that depend on the name follow the file's name.
    assert_eq!(s.project.plan_dir, PathBuf::from("/home/u/src/myproj/pl"));
    assert_eq!(s.project.dir, PathBuf::from("/home/u/src/myproj"));
    assert_eq!(loaded.file, Some(dir.path().join("x.toml")));
}

#[test]
fn env_overrides_file() {
    let (dir, loaded) = with_file(
        "[project]\nplan_dir = \"/from/file\"\nnudge_done = true\n",
        &[
            ("REVEILLE_PROJECT__PLAN_DIR", "/from/env"),
            ("REVEILLE_PROJECT__NUDGE_DONE", "false"),
            ("REVEILLE_EVENTS__POLL_INTERVAL_MS", "500"),
            ("REVEILLE_EVENTS__MOUNTS", "[a, \"b-2\"]"),
            ("REVEILLE_PROJECT__DEFAULT_SESSION", "12345"),
            ("REVEILLE_KEEP_TMP", "1"),
        ],
    );
    let loaded = loaded.unwrap();
    let s = &loaded.settings;
    assert_eq!(s.project.plan_dir, PathBuf::from("/from/env"));
    assert!(!s.project.nudge_done);
    assert_eq!(s.events.poll_interval, Duration::from_millis(500));
    assert_eq!(s.events.mounts, vec!["a".to_string(), "b-2".to_string()]);
    // A numeric-looking value for a string key stays a string.
    assert_eq!(s.project.default_session.as_deref(), Some("12345"));
    drop(dir);
}

#[test]
fn project_flag_sets_name_and_state_dir() {
    let (_dir, loaded) = {
        let dir = tempfile::tempdir().unwrap();
        let path = write_config(dir.path(), "[project]\nname = \"fromfile\"\n");
        let loaded = load(&LoadOptions {
            config: Some(path),
            project: Some("flagged".into()),
            env: env(&[
                ("REVEILLE_PROJECT__NAME", "fromenv"),
                ("XDG_STATE_HOME", "/st"),
            ]),
        });
        (dir, loaded)
    };
    let loaded = loaded.unwrap();
    assert_eq!(loaded.settings.project.name, "flagged");
    assert_eq!(
        loaded.settings.state.dir,
        PathBuf::from("/st/reveille/flagged")
    );
    assert_eq!(
        source(&loaded, "project.name"),
        pair("\"flagged\"", "flag --project")
    );
    assert_eq!(source(&loaded, "state.dir").1, "default");
}

#[test]
fn project_flag_picks_the_default_file() {
    let xdg = tempfile::tempdir().unwrap();
    std::fs::create_dir(xdg.path().join("reveille")).unwrap();
    let file = xdg.path().join("reveille/alpha.toml");
    std::fs::write(&file, "[project]\ndefault_session = \"s1\"\n").unwrap();
    let xdg_str = xdg.path().to_str().unwrap();
    let loaded = load(&LoadOptions {
        config: None,
        project: Some("alpha".into()),
        env: env(&[("XDG_CONFIG_HOME", xdg_str)]),
    })
    .unwrap();
    assert_eq!(loaded.file, Some(file.clone()));
    assert_eq!(
        loaded.settings.project.default_session.as_deref(),
        Some("s1")
    );
    // Another project does not read alpha's file.
    let other = load(&LoadOptions {
        config: None,
        project: Some("beta".into()),
        env: env(&[("XDG_CONFIG_HOME", xdg_str)]),
    })
    .unwrap();
    assert_eq!(other.file, None);
    assert_eq!(other.settings.project.default_session, None);
}

#[test]
fn unknown_key_names_key_and_file() {
    let (dir, loaded) = with_file("[project]\nname = \"p\"\nplan_dri = \"/x\"\n", &[]);
    let err = loaded.unwrap_err().into_first();
    let file = dir.path().join("x.toml");
    assert_eq!(err.key.as_deref(), Some("project.plan_dri"));
    // The line of the key, not only the file.
    assert_eq!(origin(&err), format!("file {}, line 3", file.display()));
    let text = err.to_string();
    assert!(text.contains("project.plan_dri"), "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("plan_dir"), "expected keys listed: {text}");

    let (_dir, loaded) = with_file("[bogus]\nx = 1\n", &[]);
    assert_eq!(
        loaded.unwrap_err().into_first().key.as_deref(),
        Some("bogus")
    );
}

#[test]
fn unknown_env_key_names_the_variable() {
    let loaded = load(&LoadOptions {
        env: env(&[("REVEILLE_PROJECT__PLANDIR", "/x")]),
        ..LoadOptions::default()
    });
    let err = loaded.unwrap_err().into_first();
    assert_eq!(err.key.as_deref(), Some("project.plandir"));
    assert_eq!(origin(&err), "env REVEILLE_PROJECT__PLANDIR");
    assert!(
        err.to_string()
            .contains("did you mean REVEILLE_PROJECT__PLAN_DIR?"),
        "{err}"
    );
}

#[test]
fn wrong_type_is_an_error_in_words_with_its_line() {
    let (dir, loaded) = with_file("\n[events]\npoll_interval_ms = \"fast\"\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert_eq!(err.key.as_deref(), Some("events.poll_interval_ms"));
    assert_eq!(err.value.as_deref(), Some("\"fast\""));
    assert_eq!(
        err.to_string(),
        format!(
            "events.poll_interval_ms = \"fast\": expected a whole number (0 or more), found text (from file {}, line 3)",
            dir.path().join("x.toml").display()
        )
    );

    let (_dir, loaded) = with_file("[project]\nnudge_done = \"maybe\"\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert_eq!(err.key.as_deref(), Some("project.nudge_done"));
    assert!(err.message.contains("expected true or false"), "{err}");
    let (_dir, loaded) = with_file("[sessions]\noutbox_cap = -1\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert!(err.message.contains("found a negative number"), "{err}");
    for e in [err] {
        for rust in ["u64", "bool", "map", "struct", "sequence"] {
            assert!(!e.message.contains(rust), "{e}");
        }
    }
}

/// Regression: `project = 3` said "missing field project.name".
#[test]
fn a_section_of_the_wrong_type_says_so() {
    let (_dir, loaded) = with_file("[log]\nlevel = \"info\"\n\nproject = 3\n", &[]);
    let errors = loaded.unwrap_err().0;
    // `project = 3` after `[log]` is log.project: an unknown key there.
    assert_eq!(errors[0].key.as_deref(), Some("log.project"), "{errors:?}");
    let (dir, loaded) = with_file("project = 3\n[log]\nlevel = \"info\"\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert_eq!(
        err.to_string(),
        format!(
            "project = 3: expected a table (a [project] section), found a number (from file {}, line 1)",
            dir.path().join("x.toml").display()
        )
    );
    // The other keys are still checked, at their defaults for the section.
    let (_dir, loaded) = with_file("sessions = \"x\"\n[log]\nlevl = 1\n", &[]);
    let keys: Vec<Option<String>> = loaded.unwrap_err().0.into_iter().map(|e| e.key).collect();
    assert_eq!(keys, [Some("sessions".into()), Some("log.levl".into())]);
}

/// Regression: one underscore between section and key was ignored in
/// silence; a variable that looks like a key misspelt names the one meant.
#[test]
fn a_misspelt_variable_names_the_one_meant() {
    for (var, meant) in [
        ("REVEILLE_PROJECT_PLAN_DIR", "REVEILLE_PROJECT__PLAN_DIR"),
        (
            "REVEILLE_SESSIONS_OUTBOXCAP",
            "REVEILLE_SESSIONS__OUTBOX_CAP",
        ),
        ("REVEILLE_PLAN_DIR", "REVEILLE_PROJECT__PLAN_DIR"),
        ("reveille_log_level", "REVEILLE_LOG__LEVEL"),
    ] {
        let upper = var.to_ascii_uppercase();
        let var = if var.starts_with("REVEILLE_") {
            var
        } else {
            upper.as_str()
        };
        let err = load(&LoadOptions {
            env: env(&[(var, "/x")]),
            ..LoadOptions::default()
        })
        .unwrap_err()
        .into_first();
        assert_eq!(origin(&err), format!("env {var}"));
        assert!(
            err.to_string().contains(&format!("did you mean {meant}?")),
            "{err}"
        );
    }
    // The test harness's knobs are not configuration.
    for knob in [
        "REVEILLE_KEEP_TMP",
        "REVEILLE_TEST_SEED",
        "REVEILLE_SOAK_SECS",
    ] {
        assert!(
            load(&LoadOptions {
                env: env(&[(knob, "1")]),
                ..LoadOptions::default()
            })
            .is_ok(),
            "{knob}"
        );
    }
}

#[test]
fn out_of_range_values_name_their_line() {
    let (dir, loaded) = with_file("[sessions]\n\noutbox_cap = 0\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert_eq!(
        origin(&err),
        format!("file {}, line 3", dir.path().join("x.toml").display())
    );
}

#[test]
fn notify_errors_name_their_file_and_line() {
    let (dir, loaded) = with_file("[notify]\n\ncommand = [\"\", \"x\"]\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert_eq!(err.key.as_deref(), Some("notify.command"));
    assert_eq!(
        origin(&err),
        format!("file {}, line 3", dir.path().join("x.toml").display())
    );
    assert!(
        err.to_string().contains("must start with the program"),
        "{err}"
    );
    let (dir, loaded) = with_file("[notify]\ndesktop = \"maybe\"\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert_eq!(
        err.to_string(),
        format!(
            "notify.desktop = \"maybe\": expected one of auto, on, off (from file {}, line 2)",
            dir.path().join("x.toml").display()
        )
    );
    let (_dir, loaded) = with_file(
        "[notify]\ncommand = [\"/bin/tell\", \"-q\"]\nstuck_after_ms = 60000\n",
        &[],
    );
    let n = loaded.unwrap().settings.notify;
    assert_eq!(n.command, ["/bin/tell", "-q"]);
    assert_eq!(n.stuck_after, Some(std::time::Duration::from_secs(60)));
}

#[test]
fn the_only_configured_project_is_the_default() {
    let home = tempfile::tempdir().unwrap();
    let conf = home.path().join(".config/reveille");
    std::fs::create_dir_all(&conf).unwrap();
    let opts = || LoadOptions {
        env: Some(vec![("HOME".into(), home.path().display().to_string())]),
        ..LoadOptions::default()
    };
    // None configured: "default".
    assert_eq!(load(&opts()).unwrap().settings.project.name, "default");
    std::fs::write(conf.join("myproj.toml"), "[project]\nmode = \"queue\"\n").unwrap();
    let loaded = load(&opts()).unwrap();
    assert_eq!(loaded.settings.project.name, "myproj");
    assert_eq!(loaded.file, Some(conf.join("myproj.toml")));
    assert_eq!(loaded.settings.project.mode, Mode::Queue);
    assert_eq!(
        source(&loaded, "project.name").1,
        format!(
            "the only configured project, {}",
            conf.join("myproj.toml").display()
        )
    );
    // A hidden file is not a project; two projects: neither is chosen.
    std::fs::write(conf.join(".old.toml"), "").unwrap();
    assert_eq!(load(&opts()).unwrap().settings.project.name, "myproj");
    std::fs::write(conf.join("other.toml"), "").unwrap();
    assert_eq!(load(&opts()).unwrap().settings.project.name, "default");
    let names: Vec<String> = configured_projects(opts().env.as_deref())
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["myproj", "other"]);
}

#[test]
fn bad_enum_value_lists_the_choices() {
    let (dir, loaded) = with_file("[sessions]\nframing = \"lines\"\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert_eq!(err.key.as_deref(), Some("sessions.framing"));
    assert_eq!(
        err.to_string(),
        format!(
            "sessions.framing = \"lines\": expected one of auto, message, nul, jsonl (from file {}, line 2)",
            dir.path().join("x.toml").display()
        )
    );
}

#[test]
fn out_of_range_numbers_are_refused() {
    for (text, key) in [
        (
            "[events]\npoll_interval_ms = 5\n",
            "events.poll_interval_ms",
        ),
        ("[sessions]\noutbox_cap = 0\n", "sessions.outbox_cap"),
        (
            "[project]\nmax_plan_bytes = 100\n",
            "project.max_plan_bytes",
        ),
        (
            "[sessions]\nretry_initial_ms = 500\nretry_max_ms = 100\n",
            "sessions.retry_max_ms",
        ),
        ("[sessions]\noutbox_cap = -1\n", "sessions.outbox_cap"),
        (
            "[sessions]\nremind_after_ms = 999\n",
            "sessions.remind_after_ms",
        ),
        ("[sessions]\nremind_max = 101\n", "sessions.remind_max"),
    ] {
        let (_dir, loaded) = with_file(text, &[]);
        assert_eq!(
            loaded.unwrap_err().into_first().key.as_deref(),
            Some(key),
            "{text}"
        );
    }
}

#[test]
fn bad_project_names_are_refused() {
    let err = load(&LoadOptions {
        project: Some("../etc".into()),
        env: env(&[]),
        ..LoadOptions::default()
    })
    .unwrap_err()
    .into_first();
    assert_eq!(err.key.as_deref(), Some("project.name"));
    assert_eq!(origin(&err), "flag --project");
}

#[test]
fn settings_compare_for_reload() {
    let a = load(&LoadOptions {
        env: env(&[]),
        ..LoadOptions::default()
    })
    .unwrap();
    let b = load(&LoadOptions {
        env: env(&[]),
        ..LoadOptions::default()
    })
    .unwrap();
    let c = load(&LoadOptions {
        env: env(&[("REVEILLE_SESSIONS__OUTBOX_CAP", "5")]),
        ..LoadOptions::default()
    })
    .unwrap();
    assert_eq!(a.settings, b.settings);
    assert_ne!(a.settings, c.settings.clone());
}

#[test]
fn dotted_assignee_names_keep_their_origin() {
    let (_dir, loaded) = with_file(
        "[events.assignees]\n\"a.b\" = \"sess-x\"\n",
        &[("REVEILLE_EVENTS__ASSIGNEES__c", "sess-y")],
    );
    let loaded = loaded.unwrap();
    let (value, origin) = source(&loaded, "events.assignees.\"a.b\"");
    assert_eq!(value, "\"sess-x\"");
    assert!(origin.starts_with("file "), "{origin}");
    assert_eq!(
        source(&loaded, "events.assignees.c").1,
        "env REVEILLE_EVENTS__ASSIGNEES__c"
    );
}

#[test]
fn malformed_env_array_names_the_variable() {
    let err = load(&LoadOptions {
        env: env(&[("REVEILLE_EVENTS__MOUNTS", "[a,")]),
        ..LoadOptions::default()
    })
    .unwrap_err()
    .into_first();
    assert_eq!(origin(&err), "env REVEILLE_EVENTS__MOUNTS");
    assert!(
        err.to_string().starts_with("env REVEILLE_EVENTS__MOUNTS: "),
        "{err}"
    );
}

#[test]
fn every_problem_is_reported_at_once_with_suggestions() {
    let (dir, loaded) = with_file(
        "[project]\nplan_dri = \"/x\"\nmode = \"fast\"\n[sessions]\nframing = 3\noutbox_cap = 0\n[state]\nenqueue = \"x\"\n[colours]\nred = 1\n",
        &[("REVEILLE_LOG__LEVL", "debug")],
    );
    let errors = loaded.unwrap_err().0;
    let keys: Vec<&str> = errors.iter().filter_map(|e| e.key.as_deref()).collect();
    for key in [
        "project.plan_dri",
        "project.mode",
        "sessions.framing",
        "sessions.outbox_cap",
        "state.enqueue",
        "colours",
        "log.levl",
    ] {
        assert!(keys.contains(&key), "{key} not in {keys:?}");
    }
    assert_eq!(errors.len(), 7, "{errors:?}");
    let text = |key: &str| {
        errors
            .iter()
            .find(|e| e.key.as_deref() == Some(key))
            .unwrap()
            .to_string()
    };
    assert!(text("project.plan_dri").contains("did you mean plan_dir?"));
    assert!(text("state.enqueue").contains("did you mean sessions.enqueue?"));
    assert!(text("log.levl").contains("did you mean REVEILLE_LOG__LEVEL?"));
    assert!(text("log.levl").contains("env REVEILLE_LOG__LEVL"));
    let file = format!("file {}", dir.path().join("x.toml").display());
    assert!(text("sessions.outbox_cap").ends_with(&format!("(from {file}, line 6)")));
    assert!(text("colours").ends_with(&format!("(from {file}, line 9)")));
}

#[test]
fn a_syntax_error_does_not_hide_the_other_problems_or_the_good_keys() {
    let text = "[project]\nname = \"p\"\nmode = \n[state]\ndir = \"/st\"\n[log]\nlevl = \"x\"\n";
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), text);
    let opts = LoadOptions {
        config: Some(path),
        project: None,
        env: env(&[]),
    };
    let (loaded, errors) = load_salvaged(&opts);
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].to_string().contains("line 3"), "{errors:?}");
    // One line: the source snippet is left out, the explanation kept.
    assert!(!errors[0].to_string().contains('\n'), "{}", errors[0]);
    assert!(errors[0].to_string().contains("expected"), "{}", errors[0]);
    assert_eq!(errors[1].key.as_deref(), Some("log.levl"));
    let s = loaded.expect("salvaged").settings;
    assert_eq!(s.project.name, "p");
    assert_eq!(s.state.dir, PathBuf::from("/st"));
    assert_eq!(s.project.mode, Mode::Reactive);
    assert_eq!(load(&opts).unwrap_err().0, errors);
}

#[test]
fn check_names_where_it_looked_for_the_file() {
    let loaded = load(&LoadOptions {
        project: Some("nosuch".into()),
        env: env(&[]),
        ..LoadOptions::default()
    })
    .unwrap();
    let want = PathBuf::from(format!("{HOME}/.config/reveille/nosuch.toml"));
    assert_eq!(loaded.looked_at, vec![want.clone()]);
    let report = render_check(&loaded);
    assert!(
        report.starts_with(&format!(
            "# configuration file: none (looked for {}",
            want.display()
        )),
        "{report}"
    );
}

mod remote;
mod values;
