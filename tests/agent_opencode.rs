//! Waking opencode, through the real program: reveille's opencode backend
//! driven directly (a channel for its reports, `deliver` called as the
//! engine calls it) against `opencode --port P` (the TUI under tmux) or
//! `opencode serve --port P`, offline against the fake model. Every
//! assertion is about what the agent experienced — the model's requests,
//! the agent's transcript, the plan file its shell tool edited — beside
//! what the backend reported.

use std::time::{Duration, Instant};

use reveille::config::OpencodeSettings;
use reveille::core::effect::{Delivery, Spawn};
use reveille::core::input::{Evidence, Input, Reached, Seen, Undeliverable};
use reveille::core::session::AgentState;
use reveille::shell::agents::opencode::OpencodeBackend;
use reveille::shell::backend::Backend;
use reveille::shell::backend::Reports;
use std::sync::mpsc::{channel, Receiver};

use crate::util::agents::opencode::{Home, Mode, Opencode};
use crate::util::fakemodel::{chat::Chat, FakeModel, Logged};
use crate::util::wait_until;

/// A turn of the fake model, with opencode's own overhead, on a loaded
/// machine.
const T: Duration = Duration::from_secs(60);

/// The fake model, opencode on it, and reveille's backend for it.
struct Rig {
    model: FakeModel,
    oc: Opencode,
    backend: Option<OpencodeBackend>,
    reports: Receiver<(Instant, Input)>,
    /// Every report so far, in order, and when each arrived.
    seen: Vec<Input>,
    arrived: Vec<Instant>,
}

impl Rig {
    /// `None`, with one `skipped:` line, where opencode cannot run.
    fn new(mode: Mode) -> Option<Rig> {
        if let Some(why) = Opencode::unavailable(mode) {
            eprintln!("skipped: {why}");
            return None;
        }
        let model = FakeModel::start(vec![Box::new(Chat)], Duration::from_millis(100));
        let oc = Opencode::start(Home::new(&model.url()), mode);
        let (backend, reports) = backend_for(&oc.url());
        Some(Rig {
            model,
            oc,
            backend: Some(backend),
            reports,
            seen: Vec::new(),
            arrived: Vec::new(),
        })
    }

    /// A new backend, as after a reveille restart (the old one dropped).
    fn restart_backend(&mut self) {
        self.backend = None;
        let (backend, reports) = backend_for(&self.oc.url());
        self.backend = Some(backend);
        self.reports = reports;
        self.seen.clear();
        self.arrived.clear();
    }

    fn deliver(&mut self, session: &str, seq: u64, text: &str) {
        let d = Delivery {
            session: session.to_string(),
            seq,
            text: text.to_string(),
            plan: String::new(),
            step: String::new(),
            parent: None,
            again: false,
        };
        if let Some(now) = self.backend.as_mut().unwrap().deliver(&d) {
            self.seen
                .push(reveille::shell::backend::outcome(d.session, d.seq, now));
            self.arrived.push(Instant::now());
        }
    }

    /// Wait for the first report after `from` that `want` accepts; its index.
    fn wait_for(&mut self, what: &str, from: usize, want: impl Fn(&Input) -> bool) -> usize {
        wait_until(what, T, || {
            while let Ok((at, i)) = self.reports.try_recv() {
                self.seen.push(i);
                self.arrived.push(at);
            }
            self.seen
                .iter()
                .skip(from)
                .position(&want)
                .map(|p| p + from)
        })
    }

    /// Deliver `seq` and wait for its outcome; the outcome's index.
    fn outcome(&mut self, session: &str, seq: u64, text: &str) -> usize {
        let from = self.seen.len();
        self.deliver(session, seq, text);
        self.wait_for(&format!("the outcome of seq {seq}"), from, |i| {
            matches!(i, Input::Delivered { seq: s, .. } if *s == seq) || refusal(i, seq).is_some()
        })
    }

    /// The first request of each turn whose last user text has `needle`.
    fn turns(&self, needle: &str) -> Vec<Logged> {
        self.model.turns_on(needle)
    }
}

