//! opencode's server asking for a password, plainly and behind TLS.

use std::time::Duration;

use super::{assert_secret_kept, toml};
use crate::util::agents::opencode::{Home, Mode, Opencode};
use crate::util::daemon::Daemon;
use crate::util::fakemodel::{chat::Chat, FakeModel};
use crate::util::plans::{plan_text, write_in_place, Step};
use crate::util::project::Project;
use crate::util::tls::{self, secret_file, Ca, Proxy};
use crate::util::wait_until;

/// A turn of the fake model with opencode's overhead, on a loaded machine.
const T: Duration = Duration::from_secs(40);
const PASSWORD: &str = "pw-8f3a1c9e77d2";

/// The fake model, `opencode serve` asking for [`PASSWORD`] with one
/// session, and a project whose default session it is.
struct Rig {
    model: FakeModel,
    oc: Opencode,
    session: String,
    project: Project,
    /// Where the test keeps its secrets and certificates.
    dir: tempfile::TempDir,
}

impl Rig {
    fn new() -> Option<Rig> {
        if let Some(why) = Opencode::unavailable(Mode::Serve).or_else(tls::unavailable) {
            eprintln!("skipped: {why}");
            return None;
        }
        let model = FakeModel::start(vec![Box::new(Chat)], Duration::from_millis(50));
        let oc = Opencode::start(Home::new(&model.url()).with_password(PASSWORD), Mode::Serve);
        let session = oc.create_session();
        let project = Project::with_default_session(&format!("opencode:{session}"));
        let dir = tempfile::tempdir().unwrap();
        Some(Rig {
            model,
            oc,
            session,
            project,
            dir,
        })
    }

    fn q(&self) -> String {
        format!("opencode:{}", self.session)
    }

    /// reveille's password file, holding `password`.
    fn password_file(&mut self, password: &str, mode: u32) -> String {
        let file = secret_file(self.dir.path(), "opencode-password", password, mode);
        self.project
            .set("opencode", "password_file", &toml(file.display()));
        file.display().to_string()
    }

    /// A one-step plan; the step's words in its prompt.
    fn plan(&self, title: &str) -> String {
        let path = self
            .project
            .plan_dir
            .join("20260101T000000_a1b2c3d4--remote__todo.md");
        write_in_place(
            &path,
            plan_text("Remote", &[Step::new(title)], "").as_bytes(),
        );
        format!("is ready: {title}\n")
    }

    fn turns(&self, ready: &str) -> usize {
        self.model.turns_on(ready).len()
    }
}

#[test]
fn a_plan_step_reaches_an_opencode_server_that_asks_for_a_password() {
    let Some(mut rig) = Rig::new() else { return };
    let file = rig.password_file(PASSWORD, 0o600);
    rig.project.set("opencode", "url", &toml(rig.oc.url()));
    let d = Daemon::start(&rig.project);
    let ready = rig.plan("Say hello over the network");
    wait_until("the step's turn", T, || {
        (rig.turns(&ready) > 0).then_some(())
    });
    wait_until("nothing pending", T, || {
        rig.project.pending(&rig.q()).is_empty().then_some(())
    });
    assert_eq!(rig.turns(&ready), 1);
    assert_secret_kept(&rig.project, Some(&d), PASSWORD, &file);
}

#[test]
fn a_wrong_password_is_one_clear_error_nothing_is_delivered_until_the_file_is_corrected() {
    let Some(mut rig) = Rig::new() else { return };
    let wrong = "not-the-password-51c0";
    let file = rig.password_file(wrong, 0o600);
    // A counting proxy in front: how often reveille tried again.
    let proxy = Proxy::tcp(rig.oc.port, rig.dir.path());
    let url = format!("http://127.0.0.1:{}", proxy.port);
    rig.project.set("opencode", "url", &toml(&url));
    let d = Daemon::start(&rig.project);
    let ready = rig.plan("Never run this one");
    let refused = "refused the credentials";
    let line = d.wait_log(refused, T);
    println!("{line}");
    assert!(line.contains(&url), "{line}");
    // Tried again at least twice more since: said once all the same.
    let tried = proxy.accepted();
    wait_until("two more tries", T, || {
        (proxy.accepted() >= tried + 2).then_some(())
    });
    super::said_once(&d, refused);
    assert_eq!(rig.turns(&ready), 0);
    assert_eq!(rig.project.pending(&rig.q()), vec!["s1".to_string()]);
    // The file corrected: read again at the next refusal, no restart.
    rig.password_file(PASSWORD, 0o600);
    wait_until("the step's turn", T, || {
        (rig.turns(&ready) > 0).then_some(())
    });
    wait_until("nothing pending", T, || {
        rig.project.pending(&rig.q()).is_empty().then_some(())
    });
    assert_eq!(rig.turns(&ready), 1);
    super::said_once(&d, refused);
    for secret in [wrong, PASSWORD] {
        assert_secret_kept(&rig.project, Some(&d), secret, &file);
    }
}

