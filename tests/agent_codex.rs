//! Codex sessions woken through the real `codex` TUI and its app-server
//! daemon, offline against the fake model (`util::fakemodel::responses`),
//! by reveille's Codex backend driven directly: a channel for its reports,
//! `deliver` / `spawn` / `reap` called as the daemon will. Every test
//! checks what the agent experienced — the fake model's requests, the
//! thread's own history, the plan file — beside what the backend reported.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use reveille::config::CodexSettings;
use reveille::core::effect::{Delivery, Spawn};
use reveille::core::input::{Evidence, Input, Reached, Seen};
use reveille::core::session::{AgentState, Kind};
use reveille::core::taken::{self, Known, Verdict};
use reveille::shell::agents::codex::CodexBackend;
use reveille::shell::backend::Backend;
use reveille::shell::backend::Reports;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::util::agents::codex::app_server::AppServer;
use crate::util::agents::codex::tap::{Fault, WsTap};
use crate::util::agents::codex::{Codex, CodexHome, ListeningServer};
use crate::util::fakemodel::responses::Responses;
use crate::util::fakemodel::{FakeModel, Logged};
use crate::util::{try_wait_until, wait_until};

const PROJECT: &str = "test";
/// Generous: a TUI turn on a loaded machine.
const TURN: Duration = Duration::from_secs(60);

fn model() -> FakeModel {
    FakeModel::start(vec![Box::new(Responses)], Duration::from_millis(20))
}

/// A home for Codex, or `None` after the `skipped:` line.
fn home(model: &FakeModel) -> Option<CodexHome> {
    match CodexHome::new(model) {
        Ok(h) => Some(h),
        Err(why) => {
            println!("skipped: {why}");
            None
        }
    }
}

/// The backend under test and what it reported.
struct Reveille {
    backend: CodexBackend,
    rx: UnboundedReceiver<Input>,
    seen: Vec<Input>,
    /// The prompts handed out: handed out again, they are `again`, as the
    /// engine's lanes say.
    handed: BTreeSet<u64>,
}

impl Reveille {
    fn new(settings: CodexSettings) -> Reveille {
        let (tx, rx) = Reports::channel();
        Reveille {
            backend: CodexBackend::new(&settings, PROJECT, tx),
            rx,
            seen: Vec::new(),
            handed: BTreeSet::new(),
        }
    }

    /// The backend of the TUI's daemon under `home`.
    fn of(codex: &Codex) -> Reveille {
        Reveille::new(CodexSettings {
            home: codex.home.home.clone(),
            endpoint: None,
            token: None,
            ca_file: None,
        })
    }

    fn deliver(&mut self, session: &str, seq: u64, text: &str) -> Instant {
        let again = !self.handed.insert(seq);
        self.hand_out(session, seq, text, again)
    }

    /// Deliver a prompt an earlier reveille handed out (pending when this
    /// one began: the engine says `again`).
    fn deliver_again(&mut self, session: &str, seq: u64, text: &str) -> Instant {
        self.handed.insert(seq);
        self.hand_out(session, seq, text, true)
    }

    fn hand_out(&mut self, session: &str, seq: u64, text: &str, again: bool) -> Instant {
        let at = Instant::now();
        let now = self.backend.deliver(&delivery(session, seq, text, again));
        assert_eq!(now, None, "a codex delivery is answered by the worker");
        at
    }

    /// Play the engine for prompt `seq`, handed out again: every absence
    /// the backend reports (`Evidence::NotRecorded`) is answered with a
    /// look (`Backend::look`), which never writes, until it is found. The
    /// engine looks only after Codex's hidden window and writes after a
    /// second absence (`core::taken`, tested there); here every look is
    /// made at once, to find the prompt Codex is starting. How many
    /// absences were reported.
    fn look_until_found(&mut self, session: &str, seq: u64, text: &str) -> usize {
        self.as_the_engine(session, seq, text, 0, usize::MAX).1
    }