/// A backend for `url`, and its reports stamped with their arrival (a
/// thread receives them as the daemon's loop would, at once).
fn backend_for(url: &str) -> (OpencodeBackend, Receiver<(Instant, Input)>) {
    let (tx, mut rx) = Reports::channel();
    let settings = OpencodeSettings {
        url: url.to_string(),
        username: "opencode".into(),
        password: None,
        ca_file: None,
    };
    let backend = OpencodeBackend::new(&settings, "proj", tx);
    let (stamped, reports) = channel();
    // Ends when the backend's threads drop their senders.
    std::thread::spawn(move || {
        while let Some(i) = rx.blocking_recv() {
            if stamped.send((Instant::now(), i)).is_err() {
                return;
            }
        }
    });
    (backend, reports)
}

fn is_delivered(i: &Input, seq: u64) -> bool {
    matches!(i, Input::Delivered { seq: s, reached: Reached::Accepted, .. } if *s == seq)
}

/// Why prompt `seq` was not written, if `i` says so: not taken
/// (`Undeliverable`, `Evidence::Refused`), or held for a running turn
/// (`Evidence::Busy`).
fn refusal(i: &Input, seq: u64) -> Option<Undeliverable> {
    let reason = match i {
        Input::Undeliverable { seq: s, why, .. } if *s == seq => why.reason.clone(),
        Input::Evidence {
            seq: s,
            evidence: Evidence::Refused(r) | Evidence::Busy(r),
            ..
        } if *s == seq => r.clone(),
        _ => return None,
    };
    Some(Undeliverable { reason })
}

fn is_idle(i: &Input, session: &str) -> bool {
    matches!(i.look_at(session), Some(Seen::State(AgentState::Idle)))
}

/// A TUI with a session a person made by typing a first prompt, idle.
fn tui_with_session() -> Option<(Rig, String)> {
    let rig = Rig::new(Mode::Tui)?;
    let session = rig
        .oc
        .first_prompt("hello, I am the person at this terminal");
    rig.oc.wait_idle(&session, T);
    Some((rig, session))
}

#[test]
fn an_idle_agent_starts_a_turn_on_a_delivered_prompt() {
    let Some((mut rig, session)) = tui_with_session() else {
        return;
    };
    let q = format!("opencode:{session}");
    // The person has begun typing and not sent it.
    rig.oc.type_only("half typed by the person");
    wait_until("the half-typed text on screen", T, || {
        rig.oc
            .screen()
            .contains("half typed by the person")
            .then_some(())
    });
    let t0 = Instant::now();
    let at = rig.outcome(&q, 1, "[reveille] wake one: say hello");
    assert!(is_delivered(&rig.seen[at], 1), "{:?}", rig.seen[at]);
    let turn = wait_until("the model's request on the prompt", T, || {
        rig.turns("wake one").first().cloned()
    });
    println!("deliver → model request: {:?}", turn.at - t0);
    rig.wait_for(
        "TurnStarted on seq 1",
        0,
        |i| matches!(i, Input::TurnStarted { seq: 1, session } if *session == q),
    );
    let busy = rig.wait_for("a busy state", 0, |i| {
        matches!(i.look_at(&q), Some(Seen::State(AgentState::Busy(_))))
    });
    rig.wait_for("the idle that ends the turn", busy, |i| is_idle(i, &q));
    rig.oc.wait_idle(&session, T);
    // What the agent experienced: one turn on it, answered, in order.
    assert_eq!(rig.turns("wake one").len(), 1);
    let said = rig.oc.transcript(&session);
    let mine = said
        .iter()
        .find(|m| m.role == "user" && m.text.contains("wake one"))
        .expect("the prompt in the transcript");
    assert!(
        said.iter()
            .any(|m| m.role == "assistant" && m.parent.as_deref() == Some(mine.id.as_str())),
        "an answer to it: {said:?}"
    );
    assert_eq!(
        said.last().unwrap().parent.as_deref(),
        Some(mine.id.as_str()),
        "it is the last turn"
    );
    // The person's half-typed input was neither sent nor disturbed.
    assert!(rig
        .model
        .requests()
        .iter()
        .all(|r| !r.last_user.contains("half typed")));
    assert!(said.iter().all(|m| !m.text.contains("half typed")));
    assert!(
        rig.oc.screen().contains("half typed by the person"),
        "{}",
        rig.oc.screen()
    );
}

