//! Plan-like files whose names break the rule: the daemon says so once in
//! its journal, naming the file and the rule, and `status` lists them.

use std::fs;

use crate::util::daemon::Daemon;
use crate::util::fifo::Reader;
use crate::util::plans::barrier;
use crate::util::project::Project;

#[test]
fn ignored_plan_names_are_reported_once_and_listed_in_status() {
    let p = Project::with_default_session("agent");
    let reader = Reader::open(&p.session("agent"));
    let upper = "20250101T120000_0A1B2C3D--upper__todo.md";
    let doing = "20250101T120000_0a1b2c3d--doing__doing.md";
    let body = "# G\n\n- [ ] A\n";
    fs::write(p.plan_dir.join(upper), body).unwrap();
    fs::write(p.plan_dir.join("README.md"), "# not plan-like\n").unwrap();
    let d = Daemon::start(&p);
    let line = d.wait_log(
        &format!("ignoring {}", p.plan_dir.join(upper).display()),
        std::time::Duration::from_secs(5),
    );
    assert!(
        line.contains("uid \"0A1B2C3D\" must be lowercase hex"),
        "{line}"
    );

    // One that appears later, and the first one rewritten: each once.
    fs::write(p.plan_dir.join(doing), body).unwrap();
    let line = d.wait_log(doing, std::time::Duration::from_secs(5));
    assert!(line.contains("state \"doing\" is not one of"), "{line}");
    fs::write(p.plan_dir.join(upper), "# G\n\n- [ ] A\n- [ ] B\n").unwrap();
    barrier(&p.plan_dir, &reader, "");
    assert_eq!(d.log_count(upper), 1, "{}", d.log());
    assert_eq!(d.log_count(doing), 1, "{}", d.log());
    assert_eq!(d.log_count("README.md"), 0, "{}", d.log());

    let status = p.status_json();
    let ignored: Vec<(String, String)> = status["ignored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["file"].as_str().unwrap().into(),
                i["rule"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(ignored.len(), 2, "{status:#}");
    assert_eq!(ignored[0].0, upper);
    assert!(ignored[1].1.contains("\"doing\""), "{ignored:?}");
    let out = p.run(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("ignored {upper}: not a plan name: uid")),
        "{text}"
    );
}