    /// Play the engine for prompt `seq`, handed out again and answered from
    /// report `from` on: its first absence is looked at again, and a
    /// second one makes it a first delivery, written (the window between
    /// the two is the engine's, tested there). Where it was reported
    /// delivered.
    fn deliver_again_as_the_engine(
        &mut self,
        session: &str,
        seq: u64,
        text: &str,
        from: usize,
    ) -> usize {
        self.handed.insert(seq);
        self.hand_out(session, seq, text, true);
        self.as_the_engine(session, seq, text, from, 2).0
    }

    /// Answer `seq`'s absences as the engine does, by its one rule
    /// (`taken::judge`): a look once the rule's window has passed, and a
    /// write once it says not taken — at the `write_after`th absence at
    /// the earliest: where it was reported delivered, and after how many
    /// absences.
    fn as_the_engine(
        &mut self,
        session: &str,
        seq: u64,
        text: &str,
        from: usize,
        write_after: usize,
    ) -> (usize, usize) {
        let (mut from, mut absences) = (from, 0);
        let mut first_absent: Option<Instant> = None;
        loop {
            let at = self.wait("found or absent", from, |i| {
                delivered(session, seq)(i) || absent(session, seq)(i)
            });
            if delivered(session, seq)(&self.seen[at]) {
                return (at, absences);
            }
            absences += 1;
            from = at + 1;
            let known = Known {
                absent_for: first_absent.map(|t| t.elapsed()),
                busy: false,
            };
            first_absent.get_or_insert_with(Instant::now);
            match taken::judge(Kind::Codex, Evidence::NotRecorded(String::new()), known) {
                Verdict::NotTaken(_) if absences >= write_after => {
                    self.hand_out(session, seq, text, false);
                    continue;
                }
                Verdict::NotTaken(_) => {}
                // The engine's timer, as long as the rule says (Codex's
                // hidden dispatch): not a wait for a condition.
                Verdict::LookAfter(window) => std::thread::sleep(window),
                other => panic!("the rule answered an absence with {other:?}"),
            }
            let now = self.backend.look(&delivery(session, seq, text, true));
            assert_eq!(now, None, "a codex look is answered by the worker");
        }
    }

    fn drain(&mut self) {
        while let Ok(input) = self.rx.try_recv() {
            self.seen.push(input);
        }
    }

    /// Wait for a report matching `want`, at or after position `from` of
    /// everything reported; its position.
    fn wait(&mut self, what: &str, from: usize, want: impl Fn(&Input) -> bool) -> usize {
        let found = try_wait_until(TURN, || {
            self.drain();
            self.seen[from.min(self.seen.len())..]
                .iter()
                .position(&want)
                .map(|i| from + i)
        });
        found.unwrap_or_else(|| panic!("timed out waiting for {what}; reported: {:#?}", self.seen))
    }

    fn count(&mut self, want: impl Fn(&Input) -> bool) -> usize {
        self.drain();
        self.seen.iter().filter(|i| want(i)).count()
    }
}

fn delivery(session: &str, seq: u64, text: &str, again: bool) -> Delivery {
    Delivery {
        session: session.to_string(),
        seq,
        text: text.to_string(),
        plan: "plan.md".into(),
        step: format!("s{seq}"),
        parent: None,
        again,
    }
}

fn absent(session: &str, seq: u64) -> impl Fn(&Input) -> bool + '_ {
    move |i| {
        matches!(i, Input::Evidence { session: s, seq: q, evidence: Evidence::NotRecorded(_) }
            if s == session && *q == seq)
    }
}

fn delivered(session: &str, seq: u64) -> impl Fn(&Input) -> bool + '_ {
    move |i| {
        *i == Input::Delivered {
            session: session.into(),
            seq,
            reached: Reached::Accepted,
        }
    }
}

fn started(session: &str, seq: u64) -> impl Fn(&Input) -> bool + '_ {
    move |i| {
        *i == Input::TurnStarted {
            session: session.into(),
            seq,
        }
    }
}

fn state(session: &str, want: Option<AgentState>) -> impl Fn(&Input) -> bool + '_ {
    move |i| {
        i.look_at(session).is_some_and(|seen| {
            seen.state() == want.as_ref() && !matches!(seen, Seen::Unreachable(_))
        })
    }
}

