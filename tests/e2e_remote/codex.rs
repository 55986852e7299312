//! A Codex app-server asking for a capability token.

use std::time::Duration;

use super::{assert_secret_kept, toml};
use crate::util::agents::codex::{CodexHome, ListeningServer};
use crate::util::daemon::Daemon;
use crate::util::fakemodel::responses::Responses;
use crate::util::fakemodel::FakeModel;
use crate::util::plans::{plan_text, write_in_place, Step};
use crate::util::project::Project;
use crate::util::tls::{self, secret_file, Ca, Proxy};
use crate::util::wait_until;

const TURN: Duration = Duration::from_secs(60);
const TOKEN: &str = "tok-4be1d07a9c3355e2";

/// The fake model, an app-server asking for [`TOKEN`] with one thread, and
/// a project whose default session it is, its `token_file` holding
/// `sent`.
struct Rig {
    model: FakeModel,
    project: Project,
    thread: String,
    file: String,
    endpoint: String,
    _server: ListeningServer,
    _home: CodexHome,
    _dir: tempfile::TempDir,
}

impl Rig {
    fn new(sent: &str) -> Option<Rig> {
        let model = FakeModel::start(vec![Box::new(Responses)], Duration::from_millis(20));
        let home = match CodexHome::new(&model) {
            Ok(home) => home,
            Err(why) => {
                eprintln!("skipped: {why}");
                return None;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        // The server's copy and reveille's, each its owner's alone.
        let server_file = secret_file(dir.path(), "server-token", TOKEN, 0o600);
        let file = secret_file(dir.path(), "codex-token", sent, 0o600);
        let server = ListeningServer::ws_with_token(&home, &server_file, TOKEN);
        let thread = server.new_thread(&home.work());
        let mut project = Project::with_default_session(&format!("codex:{thread}"));
        project.set("codex", "home", &toml(home.home.display()));
        project.set("codex", "endpoint", &toml(&server.endpoint));
        project.set("codex", "token_file", &toml(file.display()));
        project.set("sessions", "session_plans", "false");
        Some(Rig {
            model,
            project,
            thread,
            file: file.display().to_string(),
            endpoint: server.endpoint.clone(),
            _server: server,
            _home: home,
            _dir: dir,
        })
    }

    /// A one-step plan; the step's words in its prompt.
    fn plan(&self, title: &str) -> String {
        let path = self
            .project
            .plan_dir
            .join("20260101T000000_c0d3c0d3--remote__todo.md");
        write_in_place(
            &path,
            plan_text("Remote", &[Step::new(title)], "").as_bytes(),
        );
        format!("is ready: {title}")
    }
}

#[test]
fn a_plan_step_reaches_a_codex_app_server_that_asks_for_a_token() {
    let Some(rig) = Rig::new(TOKEN) else { return };
    let (model, project, thread, file) = (&rig.model, &rig.project, &rig.thread, &rig.file);
    let d = Daemon::start(project);
    let ready = rig.plan("Say hello to the app-server");
    wait_until("the step's turn", TURN, || {
        (!model.turns_on(&ready).is_empty()).then_some(())
    });
    wait_until("nothing pending", TURN, || {
        project
            .pending(&format!("codex:{thread}"))
            .is_empty()
            .then_some(())
    });
    assert_eq!(model.turns_on(&ready).len(), 1, "{:#?}", model.requests());
    assert_secret_kept(project, Some(&d), TOKEN, file);
}

#[test]
fn a_wrong_token_is_one_clear_error_nothing_is_delivered_until_the_file_is_corrected() {
    let wrong = "tok-wrong-77aa01";
    let Some(mut rig) = Rig::new(wrong) else {
        return;
    };
    // A counting proxy in front: how often reveille tried again.
    let port = rig.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let proxy = Proxy::tcp(port, rig._dir.path());
    let endpoint = format!("ws://127.0.0.1:{}", proxy.port);
    rig.project.set("codex", "endpoint", &toml(&endpoint));
    let d = Daemon::start(&rig.project);
    let ready = rig.plan("Never run this one");
    let refused = "refused the credentials";
    let line = d.wait_log(refused, TURN);
    println!("{line}");
    assert!(
        line.contains(&format!("codex app-server at {endpoint}")),
        "{line}"
    );
    let tried = proxy.accepted();
    wait_until("two more tries", TURN, || {
        (proxy.accepted() >= tried + 2).then_some(())
    });
    let session = format!("codex:{}", rig.thread);
    assert_eq!(rig.project.pending(&session), vec!["s1".to_string()]);
    assert!(rig.model.turns_on(&ready).is_empty());
    // Said once by the link, once by the engine for the prompt that waits
    // on the session, and once by the prompt's failed write (the engine's
    // "cannot deliver", once per streak): never per retry.
    let said = d.lines_with(refused);
    let link: Vec<_> = said
        .iter()
        .filter(|l| l.contains("prompts wait until"))
        .collect();
    assert_eq!(link.len(), 1, "{said:#?}");
    assert!(said.len() <= 3, "{said:#?}");
    // The file corrected: read again at the next refusal, no restart.
    secret_file(rig._dir.path(), "codex-token", TOKEN, 0o600);
    wait_until("the step's turn", TURN, || {
        (!rig.model.turns_on(&ready).is_empty()).then_some(())
    });
    wait_until("nothing pending", TURN, || {
        rig.project.pending(&session).is_empty().then_some(())
    });
    assert_eq!(
        rig.model.turns_on(&ready).len(),
        1,
        "{:#?}",
        rig.model.requests()
    );
    for secret in [wrong, TOKEN] {
        assert_secret_kept(&rig.project, Some(&d), secret, &rig.file);
    }
}

#[test]
fn wss_through_a_tls_proxy_reaches_the_app_server_with_the_ca() {
    if let Some(why) = tls::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let Some(mut rig) = Rig::new(TOKEN) else {
        return;
    };
    let ca = Ca::new(rig._dir.path(), "test-ca");
    let port = rig.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let proxy = Proxy::tls(&ca.issue("127.0.0.1"), port, rig._dir.path());
    let endpoint = format!("wss://127.0.0.1:{}", proxy.port);
    rig.project.set("codex", "endpoint", &toml(&endpoint));
    rig.project
        .set("codex", "ca_file", &toml(ca.cert.display()));
    let d = Daemon::start(&rig.project);
    let ready = rig.plan("Say hello over TLS");
    wait_until("the step's turn", TURN, || {
        (!rig.model.turns_on(&ready).is_empty()).then_some(())
    });
    let session = format!("codex:{}", rig.thread);
    wait_until("nothing pending", TURN, || {
        rig.project.pending(&session).is_empty().then_some(())
    });
    assert_eq!(
        rig.model.turns_on(&ready).len(),
        1,
        "{:#?}",
        rig.model.requests()
    );
    assert!(proxy.accepted() > 0, "not through the TLS proxy");
    assert_secret_kept(&rig.project, Some(&d), TOKEN, &rig.file);
}

#[test]
fn a_cut_link_to_the_app_server_holds_the_prompt_and_delivers_it_once_healed() {
    let Some(mut rig) = Rig::new(TOKEN) else {
        return;
    };
    let port = rig.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let mut proxy = Proxy::tcp(port, rig._dir.path());
    let endpoint = format!("ws://127.0.0.1:{}", proxy.port);
    rig.project.set("codex", "endpoint", &toml(&endpoint));
    let d = Daemon::start(&rig.project);
    d.wait_log("connected to the codex app-server", TURN);
    // The link cut: the connection ends, every new one is refused.
    proxy.cut();
    let said = "its sessions' prompts wait until it";
    let line = d.wait_log(said, TURN);
    println!("{line}");
    assert!(line.contains(&endpoint), "{line}");
    let ready = rig.plan("Say hello after the cut");
    let session = format!("codex:{}", rig.thread);
    d.wait_log(&format!("announced s1 to session {session}"), TURN);
    assert_eq!(rig.project.pending(&session), vec!["s1".to_string()]);
    assert!(rig.model.turns_on(&ready).is_empty());
    // Healed: delivered once; the episode said once, its end once.
    proxy.heal();
    wait_until("the step's turn", TURN, || {
        (!rig.model.turns_on(&ready).is_empty()).then_some(())
    });
    wait_until("nothing pending", TURN, || {
        rig.project.pending(&session).is_empty().then_some(())
    });
    d.wait_log(
        &format!("the codex app-server at {endpoint} is reachable again"),
        TURN,
    );
    assert_eq!(
        rig.model.turns_on(&ready).len(),
        1,
        "{:#?}",
        rig.model.requests()
    );
    assert_eq!(d.log_count(said), 1, "{}", d.log());
    assert_secret_kept(&rig.project, Some(&d), TOKEN, &rig.file);
}
