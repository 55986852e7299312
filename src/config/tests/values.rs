//! Values as `load` makes them: defaults, paths and their expansion,
//! assignees, where each came from, and the file itself.

use super::*;

#[test]
fn reminders_default_to_ten_minutes_three_times_and_zero_disables_them() {
    let (_dir, loaded) = with_file("", &[]);
    let s = loaded.unwrap().settings;
    assert_eq!(s.sessions.remind_after, Some(Duration::from_secs(600)));
    assert_eq!(s.sessions.remind_max, 3);
    let (_dir, loaded) = with_file("[sessions]\nremind_after_ms = 0\n", &[]);
    assert_eq!(loaded.unwrap().settings.sessions.remind_after, None);
    let (_dir, loaded) = with_file("[sessions]\nremind_after_ms = 1000\n", &[]);
    let s = loaded.unwrap().settings;
    assert_eq!(s.sessions.remind_after, Some(Duration::from_secs(1)));
}

#[test]
fn paths_expand_tilde_and_variables() {
    let (_dir, loaded) = with_file(
        "[project]\nplan_dir = \"~/work/$PROJ/pl\"\n[sessions]\ndir = \"${MNT}/s\"\n",
        &[("PROJ", "p9"), ("MNT", "/mnt/o")],
    );
    let loaded = loaded.unwrap();
    assert_eq!(
        loaded.settings.project.plan_dir,
        PathBuf::from("/home/u/work/p9/pl")
    );
    assert_eq!(loaded.settings.sessions.dir, PathBuf::from("/mnt/o/s"));
    assert_eq!(source(&loaded, "sessions.dir").0, "\"/mnt/o/s\"");
}

