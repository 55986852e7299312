//! The offline commands: `reveille ready FILE [--json]` and `reveille check`.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::util::daemon::command;
use crate::util::project::Project;

fn ready(file: &Path, json: bool) -> Output {
    let mut cmd = command();
    cmd.arg("ready").arg(file);
    if json {
        cmd.arg("--json");
    }
    cmd.output().expect("run reveille ready")
}

fn ok_stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn ready_lists_the_ready_steps_of_stock_annotated_and_json_plans() {
    let p = Project::new();
    let stock = p.plan_dir.join("20250101T120000_0a1b2c3d--stock__wip.md");
    fs::write(
        &stock,
        "# Stock\n\n- [x] One\n  done already\n- [ ] Two\n  the next one\n- [ ] Three\n",
    )
    .unwrap();
    assert_eq!(ok_stdout(&ready(&stock, false)), "s2\tTwo\n");
    let json: serde_json::Value = serde_json::from_str(&ok_stdout(&ready(&stock, true))).unwrap();
    assert_eq!(
        json,
        serde_json::json!([{"id": "s2", "title": "Two",
            "description": "the next one", "deps": ["s1"], "line": 5}])
    );

    let dag = p.plan_dir.join("20250101T120000_0a1b2c3e--dag__todo.md");
    fs::write(
        &dag,
        "# DAG\n\n- [x] Design (after: none)\n- [ ] API (after: 1)\n- [ ] UI (after: s1)\n- [ ] Docs (after: none)\n- [ ] Ship (after: q2, q3)\n",
    )
    .unwrap();
    assert_eq!(
        ok_stdout(&ready(&dag, false)),
        "s2\tAPI\ns3\tUI\ns4\tDocs\n"
    );
    let json: serde_json::Value = serde_json::from_str(&ok_stdout(&ready(&dag, true))).unwrap();
    let ids: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["s2", "s3", "s4"]);
    assert_eq!(json[0]["deps"], serde_json::json!(["s1"]));
    assert_eq!(json[2]["deps"], serde_json::json!([]));

    let structured = p.plan_dir.join("release.plan.json");
    fs::write(
        &structured,
        r#"{"title": "Release", "phases": [
            {"title": "Prepare", "status": "doing", "tasks": [
                {"text": "Bump version", "status": "done"},
                {"text": "Write notes"},
                {"text": "Drop old CI", "status": "dropped"}]},
            {"title": "Ship", "tasks": [{"text": "Tag"}]}]}"#,
    )
    .unwrap();
    assert_eq!(ok_stdout(&ready(&structured, false)), "t2\tWrite notes\n");
    let json: serde_json::Value =
        serde_json::from_str(&ok_stdout(&ready(&structured, true))).unwrap();
    assert_eq!(json[0]["id"], "t2");
    assert_eq!(json.as_array().unwrap().len(), 1);
}

#[test]
fn ready_on_a_cyclic_plan_fails_naming_the_file_and_line() {
    let p = Project::new();
    let plan = p.plan_dir.join("20250101T120000_0a1b2c3d--cycle__todo.md");
    fs::write(
        &plan,
        "# Cycle\n\n- [ ] Setup (after: none)\n- [ ] A (after: 4)\n- [ ] B (after: 4)\n- [ ] C (after: 2)\n",
    )
    .unwrap();
    for json in [false, true] {
        let out = ready(&plan, json);
        assert!(!out.status.success(), "exit 0 for a cycle");
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&plan.display().to_string()), "{stderr}");
        assert!(stderr.contains("line 4"), "{stderr}");
        assert!(stderr.contains("cycle"), "{stderr}");
    }
}

#[test]
fn check_names_an_unknown_key_and_its_file() {
    let mut p = Project::new();
    let out = p.run(&["check"]);
    let text = ok_stdout(&out);
    assert!(
        text.contains(&format!("file {}", p.config.display())),
        "{text}"
    );
    assert!(text.contains(&p.plan_dir.display().to_string()), "{text}");

    p.set("sessions", "enqueu", "\"fifo.in\"");
    let out = p.run(&["check"]);
    assert!(!out.status.success(), "check accepted an unknown key");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("sessions.enqueu"), "{stderr}");
    assert!(stderr.contains("unknown key"), "{stderr}");
    assert!(stderr.contains(&p.config.display().to_string()), "{stderr}");
    assert!(out.stdout.is_empty(), "printed values despite the error");
}
