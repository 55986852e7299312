//! Agents' servers reached by URL and credentials, as on another machine,
//! proven on loopback with the real programs (SPEC §11): `opencode serve`
//! asking for a password (`OPENCODE_SERVER_PASSWORD`), the same behind a
//! TLS-terminating proxy whose certificate a CA of the test's own signed,
//! and a Codex app-server asking for a capability token. The real
//! `reveille run` reads each secret from an owner-only file. Every test
//! greps the daemon's whole output, `status` and `check` for the secret.

mod codex;
mod opencode;

use crate::util::daemon::Daemon;
use crate::util::project::Project;

/// A TOML string.
pub(crate) fn toml(s: impl std::fmt::Display) -> String {
    format!("{:?}", s.to_string())
}

/// The secret appears in none of what reveille said: the daemons' whole
/// output, `status` (both forms), `check`; and `check` says where it
/// comes from instead.
pub(crate) fn assert_secret_kept(
    project: &Project,
    daemon: Option<&Daemon>,
    secret: &str,
    file: &str,
) {
    let mut said = vec![("the daemons' output".to_string(), project.logs())];
    if let Some(d) = daemon {
        said.push(("the daemon's log".into(), d.log()));
    }
    for args in [&["status"][..], &["status", "--json"], &["check"]] {
        let out = project.run(args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        said.push((format!("reveille {}", args.join(" ")), text));
    }
    for (what, text) in &said {
        assert!(!text.contains(secret), "{what} shows the secret:\n{text}");
    }
    let check = &said.last().unwrap().1;
    assert!(
        check.contains(file),
        "check does not say where the secret is:\n{check}"
    );
}

/// `needle` (why a server is not reached) said once as a warning — the
/// link's word, once per episode, however often reveille tried again —
/// and at most once more, at info, by the engine for the prompts that
/// wait on a session of that server (once per episode too). Debug lines
/// aside.
pub(crate) fn said_once(d: &Daemon, needle: &str) {
    let lines = d.lines_with(needle);
    let warned = lines.iter().filter(|l| l.contains(" WARN ")).count();
    let waiting = lines
        .iter()
        .filter(|l| l.contains(" INFO ") && l.contains("prompt(s) wait in its outbox"))
        .count();
    assert_eq!(warned, 1, "{lines:#?}");
    assert!(waiting <= 1, "{lines:#?}");
    let other = lines.len() - warned - waiting;
    let debug = lines.iter().filter(|l| l.contains(" DEBUG ")).count();
    assert_eq!(other, debug, "{lines:#?}");
}