fn busy(session: &str) -> impl Fn(&Input) -> bool + '_ {
    move |i| matches!(i.look_at(session), Some(Seen::State(AgentState::Busy(_))))
}

/// The model's request for the turn on `text` (its first request),
/// once it is fully answered.
fn answered(model: &FakeModel, text: &str) -> Logged {
    wait_until(&format!("the model's answer to {text:?}"), TURN, || {
        model
            .turns_on(text)
            .into_iter()
            .next()
            .filter(|r| r.done.is_some())
    })
}

#[test]
fn an_idle_thread_starts_a_turn_on_a_delivered_prompt_at_once() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let codex = Codex::start(home);
    let session = format!("codex:{}", codex.thread);
    let mut reveille = Reveille::of(&codex);
    // A person has begun typing and not pressed Enter.
    let half = "half typed by a person";
    codex.type_keys(half);

    let text = "reveille prompt one: build the lexer";
    let sent = reveille.deliver(&session, 1, text);
    let at = reveille.wait("delivered", 0, delivered(&session, 1));
    reveille.wait("the turn started on it", at, started(&session, 1));
    let request = answered(&model, text);
    println!("idle wake: deliver → model request {:?}", request.at - sent);
    reveille.wait("busy", 0, busy(&session));
    reveille.wait("idle again", 0, state(&session, Some(AgentState::Idle)));

    assert_eq!(model.turns_on(text).len(), 1, "{:#?}", model.requests());
    let held = codex.user_messages();
    assert!(
        held.contains(&(text.to_string(), format!("reveille:{PROJECT}:1"))),
        "the thread's history: {held:?}"
    );
    wait_until("the TUI to show the prompt", TURN, || {
        codex.screen().contains(text).then_some(())
    });
    assert!(
        model.requests().iter().all(|r| !r.last_user.contains(half)),
        "the half-typed input reached the model"
    );
    let composer = codex.screen();
    assert!(
        composer
            .lines()
            .any(|l| l.starts_with('›') && l.contains(half)),
        "the person's input is gone from the composer:\n{composer}"
    );
}

#[test]
fn a_prompt_delivered_during_a_persons_long_turn_runs_as_its_own_turn_after_it() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let codex = Codex::start(home);
    let session = format!("codex:{}", codex.thread);
    let mut reveille = Reveille::of(&codex);
    reveille.deliver(&session, 1, "reveille warm-up prompt");
    reveille.wait("the warm-up delivered", 0, delivered(&session, 1));
    answered(&model, "reveille warm-up prompt");
    codex.wait_status("idle", TURN);

    let long = "a person's long turn delay=3";
    codex.type_prompt(long);
    let long_request = wait_until("the long turn's request", TURN, || {
        model.turns_on(long).into_iter().next()
    });
    let from = reveille.seen.len();
    let text = "reveille prompt two: while the person's turn runs";
    let next = "reveille prompt three: queued right behind it";
    reveille.deliver(&session, 2, text);
    reveille.deliver(&session, 3, next);
    reveille.wait("delivered while busy", from, delivered(&session, 2));
    reveille.wait(
        "the next delivered while busy",
        from,
        delivered(&session, 3),
    );
    assert!(
        model.requests()[long_request.n as usize - 1].done.is_none(),
        "the long turn was still answering when the prompts were delivered"
    );

    let ours = answered(&model, text);
    let theirs = answered(&model, next);
    let long_done = model.requests()[long_request.n as usize - 1]
        .done
        .expect("the long turn was answered");
    assert!(
        ours.at >= long_done,
        "the prompt's request came before the long turn's answer was written"
    );
    println!(
        "busy: the queued prompt's request {:?} after the long turn's answer was written, the next one {:?} after that",
        ours.at - long_done,
        theirs.at - ours.done.unwrap()
    );
    assert!(
        theirs.at >= ours.done.unwrap(),
        "the second prompt's turn began before the first one's answer"
    );
    for r in [&ours, &theirs] {
        assert!(
            !r.after_tool && (r.last_user == text || r.last_user == next),
            "{r:#?}"
        );
    }
    for r in model.requests() {
        if r.last_user.contains(long) || r.last_user == text {
            assert!(
                !r.last_user.contains(next) && (r.last_user == text || !r.last_user.contains(text)),
                "merged into another turn: {r:#?}"
            );
        }
    }
    assert_eq!(model.turns_on(text).len(), 1);
    assert_eq!(model.turns_on(next).len(), 1);
    reveille.wait("the turn started on it", from, started(&session, 2));
    reveille.wait("the turn started on the next", from, started(&session, 3));
    let held = codex.user_messages();
    let order: Vec<&str> = held.iter().map(|(t, _)| t.as_str()).collect();
    let at = |want: &str| order.iter().position(|t| *t == want).unwrap();
    assert!(
        at(long) < at(text) && at(text) < at(next),
        "the thread's own order: {order:?}"
    );
}