#[test]
fn a_prompt_during_a_persons_long_turn_runs_as_its_own_turn_after_it() {
    let Some((mut rig, session)) = tui_with_session() else {
        return;
    };
    let q = format!("opencode:{session}");
    rig.oc.type_prompt("a long question, delay=3");
    wait_until("the person's long turn to start", T, || {
        rig.turns("a long question").first().cloned()
    });
    // The engine delivers while the person's turn runs: refused, busy.
    let at = rig.outcome(&q, 1, "[reveille] step two: after the person");
    match refusal(&rig.seen[at], 1) {
        Some(why) => assert!(why.reason.starts_with("busy: "), "{why:?}"),
        None => panic!("delivered into a running turn: {:?}", rig.seen[at]),
    }
    // … until the idle that ends it, which the engine retries on.
    let idle = rig.wait_for("the idle after the long turn", at, |i| is_idle(i, &q));
    let at = rig.outcome(&q, 1, "[reveille] step two: after the person");
    assert!(is_delivered(&rig.seen[at], 1), "{:?}", rig.seen[at]);
    assert!(at > idle);
    let mine = wait_until("the model's request on the prompt", T, || {
        rig.turns("step two").first().cloned()
    });
    rig.oc.wait_idle(&session, T);
    // The long turn's requests never carried it; its answer was written
    // before the model was asked about the prompt, in a request of its own.
    let long: Vec<Logged> = rig
        .model
        .requests()
        .into_iter()
        .filter(|r| r.last_user.contains("a long question"))
        .collect();
    let long_done = long
        .iter()
        .filter_map(|r| r.done)
        .max()
        .expect("the long turn answered");
    assert!(
        mine.at > long_done,
        "asked {:?} before the long turn's answer ended",
        long_done - mine.at
    );
    assert!(long.iter().all(|r| !r.last_user.contains("step two")));
    assert_eq!(rig.turns("step two").len(), 1);
    let said = rig.oc.transcript(&session);
    let person = said
        .iter()
        .position(|m| m.role == "user" && m.text.contains("a long question"))
        .unwrap();
    let answer = said
        .iter()
        .position(|m| {
            m.role == "assistant" && m.parent.as_deref() == Some(said[person].id.as_str())
        })
        .unwrap();
    let prompt = said
        .iter()
        .position(|m| m.role == "user" && m.text.contains("step two"))
        .unwrap();
    assert!(person < answer && answer < prompt, "{said:?}");
}

#[test]
fn no_prompt_reaches_the_model_twice_also_after_a_reveille_restart() {
    let Some(mut rig) = Rig::new(Mode::Serve) else {
        return;
    };
    let session = rig.oc.create_session();
    let q = format!("opencode:{session}");
    let at = rig.outcome(&q, 7, "[reveille] only once: seven");
    assert!(is_delivered(&rig.seen[at], 7));
    rig.wait_for("TurnStarted on seq 7", 0, |i| {
        matches!(i, Input::TurnStarted { seq: 7, .. })
    });
    rig.oc.wait_idle(&session, T);
    // The same seq again, in this run, and after a restart of reveille.
    let at = rig.outcome(&q, 7, "[reveille] only once: seven");
    assert!(is_delivered(&rig.seen[at], 7), "{:?}", rig.seen[at]);
    rig.restart_backend();
    let at = rig.outcome(&q, 7, "[reveille] only once: seven");
    assert!(is_delivered(&rig.seen[at], 7), "{:?}", rig.seen[at]);
    rig.wait_for("its turn recognised by its id", 0, |i| {
        matches!(i, Input::TurnStarted { seq: 7, .. })
    });
    // A new seq is a new prompt.
    let at = rig.outcome(&q, 8, "[reveille] and then: eight");
    assert!(is_delivered(&rig.seen[at], 8), "{:?}", rig.seen[at]);
    wait_until("the turn on eight", T, || {
        rig.turns("then: eight").first().cloned()
    });
    rig.oc.wait_idle(&session, T);
    assert_eq!(
        rig.turns("only once: seven").len(),
        1,
        "{:?}",
        rig.model.requests()
    );
    assert_eq!(rig.turns("then: eight").len(), 1);
    let said = rig.oc.transcript(&session);
    assert_eq!(
        said.iter()
            .filter(|m| m.role == "user" && m.text.contains("seven"))
            .count(),
        1
    );
}

