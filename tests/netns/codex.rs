//! Codex on "another machine": the real `codex app-server --listen
//! ws://<far>:<port> --ws-auth capability-token --ws-token-file F` in the
//! far namespace, with the fake model beside it on the far side's
//! loopback; the real `reveille run` in the near namespace with `[codex]
//! endpoint` and `token_file`. The agent's shell tool ticks the plan's
//! steps in the plan file, which both sides see.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::e2e_opencode::plan_watch::ticked;
use crate::e2e_remote::{assert_secret_kept, toml};
use crate::util::agents::codex::{CodexHome, ListeningServer};
use crate::util::daemon::Daemon;
use crate::util::fakemodel::responses::Responses;
use crate::util::fakemodel::FakeModel;
use crate::util::netns::{Link, Side};
use crate::util::plans::{task_plan, Step};
use crate::util::project::Project;
use crate::util::tls::{self, secret_file, Ca, Proxy, Route};
use crate::util::{try_wait_until, wait_until};

/// A turn of the fake model with Codex's overhead, on a loaded machine.
const T: Duration = Duration::from_secs(60);
const TOKEN: &str = "tok-far-93c1e0b7d24a";
const CLEARTEXT: &str = "is reached in plain text across the network";

/// The far side's app-server with one thread, the fake model it talks
/// to, and a project on the near side whose default session that thread
/// is, its `token_file` holding what the test says. Fields drop in order:
/// the namespaces go last, after everything in them.
struct Rig {
    project: Project,
    model: FakeModel,
    server: ListeningServer,
    _home: CodexHome,
    thread: String,
    /// reveille's token file.
    file: String,
    dir: tempfile::TempDir,
    link: Link,
}