#[test]
fn a_prompt_delivered_again_after_a_reveille_restart_reaches_the_model_once() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let codex = Codex::start(home);
    let session = format!("codex:{}", codex.thread);
    let text = "reveille prompt five: write the tests";
    {
        let mut first = Reveille::of(&codex);
        first.deliver(&session, 5, text);
        first.wait("delivered", 0, delivered(&session, 5));
        first.wait("its turn started", 0, started(&session, 5));
        answered(&model, text);
        codex.wait_status("idle", TURN);
        // The first reveille is gone (dropped here), as in a crash before
        // its delivered mark was written.
    }
    let mut again = Reveille::of(&codex);
    again.deliver_again(&session, 5, text);
    again.wait(
        "delivered again, without sending",
        0,
        delivered(&session, 5),
    );
    again.wait("known as started", 0, started(&session, 5));
    let next = "reveille prompt six: the next step";
    again.deliver(&session, 6, next);
    again.wait("the next delivered", 0, delivered(&session, 6));
    answered(&model, next);
    assert_eq!(
        model.turns_on(text).len(),
        1,
        "the repeated prompt reached the model again: {:#?}",
        model.requests()
    );
    assert_eq!(model.turns_on(next).len(), 1);
    let ids: Vec<String> = codex
        .user_messages()
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    assert_eq!(
        ids.iter().filter(|id| *id == "reveille:test:5").count(),
        1,
        "{ids:?}"
    );
}

#[test]
fn a_prompt_for_a_stopped_codex_is_refused_and_delivered_once_when_it_is_back() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let mut codex = Codex::start(home);
    let session = format!("codex:{}", codex.thread);
    let mut reveille = Reveille::of(&codex);
    reveille.deliver(&session, 1, "reveille prompt before the stop");
    reveille.wait("delivered", 0, delivered(&session, 1));
    answered(&model, "reveille prompt before the stop");
    codex.wait_status("idle", TURN);

    codex.stop();
    let down = reveille.wait("the session unreachable with its program", 0, |i| {
        matches!(i.look_at(&session), Some(Seen::Unreachable(_)))
    });
    let text = "reveille prompt while codex is down";
    reveille.deliver(&session, 2, text);
    let refused = reveille.wait("refused", down, |i| {
        matches!(i, Input::Undeliverable { seq: 2, .. })
    });
    let Input::Undeliverable { why, .. } = &reveille.seen[refused] else {
        unreachable!()
    };
    println!("refused: {}", why.reason);
    assert!(
        why.reason.contains("codex app-server not reachable at")
            || why
                .reason
                .contains("the connection to the codex app-server at"),
        "{}",
        why.reason
    );

    codex.start_again();
    let back = reveille.wait(
        "the session back",
        refused,
        state(&session, Some(AgentState::Idle)),
    );
    reveille.deliver_again_as_the_engine(&session, 2, text, back);
    reveille.wait("its turn started", back, started(&session, 2));
    answered(&model, text);
    // The engine's retry of the same prompt changes nothing: it is known
    // as delivered and started, and the next prompt runs after it.
    reveille.deliver(&session, 2, text);
    wait_until("the retry answered from the thread's history", TURN, || {
        (reveille.count(started(&session, 2)) == 2).then_some(())
    });
    let after = "reveille prompt after the retry";
    reveille.deliver(&session, 3, after);
    answered(&model, after);
    assert_eq!(model.turns_on(text).len(), 1, "{:#?}", model.requests());
}

