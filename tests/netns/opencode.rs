//! opencode on "another machine": the real `opencode serve --hostname
//! 0.0.0.0` asking for a password (`OPENCODE_SERVER_PASSWORD`) in the far
//! namespace, with the fake model beside it on the far side's loopback;
//! the real `reveille run` in the near namespace with `[opencode] url =
//! "http://<far>:<port>"` and `password_file`. The agent's shell tool
//! ticks the plan's steps in the plan file, which both sides see (the
//! namespaces share the file system, as a shared directory would).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::e2e_opencode::plan_watch::ticked;
use crate::e2e_remote::{assert_secret_kept, toml};
use crate::util::agents::opencode::{Home, Mode, Opencode};
use crate::util::daemon::Daemon;
use crate::util::fakemodel::{chat::Chat, FakeModel};
use crate::util::netns::{Link, Side};
use crate::util::plans::{plan_text, write_in_place, Step};
use crate::util::project::Project;
use crate::util::tls::{self, secret_file, Ca, Proxy, Route};
use crate::util::{try_wait_until, wait_until};

/// A turn of the fake model with opencode's overhead, on a loaded machine.
const T: Duration = Duration::from_secs(60);
/// The event stream's silence limit (30 s) and the retry after it: how
/// long a cut link may take to be noticed.
const NOTICED: Duration = Duration::from_secs(60);
const PASSWORD: &str = "pw-far-2b9e61c04d7a";
const CLEARTEXT: &str = "is reached in plain text across the network";

/// The far side's opencode with one session, the fake model it talks to,
/// and a project on the near side whose default session that is. Fields
/// drop in order: the namespaces go last, after everything in them.
pub struct Rig {
    pub project: Project,
    pub oc: Opencode,
    pub model: FakeModel,
    pub session: String,
    /// Where the test keeps its secrets and certificates.
    pub dir: tempfile::TempDir,
    pub link: Link,
}

/// opencode is stopped in the namespace it listens in: its teardown waits
/// for its port to close, and the same port number on this side may be
/// another test's.
impl Drop for Rig {
    fn drop(&mut self) {
        let oc = &mut self.oc;
        self.link.within(Side::Far, || oc.kill9());
    }
}

impl Rig {
    /// `None`, with one `skipped:` line, where this cannot run.
    pub fn new() -> Option<Rig> {
        if let Some(why) = Opencode::unavailable(Mode::Serve).or_else(tls::unavailable) {
            eprintln!("skipped: {why}");
            return None;
        }
        let link = Link::create_or_skip()?;
        let model = link.within(Side::Far, || {
            FakeModel::start(vec![Box::new(Chat)], Duration::from_millis(50))
        });
        let home = Home::new(&model.url())
            .with_password(PASSWORD)
            .listening_on("0.0.0.0");
        let oc = link.within(Side::Far, || Opencode::start(home, Mode::Serve));
        let session = link.within(Side::Far, || oc.create_session());
        let mut project = Project::with_default_session(&format!("opencode:{session}"));
        let plans = oc.home.work().join("pl");
        std::fs::create_dir_all(&plans).unwrap();
        project.set("project", "plan_dir", &toml(plans.display()));
        project.plan_dir = plans;
        Some(Rig {
            project,
            oc,
            model,
            session,
            dir: tempfile::tempdir().unwrap(),
            link,
        })
    }

    pub fn q(&self) -> String {
        format!("opencode:{}", self.session)
    }

    /// `http://<far>:<port>`: the server as the near side reaches it.
    pub fn url(&self) -> String {
        format!("http://{}:{}", self.link.far_ip(), self.oc.port)
    }

    /// A proxy's way on the far side: listening on `ip`, to the server.
    pub fn route<'a>(&self, ip: &'a str) -> Route<'a> {
        Route {
            bind: ip,
            port: tls::free_port(),
            target: format!("127.0.0.1:{}", self.oc.port),
            prefix: &[],
        }
    }

    /// reveille's password file, holding `password`; its path.
    pub fn password_file(&mut self, password: &str) -> String {
        let file = secret_file(self.dir.path(), "opencode-password", password, 0o600);
        self.project
            .set("opencode", "password_file", &toml(file.display()));
        file.display().to_string()
    }

    /// `reveille run` in the near namespace, ready.
    pub fn daemon(&self) -> Daemon {
        self.link
            .within(Side::Near, || Daemon::start(&self.project))
    }

    /// A plan of `titles`, one step after the other; its path.
    pub fn plan(&self, titles: &[&str]) -> PathBuf {
        let path = self
            .project
            .plan_dir
            .join("20260101T000000_fa12fa12--far__todo.md");
        let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
        write_in_place(&path, plan_text("Far away", &steps, "").as_bytes());
        path
    }

    /// How many turns began on the step titled `title` (its prompt's
    /// first model request).
    pub fn turns(&self, title: &str) -> usize {
        self.model.turns_on(&format!("is ready: {title}\n")).len()
    }

    /// Wait until every one of `titles` is ticked in `plan`.
    pub fn wait_ticked(&self, plan: &Path, titles: &[&str], d: &Daemon) {
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

    /// Each of `titles` reached the model exactly once.
    pub fn each_once(&self, titles: &[&str]) {
        for title in titles {
            let n = self.turns(title);
            assert_eq!(n, 1, "{title:?} reached the model {n} times: {:#?}", {
                self.model.requests()
            });
        }
    }

    /// Wait until nothing is pending for the session.
    pub fn wait_nothing_pending(&self) {
        wait_until("nothing pending", T, || {
            self.project.pending(&self.q()).is_empty().then_some(())
        });
    }
}