#[test]
fn a_prompt_waits_while_the_program_is_down_and_is_delivered_once_when_it_is_back() {
    let Some(mut rig) = Rig::new(Mode::Serve) else {
        return;
    };
    let session = rig.oc.create_session();
    let q = format!("opencode:{session}");
    let at = rig.outcome(&q, 1, "[reveille] first, while it runs");
    assert!(is_delivered(&rig.seen[at], 1));
    rig.oc.wait_idle(&session, T);
    // kill -9: the server is gone; the session is unreachable, not gone.
    rig.oc.kill9();
    rig.wait_for("the session unreachable with its program", 0, |i| {
        matches!(i.look_at(&q), Some(Seen::Unreachable(_)))
    });
    let at = rig.outcome(&q, 2, "[reveille] second, while it is down");
    match refusal(&rig.seen[at], 2) {
        Some(why) => assert!(
            why.reason.starts_with(&format!(
                "opencode server not reachable at {}",
                rig.oc.url()
            )),
            "{why:?}"
        ),
        None => panic!("{:?}", rig.seen[at]),
    }
    // Started again on the same port: the stored session is back, idle.
    let down = rig.seen.len();
    rig.oc.start_again();
    rig.wait_for("the session back, idle", down, |i| is_idle(i, &q));
    let at = rig.outcome(&q, 2, "[reveille] second, while it is down");
    assert!(is_delivered(&rig.seen[at], 2), "{:?}", rig.seen[at]);
    wait_until("the turn on the second", T, || {
        rig.turns("second, while").first().cloned()
    });
    rig.oc.wait_idle(&session, T);
    assert_eq!(rig.turns("second, while").len(), 1);
    assert_eq!(rig.turns("first, while").len(), 1);
    let said = rig.oc.transcript(&session);
    assert!(
        said.iter().any(|m| m.text.contains("first, while")),
        "history kept: {said:?}"
    );
}

#[test]
fn the_agent_ticks_a_plan_step_through_its_own_shell_tool() {
    let Some((mut rig, session)) = tui_with_session() else {
        return;
    };
    let plan = rig
        .oc
        .home
        .work()
        .join("20261130T101500_a1b2c3d4--docs__wip.md");
    std::fs::write(
        &plan,
        "# Docs\n\n- [x] Outline\n- [ ] Write the docs\n- [ ] Review\n",
    )
    .unwrap();
    let text = format!(
        "[reveille] s2 is ready: Write the docs\nWhen it is finished, change `- [ ] Write the docs` to `- [x] Write the docs` in {}.",
        plan.display()
    );
    let at = rig.outcome(&format!("opencode:{session}"), 3, &text);
    assert!(is_delivered(&rig.seen[at], 3));
    wait_until("the step ticked in the plan file", T, || {
        std::fs::read_to_string(&plan)
            .ok()
            .filter(|p| p.contains("- [x] Write the docs"))
    });
    rig.oc.wait_idle(&session, T);
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "# Docs\n\n- [x] Outline\n- [x] Write the docs\n- [ ] Review\n"
    );
    let after: Vec<Logged> = rig
        .model
        .requests()
        .into_iter()
        .filter(|r| r.after_tool && !r.auxiliary)
        .collect();
    assert_eq!(
        after.len(),
        1,
        "one tool result came back: {:?}",
        rig.model.requests()
    );
    let q = format!("opencode:{session}");
    rig.wait_for(
        "the shell tool seen running",
        at,
        |i| matches!(i.look_at(&q), Some(Seen::State(AgentState::Busy(b))) if b == "calling: bash"),
    );
    let said = rig.oc.transcript(&session);
    assert!(
        said.iter()
            .any(|m| m.text.contains("ticked: Write the docs")),
        "{said:?}"
    );
}