#[test]
fn the_project_dir_expands_like_the_other_paths_and_defaults_to_the_plan_dirs_parent() {
    let (_dir, loaded) = with_file(
        "[project]\nplan_dir = \"/elsewhere/pl\"\ndir = \"~/src/$PROJ\"\n",
        &[("PROJ", "p9")],
    );
    let loaded = loaded.unwrap();
    assert_eq!(loaded.settings.project.dir, PathBuf::from("/home/u/src/p9"));
    assert_eq!(source(&loaded, "project.dir").0, "\"/home/u/src/p9\"");
    let (_dir, loaded) = with_file("[project]\nplan_dir = \"/w/tree/plans\"\n", &[]);
    let dir = loaded.unwrap().settings.project.dir;
    assert_eq!(dir, PathBuf::from("/w/tree"));
    let (_dir, loaded) = with_file("[project]\ndir = \"$NOPE/x\"\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert_eq!(err.key.as_deref(), Some("project.dir"), "{err}");
}

#[test]
fn undefined_variable_names_the_key() {
    let (_dir, loaded) = with_file(
        "[beads]\nissues_jsonl = \"$REPO/.beads/issues.jsonl\"\n",
        &[],
    );
    let err = loaded.unwrap_err().into_first();
    assert_eq!(err.key.as_deref(), Some("beads.issues_jsonl"));
    assert!(err.message.contains("$REPO"), "{err}");
}

#[test]
fn empty_paths_disable() {
    let (_dir, loaded) = with_file("[events]\npath = \"\"\n[beads]\nissues_jsonl = \"\"\n", &[]);
    let s = loaded.unwrap().settings;
    assert_eq!(s.events.path, None);
    assert_eq!(s.beads.issues_jsonl, None);
}

#[test]
fn assignees_map_from_file_and_env() {
    let (_dir, loaded) = with_file(
        "[events.assignees]\n\"agent-1\" = \"sess-a\"\nbob = \"sess-b\"\n",
        &[
            ("REVEILLE_EVENTS__ASSIGNEES", "{ \"agent-2\" = \"sess-c\" }"),
            ("REVEILLE_EVENTS__ASSIGNEES__bob", "sess-d"),
        ],
    );
    let loaded = loaded.unwrap();
    let a = &loaded.settings.events.assignees;
    assert_eq!(a.len(), 3, "{a:?}");
    assert_eq!(a["agent-1"], "sess-a");
    assert_eq!(a["agent-2"], "sess-c");
    assert_eq!(a["bob"], "sess-d");
    assert!(source(&loaded, "events.assignees.agent-1")
        .1
        .starts_with("file "));
    assert_eq!(
        source(&loaded, "events.assignees.agent-2").1,
        "env REVEILLE_EVENTS__ASSIGNEES"
    );
    assert_eq!(
        source(&loaded, "events.assignees.bob").1,
        "env REVEILLE_EVENTS__ASSIGNEES__bob"
    );
}

#[test]
fn assignee_session_ids_are_validated() {
    let (_dir, loaded) = with_file("[events.assignees]\nmallory = \"../../etc\"\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert_eq!(err.key.as_deref(), Some("events.assignees.mallory"));
    let (_dir, loaded) = with_file("[project]\ndefault_session = \"a/b\"\n", &[]);
    assert_eq!(
        loaded.unwrap_err().into_first().key.as_deref(),
        Some("project.default_session")
    );
}

#[test]
fn provenance_strings() {
    let (dir, loaded) = with_file(
        "[project]\nmode = \"queue\"\n",
        &[("REVEILLE_LOG__LEVEL", "debug")],
    );
    let loaded = loaded.unwrap();
    let file = dir.path().join("x.toml");
    assert_eq!(
        source(&loaded, "project.mode"),
        pair("\"queue\"", &format!("file {}, line 2", file.display()))
    );
    assert_eq!(
        source(&loaded, "log.level"),
        pair("\"debug\"", "env REVEILLE_LOG__LEVEL")
    );
    assert_eq!(
        source(&loaded, "sessions.framing"),
        pair("\"auto\"", "default")
    );
    let report = render_check(&loaded);
    let line = report
        .lines()
        .find(|l| l.starts_with("log.level "))
        .unwrap();
    assert!(line.ends_with("# env REVEILLE_LOG__LEVEL"), "{line}");
    // Columns line up: every `=` at the same offset.
    let offsets: Vec<usize> = report
        .lines()
        .skip(1)
        .map(|l| l.find(" = ").unwrap())
        .collect();
    assert!(offsets.windows(2).all(|w| w[0] == w[1]), "{report}");
}

#[test]
fn missing_config_file_is_named() {
    let err = load(&LoadOptions {
        config: Some("/nonexistent/reveille.toml".into()),
        project: None,
        env: env(&[]),
    })
    .unwrap_err()
    .into_first();
    assert_eq!(origin(&err), "file /nonexistent/reveille.toml");
    assert!(err.to_string().contains("cannot read"), "{err}");
}

/// Regression: `--config` naming a FIFO hung `check` and `run` forever in
/// `open` (waiting for a writer); `/dev/zero` would have been read forever.
#[test]
fn a_config_path_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (path, why) in [
        (fifo.clone(), "is not a regular file"),
        (PathBuf::from("/dev/zero"), "is not a regular file"),
        (dir.path().to_path_buf(), "is a directory"),
    ] {
        let err = load(&LoadOptions {
            config: Some(path.clone()),
            project: None,
            env: env(&[]),
        })
        .unwrap_err()
        .into_first();
        assert_eq!(origin(&err), format!("file {}", path.display()));
        assert!(err.to_string().contains(why), "{err}");
    }
}

/// Regression: a bad `events.mounts` entry from a file was reported as
/// "(from default)": the lookup used the element key `events.mounts[0]`.
#[test]
fn a_bad_array_element_names_the_file_it_came_from() {
    let (dir, loaded) = with_file("[events]\nmounts = [\"ok\", \"..\"]\n", &[]);
    let err = loaded.unwrap_err().into_first();
    assert_eq!(err.key.as_deref(), Some("events.mounts[1]"));
    let path = dir.path().join("x.toml");
    assert_eq!(origin(&err), format!("file {}, line 2", path.display()));
}

#[test]
fn syntax_error_names_file_and_line() {
    let (dir, loaded) = with_file("[project]\nname = \"p\"\nmode = \n", &[]);
    let err = loaded.unwrap_err().into_first();
    let text = err.to_string();
    assert!(
        text.contains(&dir.path().join("x.toml").display().to_string()),
        "{text}"
    );
    assert!(text.contains("line 3"), "{text}");
}
