//! The shipped `systemd/reveille@.service`, installed unchanged in a test's
//! [`SystemdUser`] as the README says (the built daemon copied to
//! `~/.cargo/bin/reveille`, where its `ExecStart=` looks; its man page),
//! and the project's configuration at `~/.config/reveille/proj.toml`.

use std::path::Path;
use std::process::Command;

use super::systemd::SystemdUser;

/// The unit file as shipped.
pub const REVEILLE_UNIT: &str = include_str!("../../systemd/reveille@.service");
/// The instance every test runs: project `proj`.
pub const UNIT: &str = "reveille@proj.service";

/// Installs the shipped unit as it is, and the built daemon where its
/// `ExecStart=%h/.cargo/bin/reveille` looks.
pub fn install_reveille(sd: &SystemdUser) {
    sd.install_binary(
        ".cargo/bin/reveille",
        Path::new(env!("CARGO_BIN_EXE_reveille")),
    );
    sd.install_unit("reveille@.service", REVEILLE_UNIT);
    // The unit's Documentation=man:reveille(1), installed as the README
    // says; `.manpath` lets man(1) find it with the harness's bare PATH.
    let page = Command::new(env!("CARGO_BIN_EXE_reveille"))
        .arg("man")
        .output()
        .expect("reveille man");
    let man = sd.write_home_file(
        ".cargo/share/man/man1/reveille.1",
        &String::from_utf8_lossy(&page.stdout),
        0o644,
    );
    let dir = man.parent().and_then(Path::parent).unwrap();
    sd.write_home_file(
        ".manpath",
        &format!("MANDATORY_MANPATH {}\n", dir.display()),
        0o644,
    );
}

/// `~/.config/reveille/proj.toml`: plans in `~/pl`, sessions in `~/s`,
/// state in `~/state`; `project_extra` is added to `[project]` (after
/// `default_session`, which is line 3), `sections` after the rest. No
/// `[log]` section: the daemon must choose journald by itself.
pub fn write_config(sd: &SystemdUser, default_session: &str, project_extra: &str, sections: &str) {
    sd.write_home_file(
        ".config/reveille/proj.toml",
        &format!(
            "[project]\n\
             plan_dir = \"~/pl\"\n\
             default_session = \"{default_session}\"\n\
             {project_extra}\n\
             [sessions]\n\
             dir = \"~/s\"\n\
             \n\
             [state]\n\
             dir = \"~/state\"\n\
             \n\
             [events]\n\
             path = \"\"\n\
             {sections}"
        ),
        0o644,
    );
}

/// `reveille status --json --project proj` as the manager's user, with
/// the environment the unit gives the daemon's own commands.
pub fn status_json(sd: &SystemdUser) -> serde_json::Value {
    let out = sd
        .user_command(&sd.home().join(".cargo/bin/reveille").display().to_string())
        .args(["status", "--json", "--project", "proj"])
        .output()
        .expect("reveille status");
    assert!(
        out.status.success(),
        "reveille status: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("status --json is JSON")
}