/// p50 and max of some durations, in ms.
fn spread(mut d: Vec<Duration>) -> String {
    d.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "p50 {:.0} ms, max {:.0} ms (n={})",
        ms(d[d.len() / 2]),
        ms(*d.last().unwrap()),
        d.len()
    )
}

/// One idle wake through the backend: deliver → the model's request, and
/// the model's last byte of that turn → the idle reported.
fn wake_through_reveille(rig: &mut Rig, session: &str, i: u64) -> (Duration, Duration) {
    let q = format!("opencode:{session}");
    let needle = format!("wake number {i}.");
    let t0 = Instant::now();
    let before = rig.seen.len();
    let at = rig.outcome(&q, 100 + i, &format!("[reveille] {needle}"));
    assert!(is_delivered(&rig.seen[at], 100 + i), "{:?}", rig.seen[at]);
    let turn = wait_until("the turn", T, || rig.turns(&needle).first().cloned());
    rig.oc.wait_idle(session, T);
    // The turn's busy may come before the server's record of the prompt,
    // which the outcome waits for.
    let busy = rig.wait_for("busy on it", before, |i| {
        matches!(i.look_at(&q), Some(Seen::State(AgentState::Busy(_))))
    });
    let idle = rig.wait_for("the idle after it", busy, |i| is_idle(i, &q));
    let last_byte = rig
        .model
        .requests()
        .iter()
        .filter(|r| !r.auxiliary && r.last_user.contains(&needle))
        .filter_map(|r| r.done)
        .max()
        .unwrap();
    (turn.at - t0, rig.arrived[idle] - last_byte)
}

/// One idle wake by `prompt_async` from the test: post → model request.
fn wake_directly(rig: &Rig, session: &str, i: u64) -> Duration {
    let needle = format!("direct number {i}.");
    let t0 = Instant::now();
    rig.oc.prompt_async(session, &needle);
    let turn = wait_until("the turn", T, || rig.turns(&needle).first().cloned());
    rig.oc.wait_idle(session, T);
    turn.at - t0
}

/// Idle wake latency, deliver → the model's request on the prompt, beside
/// the agent's own fastest path (`prompt_async` sent by the test) measured
/// the same way, alternately, on the same session.
fn measure(mode: Mode) {
    let Some(mut rig) = Rig::new(mode) else {
        return;
    };
    let session = match mode {
        Mode::Tui => rig
            .oc
            .first_prompt("hello, I am the person at this terminal"),
        Mode::Serve => rig.oc.create_session(),
    };
    if mode == Mode::Serve {
        rig.oc.prompt_async(&session, "warm up");
    }
    rig.oc.wait_idle(&session, T);
    let (mut ours, mut direct, mut ended) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..10u64 {
        // Alternately first, so that neither path meets a server still
        // busy after the other's turn more often.
        if i % 2 == 1 {
            direct.push(wake_directly(&rig, &session, i));
        }
        let (wake, end) = wake_through_reveille(&mut rig, &session, i);
        ours.push(wake);
        ended.push(end);
        if i % 2 == 0 {
            direct.push(wake_directly(&rig, &session, i));
        }
    }
    println!(
        "idle wake, {mode:?}: reveille deliver → model request: {}",
        spread(ours)
    );
    println!(
        "idle wake, {mode:?}: prompt_async by the test → model request: {}",
        spread(direct)
    );
    println!(
        "turn end, {mode:?}: the model's last byte → idle reported: {}",
        spread(ended)
    );
}

#[test]
fn idle_wake_latency_tui() {
    measure(Mode::Tui);
}

#[test]
fn idle_wake_latency_serve() {
    measure(Mode::Serve);
}