#[test]
fn a_password_file_others_can_read_is_refused_with_its_mode() {
    let Some(mut rig) = Rig::new() else { return };
    let file = rig.password_file(PASSWORD, 0o644);
    rig.project.set("opencode", "url", &toml(rig.oc.url()));
    for args in [&["check"][..], &["run"]] {
        let out = rig.project.run_bounded(args);
        let err = String::from_utf8_lossy(&out.stderr);
        println!("reveille {args:?}: {err}");
        assert!(!out.status.success(), "{args:?} accepted it: {err}");
        assert!(err.contains(&file) && err.contains("mode 0644"), "{err}");
        assert!(err.contains("opencode.password_file"), "{err}");
        assert!(!err.contains(PASSWORD), "{err}");
    }
}

#[test]
fn https_through_a_tls_proxy_is_refused_untrusted_and_delivered_once_with_the_ca() {
    let Some(mut rig) = Rig::new() else { return };
    let file = rig.password_file(PASSWORD, 0o600);
    let ca = Ca::new(rig.dir.path(), "test-ca");
    let proxy = Proxy::tls(&ca.issue("127.0.0.1"), rig.oc.port, rig.dir.path());
    let url = format!("https://127.0.0.1:{}", proxy.port);
    rig.project.set("opencode", "url", &toml(&url));
    // The system's roots do not know the test's CA: refused, said once.
    let d = Daemon::start(&rig.project);
    let ready = rig.plan("Say hello over TLS");
    let untrusted = "not signed by a CA reveille trusts";
    let line = d.wait_log(untrusted, T);
    println!("{line}");
    assert!(line.contains(&url) && line.contains("TLS"), "{line}");
    let tried = proxy.accepted();
    wait_until("two more tries", T, || {
        (proxy.accepted() >= tried + 2).then_some(())
    });
    super::said_once(&d, untrusted);
    assert_eq!(rig.turns(&ready), 0);
    assert_eq!(rig.project.pending(&rig.q()), vec!["s1".to_string()]);
    d.stop();
    // With the CA: the waiting prompt is delivered, once.
    rig.project
        .set("opencode", "ca_file", &toml(ca.cert.display()));
    let d = Daemon::start(&rig.project);
    wait_until("the step's turn", T, || {
        (rig.turns(&ready) > 0).then_some(())
    });
    wait_until("nothing pending", T, || {
        rig.project.pending(&rig.q()).is_empty().then_some(())
    });
    assert_eq!(rig.turns(&ready), 1);
    assert!(d.log().contains(&url));
    assert_secret_kept(&rig.project, Some(&d), PASSWORD, &file);
}

#[test]
fn a_cut_link_holds_the_prompt_says_why_once_and_delivers_it_once_healed() {
    let Some(mut rig) = Rig::new() else { return };
    let file = rig.password_file(PASSWORD, 0o600);
    let mut proxy = Proxy::tcp(rig.oc.port, rig.dir.path());
    let url = format!("http://127.0.0.1:{}", proxy.port);
    rig.project.set("opencode", "url", &toml(&url));
    let d = Daemon::start(&rig.project);
    wait_until("the session seen idle through the proxy", T, || {
        (rig.project.status_json()["sessions"]
            .as_array()
            .is_some_and(|l| {
                l.iter()
                    .any(|s| s["id"] == rig.q().as_str() && s["state"] == "idle")
            }))
        .then_some(())
    });
    // The link cut: the event stream ends, every connection is refused.
    proxy.cut();
    let down = format!("opencode server not reachable at {url}");
    let line = d.wait_log(&down, T);
    println!("{line}");
    assert!(line.contains("refused"), "{line}");
    let ready = rig.plan("Say hello after the cut");
    d.wait_log(&format!("announced s1 to session {}", rig.q()), T);
    assert_eq!(rig.project.pending(&rig.q()), vec!["s1".to_string()]);
    assert_eq!(rig.turns(&ready), 0);
    // Healed: the waiting prompt is delivered, once; each said once.
    proxy.heal();
    wait_until("the step's turn", T, || {
        (rig.turns(&ready) > 0).then_some(())
    });
    wait_until("nothing pending", T, || {
        rig.project.pending(&rig.q()).is_empty().then_some(())
    });
    d.wait_log(
        &format!("the opencode server at {url} is reachable again"),
        T,
    );
    assert_eq!(rig.turns(&ready), 1);
    super::said_once(&d, &down);
    assert_secret_kept(&rig.project, Some(&d), PASSWORD, &file);
}