#[test]
fn the_agent_ticks_the_plan_step_it_was_woken_for_with_its_own_shell_tool() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let plan = home.work().join("20261201T000000_0a1b2c3d--ship__todo.md");
    std::fs::write(
        &plan,
        "# Ship\n\n- [x] Lex\n- [ ] Parse it\n- [ ] Ship it\n",
    )
    .unwrap();
    let codex = Codex::start(home);
    let session = format!("codex:{}", codex.thread);
    let mut reveille = Reveille::of(&codex);
    let text = format!(
        "Step s2 of plan Ship is ready: Parse it.\nWhen it is finished, change `- [ ] Parse it` to `- [x] Parse it` in {}.",
        plan.display()
    );
    reveille.deliver(&session, 2, &text);
    reveille.wait("delivered", 0, delivered(&session, 2));
    wait_until("the step ticked by the agent", TURN, || {
        std::fs::read_to_string(&plan)
            .ok()?
            .contains("- [x] Parse it")
            .then_some(())
    });
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "# Ship\n\n- [x] Lex\n- [x] Parse it\n- [ ] Ship it\n"
    );
    let after_tool = wait_until("the answer after the tool ran", TURN, || {
        model
            .requests()
            .into_iter()
            .find(|r| r.after_tool && r.last_user == text && r.done.is_some())
    });
    assert!(!after_tool.auxiliary);
    wait_until("the TUI to show the shell call", TURN, || {
        codex.screen().contains("ticked: Parse it").then_some(())
    });
}

#[test]
fn idle_wake_latency_beside_codexs_own_queue() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let codex = Codex::start(home);
    let session = format!("codex:{}", codex.thread);
    let mut reveille = Reveille::of(&codex);
    let mut direct = codex.client().expect("the daemon serves");
    reveille.deliver(&session, 100, "reveille warm-up");
    answered(&model, "reveille warm-up");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for i in 1..=10u64 {
        codex.wait_status("idle", TURN);
        let text = format!("reveille latency prompt {i} of 10");
        let sent = reveille.deliver(&session, i, &text);
        ours.push(answered(&model, &text).at - sent);
        codex.wait_status("idle", TURN);
        let text = format!("direct queue prompt {i} of 10");
        let sent = Instant::now();
        direct
            .queue(&codex.thread, &text, &format!("direct-{i}"))
            .expect("thread/queue/add");
        theirs.push(answered(&model, &text).at - sent);
    }
    let (p50, max) = summary(&mut ours);
    let (d50, dmax) = summary(&mut theirs);
    // The figures, side by side, for doc/PERFORMANCE.md; what is checked
    // is that each prompt ran as one turn of its own.
    println!("idle wake, deliver → model request, 10 prompts: reveille p50 {p50:?} max {max:?}; thread/queue/add sent by the test p50 {d50:?} max {dmax:?}");
    for i in 1..=10u64 {
        let text = format!("reveille latency prompt {i} of 10");
        assert_eq!(model.turns_on(&text).len(), 1, "{:#?}", model.requests());
    }
}

fn summary(v: &mut [Duration]) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() - 1])
}

#[test]
fn an_explicit_app_server_is_reached_and_a_thread_it_owns_is_refused_elsewhere() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let server = ListeningServer::ws(&home);
    let thread = server.new_thread(&home.work());
    let session = format!("codex:{thread}");
    let mut reveille = Reveille::new(CodexSettings {
        home: home.home.clone(),
        endpoint: Some(server.endpoint.clone()),
        token: None,
        ca_file: None,
    });
    let text = "reveille prompt through ws";
    reveille.deliver(&session, 1, text);
    reveille.wait("delivered", 0, delivered(&session, 1));
    answered(&model, text);

    // The TUI's daemon on the same CODEX_HOME does not own that thread.
    let started = home
        .command(&["app-server", "daemon", "start"], &home.work())
        .output()
        .expect("codex app-server daemon start");
    assert!(started.status.success(), "{started:?}");
    let mut elsewhere = Reveille::new(CodexSettings {
        home: home.home.clone(),
        endpoint: None,
        token: None,
        ca_file: None,
    });
    let other = "reveille prompt through the wrong server";
    elsewhere.deliver(&session, 2, other);
    let at = elsewhere.wait("refused", 0, |i| matches!(i, Input::Undeliverable { .. }));
    let Input::Undeliverable { why, .. } = &elsewhere.seen[at] else {
        unreachable!()
    };
    println!("refused: {}", why.reason);
    assert!(
        why.reason.contains("owned by another codex process"),
        "{}",
        why.reason
    );
    // A sure "never": a later prompt through the right server runs first.
    let later = "reveille prompt after the refusal";
    reveille.deliver(&session, 3, later);
    answered(&model, later);
    assert!(model.turns_on(other).is_empty(), "{:#?}", model.requests());
}