#[test]
fn a_session_another_opencode_may_be_running_is_refused_naming_it() {
    let Some(mut rig) = Rig::new(Mode::Serve) else {
        return;
    };
    if let Some(why) = Opencode::unavailable(Mode::Tui) {
        eprintln!("skipped: {why}");
        return;
    }
    let session = rig.oc.create_session();
    let q = format!("opencode:{session}");
    // A person's plain TUI (no --port: no listener) on the same sessions,
    // in the same directory.
    let bin = crate::util::agents::cli_bin("opencode")
        .unwrap()
        .display()
        .to_string();
    let home = &rig.oc.home;
    let plain = crate::util::agents::Tmux::start(
        &home.path().join("plain.sock"),
        &[bin],
        &home.env(),
        &home.work(),
    );
    wait_until("the plain TUI's prompt box", T, || {
        plain.screen().contains("Ask anything").then_some(())
    });
    let at = rig.outcome(&q, 1, "[reveille] must not be answered twice");
    match refusal(&rig.seen[at], 1) {
        Some(why) => assert!(
            why.reason
                .starts_with(&format!("another opencode process (pid {}", plain.pid)),
            "{why:?}"
        ),
        None => panic!("{:?}", rig.seen[at]),
    }
    // The person quits it (its process gone, or a zombie holding nothing).
    let pid = plain.pid;
    drop(plain);
    wait_until("the plain TUI to exit", T, || {
        std::fs::read_link(format!("/proc/{pid}/cwd"))
            .is_err()
            .then_some(())
    });
    let at = rig.outcome(&q, 1, "[reveille] must not be answered twice");
    assert!(is_delivered(&rig.seen[at], 1), "{:?}", rig.seen[at]);
    wait_until("its turn", T, || {
        rig.turns("answered twice").first().cloned()
    });
    rig.oc.wait_idle(&session, T);
    assert_eq!(rig.turns("answered twice").len(), 1);
}