#[test]
fn a_three_step_plan_runs_to_its_end_on_an_opencode_server_across_the_network() {
    let Some(mut rig) = Rig::new() else { return };
    let file = rig.password_file(PASSWORD);
    rig.project.set("opencode", "url", &toml(rig.url()));
    let d = rig.daemon();
    let titles = ["Write the lexer", "Write the parser", "Write the tests"];
    let plan = rig.plan(&titles);
    rig.wait_ticked(&plan, &titles, &d);
    rig.wait_nothing_pending();
    rig.each_once(&titles);
    // A password crossing in plain text is said, once.
    assert_eq!(d.log_count(CLEARTEXT), 1, "{}", d.log());
    assert!(d.lines_with(CLEARTEXT)[0].contains(&rig.url()));
    assert_secret_kept(&rig.project, Some(&d), PASSWORD, &file);
}

#[test]
fn a_link_cut_mid_plan_loses_nothing_and_delivers_nothing_twice() {
    cut_mid_plan(Link::cut, Link::heal);
}

#[test]
fn packets_dropped_mid_plan_lose_nothing_and_deliver_nothing_twice() {
    cut_mid_plan(Link::drop_packets, Link::pass_packets);
}

/// A three-step plan with the link cut by `cut` while s2's turn runs,
/// and healed by `heal` once reveille said so.
fn cut_mid_plan(cut: fn(&Link), heal: fn(&Link)) {
    let Some(mut rig) = Rig::new() else { return };
    let file = rig.password_file(PASSWORD);
    let url = rig.url();
    rig.project.set("opencode", "url", &toml(&url));
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
    let down = format!("opencode server not reachable at {url}");
    let line = d.wait_log(&down, NOTICED);
    println!("{line}");
    wait_until("s2 ticked on the far side", T, || {
        let text = std::fs::read_to_string(&plan).ok()?;
        ticked(&text, titles[1]).then_some(())
    });
    assert_eq!(rig.turns(titles[2]), 0, "s3 crossed a cut link");
    heal(&rig.link);
    let back = format!("the opencode server at {url} is reachable again");
    d.wait_log(&back, NOTICED);
    rig.wait_ticked(&plan, &titles, &d);
    rig.wait_nothing_pending();
    rig.each_once(&titles);
    // The episode is said once when it began and once when it ended.
    let said = d.lines_with(&down);
    let link: Vec<_> = said
        .iter()
        .filter(|l| l.contains("prompts wait until"))
        .collect();
    assert_eq!(link.len(), 1, "{said:#?}");
    assert_eq!(d.log_count(&back), 1, "{}", d.log());
    // s3's prompt is in the transcript once.
    let transcript = rig
        .link
        .within(Side::Far, || rig.oc.transcript(&rig.session));
    let s3 = format!("is ready: {}\n", titles[2]);
    let copies = transcript
        .iter()
        .filter(|m| m.role == "user" && m.text.contains(&s3))
        .count();
    assert_eq!(copies, 1, "{transcript:#?}");
    assert_secret_kept(&rig.project, Some(&d), PASSWORD, &file);
}

#[test]
fn a_prompt_due_while_the_link_is_cut_waits_and_is_delivered_once_when_it_heals() {
    let Some(mut rig) = Rig::new() else { return };
    let file = rig.password_file(PASSWORD);
    let url = rig.url();
    rig.project.set("opencode", "url", &toml(&url));
    let d = rig.daemon();
    wait_until("the session followed, idle", T, || {
        let status = rig.project.status_json();
        let idle = status["sessions"]
            .as_array()?
            .iter()
            .any(|s| s["id"] == rig.q().as_str() && s["state"] == "idle");
        idle.then_some(())
    });
    rig.link.cut();
    // The agent is idle: the step is due at once, and every try to
    // deliver it meets the cut.
    let titles = ["Write it down"];
    let plan = rig.plan(&titles);
    let kept = "1 prompt(s) kept in its outbox";
    let line = d.wait_log(kept, T);
    println!("{line}");
    assert!(line.contains(&url), "{line}");
    assert_eq!(rig.turns(titles[0]), 0, "the step crossed a cut link");
    assert_eq!(rig.project.pending(&rig.q()), vec!["s1".to_string()]);
    rig.link.heal();
    rig.wait_ticked(&plan, &titles, &d);
    rig.wait_nothing_pending();
    rig.each_once(&titles);
    // The refusals of the retries are said once, and so is the session
    // being back (read again at the server's heartbeat: the event stream,
    // which outlived the cut, never said it was gone).
    assert_eq!(d.log_count(kept), 1, "{}", d.log());
    let back = format!("session {} is reachable again", rig.q());
    assert_eq!(d.log_count(&back), 1, "{}", d.log());
    assert_secret_kept(&rig.project, Some(&d), PASSWORD, &file);
}