#[test]
fn an_app_server_listening_on_a_unix_socket_of_its_own_is_reached() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let server = ListeningServer::unix(&home);
    let thread = server.new_thread(&home.work());
    let session = format!("codex:{thread}");
    let mut reveille = Reveille::new(CodexSettings {
        home: home.home.join("not-used"),
        endpoint: Some(server.endpoint.clone()),
        token: None,
        ca_file: None,
    });
    let text = "reveille prompt through a unix socket";
    reveille.deliver(&session, 1, text);
    reveille.wait("delivered", 0, delivered(&session, 1));
    answered(&model, text);
    reveille.wait("its turn started", 0, started(&session, 1));
}

#[test]
fn a_child_thread_is_created_once_by_its_name_woken_and_archived_when_reaped() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let codex = Codex::start(home);
    let parent = format!("codex:{}", codex.thread);
    let child = "codex:reveille-test-plan-s3";
    let spawn = Spawn {
        child: child.into(),
        parent: parent.clone(),
    };
    let spawned =
        |i: &Input| matches!(i, Input::ChildSpawned { child: c, outcome: Ok(_) } if c == child);
    let mut reveille = Reveille::of(&codex);
    assert_eq!(reveille.backend.spawn(&spawn), None);
    reveille.wait("the child spawned", 0, spawned);
    {
        // A create repeated after a crash finds the child by its name.
        let mut again = Reveille::of(&codex);
        again.backend.spawn(&spawn);
        again.wait("the child found again", 0, spawned);
    }
    let mut c = codex.client().unwrap();
    let named = |c: &mut AppServer| -> Vec<serde_json::Value> {
        let loaded = c.call("thread/loaded/list", serde_json::json!({})).unwrap();
        loaded["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|id| {
                let t = c
                    .call("thread/read", serde_json::json!({ "threadId": id }))
                    .ok()?;
                (t["thread"]["name"] == "reveille-test-plan-s3").then(|| t["thread"].clone())
            })
            .collect()
    };
    let threads = named(&mut c);
    assert_eq!(threads.len(), 1, "{threads:#?}");
    assert_eq!(
        threads[0]["cwd"].as_str(),
        Some(codex.cwd.display().to_string().as_str())
    );
    let text = "reveille prompt for the child";
    reveille.deliver(child, 1, text);
    reveille.wait("delivered to the child", 0, delivered(child, 1));
    answered(&model, text);
    reveille.wait("the child idle", 0, state(child, Some(AgentState::Idle)));

    reveille.backend.reap(child);
    let id = threads[0]["id"].as_str().unwrap().to_string();
    wait_until("the child archived", TURN, || {
        let archived = c
            .call("thread/list", serde_json::json!({ "archived": true }))
            .ok()?;
        archived["data"]
            .as_array()?
            .iter()
            .any(|t| t["id"] == id.as_str())
            .then_some(())
    });
    assert!(named(&mut c).is_empty(), "an archived thread is unloaded");
}