#[test]
fn children_are_made_under_their_parent_once_and_reaped() {
    let Some(mut rig) = Rig::new(Mode::Serve) else {
        return;
    };
    let parent = rig.oc.create_session();
    // The engine's name for the child (opencode picks the child's id).
    let name = format!("opencode:{parent}.s2-0123456789ab");
    let spawn = Spawn {
        child: name.clone(),
        parent: format!("opencode:{parent}"),
    };
    let spawned = |rig: &mut Rig| {
        let from = rig.seen.len();
        assert_eq!(rig.backend.as_mut().unwrap().spawn(&spawn), None);
        let at = rig.wait_for("ChildSpawned", from, |i| {
            matches!(i, Input::ChildSpawned { .. })
        });
        match &rig.seen[at] {
            Input::ChildSpawned {
                child,
                outcome: Ok(_),
            } => child.clone(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(spawned(&mut rig), name, "reported by the engine's name");
    rig.wait_for("the child idle, under its name", 0, |i| is_idle(i, &name));
    // After a crash the same create finds it instead of making another.
    rig.restart_backend();
    assert_eq!(spawned(&mut rig), name);
    let (_, kids) = rig
        .oc
        .call("GET", &format!("/session/{parent}/children"), None)
        .unwrap();
    let kids = kids.as_array().unwrap();
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert_eq!(kids[0]["parentID"], parent.as_str());
    assert_eq!(kids[0]["title"], format!("reveille child {name}").as_str());
    let id = kids[0]["id"].as_str().unwrap().to_string();
    // Its server stopped: the child is unreachable, not gone — the engine
    // keeps its step with it — and back, it is there under its name.
    let down = rig.seen.len();
    rig.oc.stop();
    rig.wait_for("the child unreachable with its server", down, |i| {
        matches!(i.look_at(&name), Some(Seen::Unreachable(_)))
    });
    rig.oc.start_again();
    rig.wait_for("the child back, idle, under its name", down, |i| {
        is_idle(i, &name)
    });
    let gone = |i: &Input| matches!(i.look_at(&name), Some(Seen::Gone(_)));
    assert!(
        !rig.seen[down..].iter().any(gone),
        "reported gone: {:?}",
        &rig.seen[down..]
    );
    // After another restart, the name alone leads to it: it works like
    // any session, and is reaped mid-turn.
    rig.restart_backend();
    let at = rig.outcome(&name, 1, "[reveille] child step, delay=3");
    assert!(is_delivered(&rig.seen[at], 1), "{:?}", rig.seen[at]);
    let turn = wait_until("the child's turn", T, || {
        rig.turns("child step").first().cloned()
    });
    let said = rig.oc.transcript(&id);
    assert!(
        said.iter().any(|m| m.text.contains("child step")),
        "in the child's own transcript: {said:?}"
    );
    rig.wait_for(
        "TurnStarted under the child's name",
        at,
        |i| matches!(i, Input::TurnStarted { session, seq: 1 } if *session == name),
    );
    let from = rig.seen.len();
    rig.backend.as_mut().unwrap().reap(&name);
    rig.wait_for("the child gone", from, |i| {
        matches!(i.look_at(&name), Some(Seen::Gone(_)))
    });
    let (status, _) = rig.oc.call("GET", &format!("/session/{id}"), None).unwrap();
    assert_eq!(status, 404);
    assert_eq!(rig.turns("child step").len(), 1, "{turn:?}");
    // A child its parent no longer has is undeliverable, and gone.
    let at = rig.outcome(&name, 2, "[reveille] child step two");
    match refusal(&rig.seen[at], 2) {
        Some(why) => {
            assert!(why.reason.starts_with("no child session titled"), "{why:?}")
        }
        None => panic!("{:?}", rig.seen[at]),
    }
}

#[test]
fn a_tui_killed_mid_turn_and_started_again_keeps_its_session_and_is_woken_once() {
    let Some((mut rig, session)) = tui_with_session() else {
        return;
    };
    let q = format!("opencode:{session}");
    let at = rig.outcome(&q, 1, "[reveille] a long step, delay=3");
    assert!(is_delivered(&rig.seen[at], 1), "{:?}", rig.seen[at]);
    wait_until("the long step's turn", T, || {
        rig.turns("a long step").first().cloned()
    });
    rig.oc.kill9();
    rig.wait_for("the session unreachable with its program", at, |i| {
        matches!(i.look_at(&q), Some(Seen::Unreachable(_)))
    });
    let at = rig.outcome(&q, 2, "[reveille] the next step");
    assert!(refusal(&rig.seen[at], 2).is_some(), "{:?}", rig.seen[at]);
    // The person starts it again on the session: stored, its turn unfinished.
    let down = rig.seen.len();
    rig.oc.resume(&session);
    rig.wait_for("the session back, idle", down, |i| is_idle(i, &q));
    let said = rig.oc.transcript(&session);
    assert!(
        said.iter()
            .any(|m| m.role == "user" && m.text.contains("a long step")),
        "{said:?}"
    );
    let at = rig.outcome(&q, 2, "[reveille] the next step");
    assert!(is_delivered(&rig.seen[at], 2), "{:?}", rig.seen[at]);
    wait_until("the next step's turn", T, || {
        rig.turns("the next step").first().cloned()
    });
    rig.oc.wait_idle(&session, T);
    assert_eq!(rig.turns("the next step").len(), 1);
    assert_eq!(
        rig.turns("a long step").len(),
        1,
        "the killed turn is not run again"
    );
}

#[test]
fn a_prompt_sent_before_a_reveille_restart_is_recognised_also_when_the_server_was_down_meanwhile() {
    let Some(mut rig) = Rig::new(Mode::Serve) else {
        return;
    };
    let session = rig.oc.create_session();
    let q = format!("opencode:{session}");
    let at = rig.outcome(&q, 5, "[reveille] in flight at the crash: five");
    assert!(is_delivered(&rig.seen[at], 5));
    rig.oc.wait_idle(&session, T);
    // reveille restarts while opencode is down: the repeat is refused …
    rig.oc.stop();
    rig.restart_backend();
    let at = rig.outcome(&q, 5, "[reveille] in flight at the crash: five");
    assert!(refusal(&rig.seen[at], 5).is_some(), "{:?}", rig.seen[at]);
    // … and, once it is back, recognised in the transcript, not sent again.
    rig.oc.start_again();
    rig.wait_for("the session back, idle", at, |i| is_idle(i, &q));
    let at = rig.outcome(&q, 5, "[reveille] in flight at the crash: five");
    assert!(is_delivered(&rig.seen[at], 5), "{:?}", rig.seen[at]);
    assert_eq!(
        rig.turns("crash: five").len(),
        1,
        "{:?}",
        rig.model.requests()
    );
    let said = rig.oc.transcript(&session);
    assert_eq!(
        said.iter()
            .filter(|m| m.role == "user" && m.text.contains("crash: five"))
            .count(),
        1
    );
}