impl Rig {
    fn new(sent: &str) -> Option<Rig> {
        let link = Link::create_or_skip()?;
        let model = link.within(Side::Far, || {
            FakeModel::start(vec![Box::new(Responses)], Duration::from_millis(20))
        });
        let home = match CodexHome::new(&model) {
            Ok(home) => home,
            Err(why) => {
                eprintln!("skipped: {why}");
                return None;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let server_file = secret_file(dir.path(), "server-token", TOKEN, 0o600);
        let file = secret_file(dir.path(), "codex-token", sent, 0o600);
        let ip = link.far_ip().to_string();
        let (server, thread) = link.within(Side::Far, || {
            let server = ListeningServer::ws_at_with_token(&home, &ip, &server_file, TOKEN);
            let thread = server.new_thread(&home.work());
            (server, thread)
        });
        let mut project = Project::with_default_session(&format!("codex:{thread}"));
        project.set("codex", "home", &toml(home.home.display()));
        project.set("codex", "endpoint", &toml(&server.endpoint));
        project.set("codex", "token_file", &toml(file.display()));
        project.set("sessions", "session_plans", "false");
        Some(Rig {
            project,
            model,
            server,
            _home: home,
            thread,
            file: file.display().to_string(),
            dir,
            link,
        })
    }

    fn q(&self) -> String {
        format!("codex:{}", self.thread)
    }

    /// `reveille run` in the near namespace, ready.
    fn daemon(&self) -> Daemon {
        self.link
            .within(Side::Near, || Daemon::start(&self.project))
    }

    fn plan(&self, titles: &[&str]) -> PathBuf {
        let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
        task_plan(&self.project.plan_dir, "Far away", &steps)
    }

    /// How many turns began on the step titled `title`.
    fn turns(&self, title: &str) -> usize {
        self.model.turns_on(&format!("is ready: {title}")).len()
    }

    fn wait_ticked(&self, plan: &Path, titles: &[&str], d: &Daemon) {
        let done = try_wait_until(T, || {
            let text = std::fs::read_to_string(plan).ok()?;
            titles.iter().all(|t| ticked(&text, t)).then_some(())
        });
        if done.is_none() {
            panic!(
                "timed out after {T:?} waiting for the agent to tick {titles:?}; the plan:\n{}\nthe model was asked: {:#?}\nreveille said:\n{}",
                std::fs::read_to_string(plan).unwrap_or_default(),
                self.model.requests(),
                d.log()
            );
        }
    }

    fn each_once(&self, titles: &[&str]) {
        for title in titles {
            let n = self.turns(title);
            assert_eq!(n, 1, "{title:?} reached the model {n} times: {:#?}", {
                self.model.requests()
            });
        }
    }

    fn wait_nothing_pending(&self) {
        wait_until("nothing pending", T, || {
            self.project.pending(&self.q()).is_empty().then_some(())
        });
    }
}

#[test]
fn a_three_step_plan_runs_to_its_end_on_a_codex_app_server_across_the_network() {
    let Some(rig) = Rig::new(TOKEN) else { return };
    let d = rig.daemon();
    let titles = ["Write the lexer", "Write the parser", "Write the checker"];
    let plan = rig.plan(&titles);
    rig.wait_ticked(&plan, &titles, &d);
    rig.wait_nothing_pending();
    rig.each_once(&titles);
    // A token crossing in plain text is said, once.
    assert_eq!(d.log_count(CLEARTEXT), 1, "{}", d.log());
    assert!(d.lines_with(CLEARTEXT)[0].contains(&rig.server.endpoint));
    assert_secret_kept(&rig.project, Some(&d), TOKEN, &rig.file);
}

#[test]
fn a_link_cut_mid_plan_loses_nothing_and_delivers_nothing_twice_to_codex() {
    cut_mid_plan(Link::cut, Link::heal);
}

#[test]
fn packets_dropped_mid_plan_lose_nothing_and_deliver_nothing_twice_to_codex() {
    cut_mid_plan(Link::drop_packets, Link::pass_packets);
}

/// A three-step plan with the link cut by `cut` while s2's turn runs,
/// and healed by `heal` once reveille said so.
fn cut_mid_plan(cut: fn(&Link), heal: fn(&Link)) {
    let Some(rig) = Rig::new(TOKEN) else { return };
    let d = rig.daemon();
    // s2's turn is slow: the link is cut while it runs on the far side,
    // where the agent ticks s2 while reveille cannot reach it; s3 is then
    // due with the link down.
    let titles = [
        "Write the notes",
        "Check the notes, delay=3",
        "Publish the notes",
    ];
    let plan = rig.plan(&titles);
    wait_until("s2's turn", T, || (rig.turns(titles[1]) > 0).then_some(()));
    cut(&rig.link);
    wait_until("s2 ticked on the far side", T, || {
        let text = std::fs::read_to_string(&plan).ok()?;
        ticked(&text, titles[1]).then_some(())
    });
    let endpoint = &rig.server.endpoint;
    let down = format!("codex app-server at {endpoint}");
    let line = d.wait_log(&format!("{down} broke"), T);
    println!("{line}");
    assert_eq!(rig.turns(titles[2]), 0, "s3 crossed a cut link");
    heal(&rig.link);
    let back = format!("the codex app-server at {endpoint} is reachable again");
    d.wait_log(&back, T);
    rig.wait_ticked(&plan, &titles, &d);
    rig.wait_nothing_pending();
    rig.each_once(&titles);
    let said: Vec<_> = d
        .lines_with(&down)
        .into_iter()
        .filter(|l| l.contains("prompts wait until"))
        .collect();
    assert_eq!(said.len(), 1, "{said:#?}");
    assert_eq!(d.log_count(&back), 1, "{}", d.log());
    assert_secret_kept(&rig.project, Some(&d), TOKEN, &rig.file);
}

#[test]
fn a_prompt_due_while_the_link_is_cut_waits_and_is_delivered_once_to_codex() {
    let Some(rig) = Rig::new(TOKEN) else { return };
    let d = rig.daemon();
    let endpoint = rig.server.endpoint.clone();
    d.wait_log("connected to the codex app-server", T);
    rig.link.cut();
    // The thread is idle: the step is due at once, and its
    // `thread/queue/add` goes out into the cut.
    let titles = ["Write it down"];
    let plan = rig.plan(&titles);
    let broke = format!("the connection to the codex app-server at {endpoint} broke");
    let line = d.wait_log(&broke, T);
    println!("{line}");
    assert_eq!(rig.turns(titles[0]), 0, "the step crossed a cut link");
    assert_eq!(rig.project.pending(&rig.q()), vec!["s1".to_string()]);
    rig.link.heal();
    rig.wait_ticked(&plan, &titles, &d);
    rig.wait_nothing_pending();
    rig.each_once(&titles);
    let said: Vec<_> = d
        .lines_with(&broke)
        .into_iter()
        .filter(|l| l.contains("prompts wait until"))
        .collect();
    assert_eq!(said.len(), 1, "{said:#?}");
    let back = format!("the codex app-server at {endpoint} is reachable again");
    assert_eq!(d.log_count(&back), 1, "{}", d.log());
    assert_secret_kept(&rig.project, Some(&d), TOKEN, &rig.file);
}

#[test]
fn a_prompt_taken_whose_answer_is_lost_is_not_sent_again_to_codex() {
    let Some(rig) = Rig::new(TOKEN) else { return };
    let d = rig.daemon();
    let endpoint = rig.server.endpoint.clone();
    // s2's turn is slow (each model answer takes 20 s): it still runs
    // when reveille is connected again, its step not yet ticked.
    // s1 slow enough (delay=4) that its tick, which sends s2, comes
    // after the answers are dropped.
    let titles = ["Write the notes, delay=4", "Publish the notes, delay=40"];
    let plan = rig.plan(&titles);
    // From s1's turn on (reveille saw it start), what the far side sends
    // back is lost: s2's
    // `thread/queue/add` (sent when the agent ticks s1) reaches the
    // server, which queues it and runs it after s1; its answer never
    // comes back.
    d.wait_log("woke idle session", T);
    rig.link.drop_answers();
    wait_until("s2's turn on the far side", T, || {
        (rig.turns(titles[1]) > 0).then_some(())
    });
    let broke = format!("the connection to the codex app-server at {endpoint} broke");
    let line = d.wait_log(&broke, T);
    println!("{line}");
    rig.link.pass_answers();
    let back = format!("the codex app-server at {endpoint} is reachable again");
    d.wait_log(&back, T);
    // Found in the thread, its turn running: not sent again.
    d.wait_log("turn started on s2", T);
    assert!(!ticked(&std::fs::read_to_string(&plan).unwrap(), titles[1]));
    rig.wait_ticked(&plan, &titles, &d);
    rig.wait_nothing_pending();
    rig.each_once(&titles);
    assert_eq!(d.log_count(&back), 1, "{}", d.log());
    assert_secret_kept(&rig.project, Some(&d), TOKEN, &rig.file);
}

#[test]
fn a_wrong_token_across_the_network_is_one_clear_error_and_nothing_is_delivered() {
    let wrong = "tok-far-wrong-5e01";
    let Some(mut rig) = Rig::new(wrong) else {
        return;
    };
    // A counting proxy beside the server: how often reveille tried again.
    let ip = rig.link.far_ip().to_string();
    let port: u16 = rig
        .server
        .endpoint
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let route = Route {
        bind: &ip,
        port: tls::free_port(),
        target: format!("{ip}:{port}"),
        prefix: &[],
    };
    let proxy = rig
        .link
        .within(Side::Far, || Proxy::tcp_on(route, rig.dir.path()));
    let endpoint = format!("ws://{ip}:{}", proxy.port);
    rig.project.set("codex", "endpoint", &toml(&endpoint));
    let d = rig.daemon();
    let titles = ["Never run this one"];
    rig.plan(&titles);
    let refused = "refused the credentials";
    let line = d.wait_log(refused, T);
    println!("{line}");
    assert!(
        line.contains(&format!("codex app-server at {endpoint}")),
        "{line}"
    );
    let tried = proxy.accepted();
    wait_until("two more tries", T, || {
        (proxy.accepted() >= tried + 2).then_some(())
    });
    assert_eq!(rig.project.pending(&rig.q()), vec!["s1".to_string()]);
    assert_eq!(rig.turns(titles[0]), 0);
    // Said once by the link, at most once by the engine for the prompt
    // that waits on the session, and at most once by the prompt's failed
    // write (the engine's "cannot deliver", once per streak).
    let said = d.lines_with(refused);
    let link: Vec<_> = said
        .iter()
        .filter(|l| l.contains("prompts wait until"))
        .collect();
    assert_eq!(link.len(), 1, "{said:#?}");
    assert!(said.len() <= 3, "{said:#?}");
    assert_eq!(d.log_count(CLEARTEXT), 1, "{}", d.log());
    for secret in [wrong, TOKEN] {
        assert_secret_kept(&rig.project, Some(&d), secret, &rig.file);
    }
}

#[test]
fn wss_across_the_network_is_refused_untrusted_and_delivered_with_the_ca() {
    if let Some(why) = tls::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let Some(mut rig) = Rig::new(TOKEN) else {
        return;
    };
    let ip = rig.link.far_ip().to_string();
    let ca = Ca::new(rig.dir.path(), "far-ca");
    let port: u16 = rig
        .server
        .endpoint
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let route = Route {
        bind: &ip,
        port: tls::free_port(),
        target: format!("{ip}:{port}"),
        prefix: &[],
    };
    let proxy = rig.link.within(Side::Far, || {
        Proxy::tls_on(&ca.issue(&ip), route, rig.dir.path())
    });
    let endpoint = format!("wss://{ip}:{}", proxy.port);
    rig.project.set("codex", "endpoint", &toml(&endpoint));
    // The system's roots do not know the test's CA: refused, said once.
    let d = rig.daemon();
    let titles = ["Say hello over TLS"];
    rig.plan(&titles);
    let untrusted = "not signed by a CA reveille trusts";
    let line = d.wait_log(untrusted, T);
    println!("{line}");
    assert!(line.contains(&endpoint) && line.contains("TLS"), "{line}");
    let tried = proxy.accepted();
    wait_until("two more tries", T, || {
        (proxy.accepted() >= tried + 2).then_some(())
    });
    let link: Vec<_> = d
        .lines_with(untrusted)
        .into_iter()
        .filter(|l| l.contains("prompts wait until"))
        .collect();
    assert_eq!(link.len(), 1, "{link:#?}");
    assert_eq!(rig.turns(titles[0]), 0);
    assert_eq!(rig.project.pending(&rig.q()), vec!["s1".to_string()]);
    d.stop();
    // With the CA: the waiting prompt is delivered, once; wss:// is not
    // warned about.
    rig.project
        .set("codex", "ca_file", &toml(ca.cert.display()));
    let d = rig.daemon();
    wait_until("the step's turn", T, || {
        (rig.turns(titles[0]) > 0).then_some(())
    });
    rig.wait_nothing_pending();
    rig.each_once(&titles);
    assert_eq!(d.log_count(CLEARTEXT), 0, "{}", d.log());
    assert_secret_kept(&rig.project, Some(&d), TOKEN, &rig.file);
}