#[test]
fn a_wrong_password_across_the_network_is_one_clear_error_and_nothing_is_delivered() {
    let Some(mut rig) = Rig::new() else { return };
    let wrong = "not-the-far-password-7d21";
    let file = rig.password_file(wrong);
    // A counting proxy beside the server: how often reveille tried again.
    let ip = rig.link.far_ip().to_string();
    let proxy = rig
        .link
        .within(Side::Far, || Proxy::tcp_on(rig.route(&ip), rig.dir.path()));
    let url = format!("http://{ip}:{}", proxy.port);
    rig.project.set("opencode", "url", &toml(&url));
    let d = rig.daemon();
    let titles = ["Never run this one"];
    rig.plan(&titles);
    let refused = "refused the credentials";
    let line = d.wait_log(refused, T);
    println!("{line}");
    assert!(line.contains(&url), "{line}");
    let tried = proxy.accepted();
    wait_until("two more tries", T, || {
        (proxy.accepted() >= tried + 2).then_some(())
    });
    crate::e2e_remote::said_once(&d, refused);
    assert_eq!(rig.turns(titles[0]), 0);
    assert_eq!(rig.project.pending(&rig.q()), vec!["s1".to_string()]);
    assert_eq!(d.log_count(CLEARTEXT), 1, "{}", d.log());
    for secret in [wrong, PASSWORD] {
        assert_secret_kept(&rig.project, Some(&d), secret, &file);
    }
}

#[test]
fn https_across_the_network_is_refused_untrusted_and_delivered_with_the_ca() {
    let Some(mut rig) = Rig::new() else { return };
    let file = rig.password_file(PASSWORD);
    let ip = rig.link.far_ip().to_string();
    let ca = Ca::new(rig.dir.path(), "far-ca");
    let proxy = rig.link.within(Side::Far, || {
        Proxy::tls_on(&ca.issue(&ip), rig.route(&ip), rig.dir.path())
    });
    let url = format!("https://{ip}:{}", proxy.port);
    rig.project.set("opencode", "url", &toml(&url));
    // The system's roots do not know the test's CA: refused, said once.
    let d = rig.daemon();
    let titles = ["Say hello over TLS"];
    rig.plan(&titles);
    let untrusted = "not signed by a CA reveille trusts";
    let line = d.wait_log(untrusted, T);
    println!("{line}");
    assert!(line.contains(&url) && line.contains("TLS"), "{line}");
    let tried = proxy.accepted();
    wait_until("two more tries", T, || {
        (proxy.accepted() >= tried + 2).then_some(())
    });
    crate::e2e_remote::said_once(&d, untrusted);
    assert_eq!(rig.turns(titles[0]), 0);
    assert_eq!(rig.project.pending(&rig.q()), vec!["s1".to_string()]);
    assert_secret_kept(&rig.project, Some(&d), PASSWORD, &file);
    d.stop();
    // With the CA: the waiting prompt is delivered, once; https is not
    // warned about.
    rig.project
        .set("opencode", "ca_file", &toml(ca.cert.display()));
    let d = rig.daemon();
    wait_until("the step's turn", T, || {
        (rig.turns(titles[0]) > 0).then_some(())
    });
    rig.wait_nothing_pending();
    rig.each_once(&titles);
    assert_eq!(d.log_count(CLEARTEXT), 0, "{}", d.log());
    assert_secret_kept(&rig.project, Some(&d), PASSWORD, &file);
}

#[test]
fn the_server_its_proxy_and_the_namespaces_are_gone_after_a_test_panics() {
    let mut seen = None;
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(rig) = Rig::new() else { return };
        let ip = rig.link.far_ip().to_string();
        let proxy = rig
            .link
            .within(Side::Far, || Proxy::tcp_on(rig.route(&ip), rig.dir.path()));
        let listen = format!("TCP-LISTEN:{},bind={ip}", proxy.port);
        seen = Some((rig.oc.pid().unwrap(), listen, rig.link.namespaces()));
        assert!(processes_with(&seen.as_ref().unwrap().1) > 0);
        panic!("the test fails");
    }));
    let Some((server, listen, namespaces)) = seen else {
        return;
    };
    assert!(failed.is_err());
    assert!(
        !std::path::Path::new(&format!("/proc/{server}")).exists(),
        "opencode ({server}) outlived the test"
    );
    assert_eq!(processes_with(&listen), 0, "the proxy outlived the test");
    let listed = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    for name in namespaces {
        assert!(!listed.contains(&name), "{name} left behind: {listed}");
    }
}

/// How many processes have `needle` in their command line.
fn processes_with(needle: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(needle))
        .count()
}