/// Codex hides a queued prompt from its queue and its history while it
/// starts it (`dispatching`, ~30 ms at the end of the turn before). A
/// reveille restarted in that moment — the one before it queued the prompt
/// and died before its delivered mark — finds it in neither; it must not
/// send it again (a second turn on the same step): the backend reports the
/// absence and writes nothing, and a look finds it once Codex shows it.
#[test]
fn a_prompt_codex_is_starting_unseen_when_reveille_restarts_runs_once() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let codex = Codex::start(home);
    let session = format!("codex:{}", codex.thread);
    let long = "reveille prompt one: a long turn delay=2";
    let text = "reveille prompt two: queued behind it";
    {
        let mut first = Reveille::of(&codex);
        first.deliver(&session, 1, long);
        wait_until("the long turn's request", TURN, || {
            model.turns_on(long).into_iter().next()
        });
        first.deliver(&session, 2, text);
        first.wait("queued behind it", 0, delivered(&session, 2));
    }
    // The next reveille is up (connected) before that moment, and is
    // asked for the prompt in it.
    let mut again = Reveille::of(&codex);
    let mut probe = codex.client().expect("the daemon serves");
    let id = format!("reveille:{PROJECT}:2");
    let left = left_the_queue(&mut probe, &codex.thread, &id);
    let sent = again.deliver_again(&session, 2, text);
    let absences = again.look_until_found(&session, 2, text);
    println!(
        "handed out again {:?} after it left the queue; found after {absences} absence(s)",
        sent - left
    );
    again.wait("its turn known as started", 0, started(&session, 2));
    answered(&model, text);
    codex.wait_status("idle", TURN);
    assert_eq!(model.turns_on(text).len(), 1, "{:#?}", model.requests());
    let ids: Vec<String> = codex.user_messages().into_iter().map(|(_, i)| i).collect();
    assert_eq!(ids.iter().filter(|i| **i == id).count(), 1, "{ids:?}");
}

/// Wait, looking as fast as the server answers, for the moment `id` left
/// the thread's queue: Codex is starting it, and for ~30 ms it is in
/// neither the queue nor the history. When.
fn left_the_queue(c: &mut AppServer, thread: &str, id: &str) -> Instant {
    let deadline = Instant::now() + TURN;
    loop {
        let queue = c
            .call(
                "thread/queue/list",
                serde_json::json!({ "threadId": thread }),
            )
            .expect("thread/queue/list");
        if !queue.to_string().contains(id) {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "{id} never left the queue");
    }
}

/// The app-server takes a delivery (`thread/queue/add`) and reveille is
/// answered with an error all the same — a fault injected on the real
/// wire by a tap, since a real server cannot be made to do it. reveille
/// reports it refused, and the engine hands it out again (`again`): the
/// backend finds it in the thread rather than sending it a second time.
#[test]
fn a_delivery_answered_with_an_error_though_taken_runs_once() {
    let model = model();
    let Some(home) = home(&model) else { return };
    let codex = Codex::start(home);
    let tap = WsTap::start(&codex.cwd.with_file_name("tap.sock"), &codex.home.socket());
    let session = format!("codex:{}", codex.thread);
    let mut reveille = Reveille::new(CodexSettings {
        home: codex.home.home.clone(),
        endpoint: Some(format!("unix://{}", tap.path.display())),
        token: None,
        ca_file: None,
    });
    let injected = "injected: the answer was lost";
    tap.arm("thread/queue/add", Fault::Error(injected.into()), false);
    let text = "reveille prompt answered with an error";
    reveille.deliver(&session, 1, text);
    let refused = reveille.wait(
        "refused",
        0,
        |i| matches!(i, Input::Undeliverable { seq: 1, why, .. } if why.reason.contains(injected)),
    );
    assert_eq!(tap.injected().len(), 1);
    reveille.deliver_again_as_the_engine(&session, 1, text, refused);
    answered(&model, text);
    codex.wait_status("idle", TURN);
    assert_eq!(model.turns_on(text).len(), 1, "{:#?}", model.requests());
    let id = format!("reveille:{PROJECT}:1");
    let ids: Vec<String> = codex.user_messages().into_iter().map(|(_, i)| i).collect();
    assert_eq!(ids.iter().filter(|i| **i == id).count(), 1, "{ids:?}");
    let adds = tap
        .called()
        .iter()
        .filter(|m| *m == "thread/queue/add")
        .count();
    assert_eq!(adds, 1, "sent once: {:?}", tap.called());
}
