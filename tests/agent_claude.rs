//! The Claude Code backend against the real `claude` TUI, offline against
//! the fake model, driven directly (no daemon): a backend built with a
//! channel, `deliver` called, its inputs read. Every test asserts what the
//! agent experienced — the requests the model saw, the session's own
//! transcript, the plan file its shell tool edited — beside what the
//! backend reported.
//!
//! The tests run one at a time (each starts a Claude Code of its own, and
//! the latency figures mean nothing on a machine busy starting others).

use std::time::{Duration, Instant};

use reveille::config::ClaudeSettings;
use reveille::core::effect::Delivery;
use reveille::core::input::{Input, Reached, Seen};
use reveille::core::session::{AgentState, Wait};
use reveille::shell::agents::claude::ClaudeBackend;
use reveille::shell::backend::Backend;
use reveille::shell::backend::Reports;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::util::agents::claude::{Claude, Registered};
use crate::util::fakemodel::messages::Messages;
use crate::util::fakemodel::{FakeModel, Logged};
use crate::util::{try_wait_until, wait_until};

const T: Duration = Duration::from_secs(20);
const PROJECT: &str = "claudetest";

/// The fake model, a running Claude Code, and the backend under test.
struct Rig {
    model: FakeModel,
    claude: Claude,
    reg: Registered,
    backend: Option<ClaudeBackend>,
    inputs: UnboundedReceiver<Input>,
    /// Every input reported so far, in order.
    seen: Vec<Input>,
    _one: crate::util::agents::AgentTurn,
}

impl Rig {
    /// `None`, with the `skipped:` line printed, where Claude Code or tmux
    /// is missing.
    fn start() -> Option<Rig> {
        let one = crate::util::agents::claude::one_at_a_time();
        let model = FakeModel::start(vec![Box::new(Messages)], Duration::from_millis(20));
        let mut claude = match Claude::new(&model) {
            Ok(c) => c,
            Err(why) => {
                eprintln!("skipped: {why}");
                return None;
            }
        };
        let reg = claude.start();
        let (tx, inputs) = Reports::channel();
        let settings = ClaudeSettings {
            config_dir: claude.config_dir.clone(),
        };
        let backend = ClaudeBackend::new(&settings, PROJECT, tx);
        let mut rig = Rig {
            model,
            claude,
            reg,
            backend: Some(backend),
            inputs,
            seen: Vec::new(),
            _one: one,
        };
        rig.wait_state(Some(AgentState::Idle));
        Some(rig)
    }

    fn session(&self) -> String {
        format!("claude:{}", self.reg.session_id)
    }

    /// Deliver prompt `seq`; when it was handed over.
    fn deliver(&mut self, seq: u64, text: &str) -> Instant {
        let d = Delivery {
            session: self.session(),
            seq,
            text: text.to_string(),
            plan: String::new(),
            step: String::new(),
            parent: None,
            again: false,
        };
        let at = Instant::now();
        let now = self.backend.as_mut().unwrap().deliver(&d);
        assert_eq!(now, None, "the outcome comes through the reports");
        at
    }

    /// A backend started afresh, as after a reveille restart.
    fn restart_backend(&mut self) {
        drop(self.backend.take());
        let (tx, inputs) = Reports::channel();
        let settings = ClaudeSettings {
            config_dir: self.claude.config_dir.clone(),
        };
        self.backend = Some(ClaudeBackend::new(&settings, PROJECT, tx));
        self.inputs = inputs;
    }

    /// Take what was reported.
    fn collect(&mut self) {
        while let Ok(i) = self.inputs.try_recv() {
            self.seen.push(i);
        }
    }

    /// Wait for an input `pick` accepts (among all reported so far).
    fn wait_input<T>(&mut self, what: &str, pick: impl Fn(&Input) -> Option<T>) -> T {
        let found = try_wait_until(T, || {
            self.collect();
            self.seen.iter().find_map(&pick)
        });
        found.unwrap_or_else(|| panic!("timed out waiting for {what}; reported: {:#?}", self.seen))
    }

    fn wait_delivered(&mut self, seq: u64) -> Reached {
        let session = self.session();
        self.wait_input(&format!("Delivered {seq}"), |i| match i {
            Input::Delivered {
                session: s,
                seq: q,
                reached,
            } if *s == session && *q == seq => Some(*reached),
            _ => None,
        })
    }

    fn wait_turn_started(&mut self, seq: u64) {
        let session = self.session();
        self.wait_input(&format!("TurnStarted {seq}"), |i| match i {
            Input::TurnStarted { session: s, seq: q } if *s == session && *q == seq => Some(()),
            _ => None,
        })
    }

    fn wait_undeliverable(&mut self, seq: u64) -> String {
        let session = self.session();
        self.wait_input(&format!("Undeliverable {seq}"), |i| match i {
            Input::Undeliverable {
                session: s,
                seq: q,
                why,
            } if *s == session && *q == seq => Some(why.reason.clone()),
            _ => None,
        })
    }

    /// Wait for the latest state reported for the session to be `state`.
    /// Wait until the last state reported is `state` (`None`: its
    /// program is not running — unreachable, not gone).
    fn wait_state(&mut self, state: Option<AgentState>) {
        let session = self.session();
        wait_until(&format!("{session} reported {state:?}"), T, || {
            self.collect();
            let last = self
                .seen
                .iter()
                .rev()
                .find_map(|i| i.look_at(&session).map(|seen| seen.state().cloned()));
            (last == Some(state.clone())).then_some(())
        });
    }

    /// Every answer of the backend about `seq` so far.
    fn answers(&mut self, seq: u64) -> Vec<Input> {
        self.collect();
        self.seen
            .iter()
            .filter(|i| {
                matches!(i, Input::Delivered { seq: q, .. } | Input::Undeliverable { seq: q, .. } if *q == seq)
            })
            .cloned()
            .collect()
    }

    /// The model's first request of a turn on `marker`, once it came.
    fn wait_model(&self, marker: &str) -> Logged {
        wait_until(&format!("the model to be asked about {marker}"), T, || {
            self.model.turns_on(marker).into_iter().next()
        })
    }

    fn idle(&self) {
        self.claude.wait_idle(&self.reg.session_id, T);
    }
}

/// The agent's own fastest path, measured the same way: a `later`
/// message written straight to the session's socket → the model's request.
fn own_path(rig: &mut Rig, n: u64) -> Duration {
    let marker = format!("wake-{n}-direct");
    let sent = Instant::now();
    rig.claude.send_later(&rig.reg, &marker);
    let took = rig.wait_model(&marker).at - sent;
    rig.idle();
    took
}

fn p50_max(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() - 1])
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

#[test]
fn an_idle_claude_starts_a_turn_on_each_delivered_prompt_at_once() {
    let Some(mut rig) = Rig::start() else { return };
    let (mut ours, mut own) = (Vec::new(), Vec::new());
    // A first turn warms Claude Code up (its first request is slower), so
    // neither path's figures carry it.
    rig.claude.type_prompt("warm-up");
    rig.wait_model("warm-up");
    rig.idle();
    for n in 1..=10u64 {
        // Each path goes first in turn, so neither always meets a session
        // that has just finished a turn.
        if n % 2 == 0 {
            own.push(own_path(&mut rig, n));
        }
        let marker = format!("wake-{n}-via-reveille");
        let sent = rig.deliver(n, &format!("{marker}: reveille asks you to do step s{n}"));
        let asked = rig.wait_model(&marker);
        ours.push(asked.at - sent);
        assert_eq!(rig.wait_delivered(n), Reached::Inbox);
        rig.wait_turn_started(n);
        rig.idle();
        if n % 2 == 1 {
            own.push(own_path(&mut rig, n));
        }
    }
    println!("claude idle wake samples, reveille: {ours:?}; direct: {own:?}");
    let ((p50, max), (own_p50, own_max)) = (p50_max(ours), p50_max(own));
    println!(
        "claude idle wake, deliver → model request over 10 prompts: p50 {}, max {}; \
         a `later` message written straight to the socket: p50 {}, max {}",
        ms(p50),
        ms(max),
        ms(own_p50),
        ms(own_max)
    );
    for n in 1..=10u64 {
        let marker = format!("wake-{n}-via-reveille");
        assert_eq!(
            rig.model.turns_on(&marker).len(),
            1,
            "{marker} reached the model once"
        );
        assert_eq!(rig.answers(n).len(), 1, "one answer for prompt {n}");
    }
    // What the agent was told: who speaks, and that it is not its user.
    let taken = rig.claude.prompts_taken(&rig.reg.session_id);
    let first = taken
        .iter()
        .find(|(t, _)| t.contains("wake-1-via-reveille"));
    let (text, id) = first.expect("the transcript has the first prompt");
    assert!(
        text.starts_with("Another Claude session sent a message"),
        "{text}"
    );
    assert_eq!(
        id.as_deref(),
        Some(
            reveille::shell::agents::claude::prompt_id(
                PROJECT,
                1,
                "wake-1-via-reveille: reveille asks you to do step s1"
            )
            .as_str()
        )
    );
    // Busy and idle were both seen from the registry.
    let busy = rig.seen.iter().any(|i| {
        matches!(i, Input::Observed(look) if matches!(&look.seen, Seen::State(AgentState::Busy(s)) if s == "busy"))
    });
    assert!(busy, "{:#?}", rig.seen);
    assert!(max < Duration::from_secs(3), "idle wake took {max:?}");
}

#[test]
fn a_prompt_delivered_during_a_persons_long_turn_runs_as_its_own_turn_after_it() {
    let Some(mut rig) = Rig::start() else { return };
    rig.claude.type_prompt("person's long question delay=3");
    let long = rig.wait_model("person's long question");
    rig.wait_state(Some(AgentState::Busy("busy".into())));
    rig.deliver(1, "queued-step-s2: reveille asks you to do s2");
    assert_eq!(rig.wait_delivered(1), Reached::Inbox);
    let ours = rig.wait_model("queued-step-s2");
    rig.wait_turn_started(1);
    rig.idle();
    let requests = rig.model.requests();
    let long_done = requests
        .iter()
        .filter(|r| r.last_user.contains("person's long question"))
        .filter_map(|r| r.done)
        .max()
        .expect("the long turn's answer was written");
    println!(
        "claude busy: the prompt's own turn asked the model {} after the long turn's answer was written",
        ms(ours.at - long_done)
    );
    assert!(long.n < ours.n);
    assert!(
        ours.at >= long_done,
        "the prompt's turn began before the long turn's answer was written"
    );
    for r in &requests {
        let both = r.last_user.contains("queued-step-s2") && r.last_user.contains("person's long");
        assert!(!both, "merged into the person's turn: {r:?}");
    }
    assert_eq!(rig.model.turns_on("queued-step-s2").len(), 1);
    // In the transcript: the person's answer, then our prompt.
    let t = rig.claude.transcript(&rig.reg.session_id);
    let answer = t.iter().position(|e| {
        e["type"] == "assistant"
            && e["message"]["content"]
                .to_string()
                .contains("person's long")
    });
    let prompt = t.iter().position(|e| {
        e["type"] == "user"
            && e["message"]["content"]
                .to_string()
                .contains("queued-step-s2")
    });
    assert!(answer.unwrap() < prompt.unwrap());
}

#[test]
fn a_prompt_never_reaches_the_model_twice_also_when_delivered_again_after_a_restart() {
    let Some(mut rig) = Rig::start() else { return };
    let text = "once-s1: reveille asks you to do s1";
    rig.deliver(1, text);
    rig.wait_model("once-s1");
    rig.wait_turn_started(1);
    rig.idle();
    // A prompt waiting in the inbox behind a long turn when reveille restarts.
    rig.claude.type_prompt("long turn delay=3");
    rig.wait_model("long turn");
    rig.deliver(2, "once-s2: reveille asks you to do s2");
    assert_eq!(rig.wait_delivered(2), Reached::Inbox);
    rig.restart_backend();
    rig.seen.clear();
    // The same seqs again, as the engine delivers them after a restart.
    rig.deliver(1, text);
    rig.deliver(2, "once-s2: reveille asks you to do s2");
    assert_eq!(rig.wait_delivered(1), Reached::Inbox);
    rig.wait_turn_started(1);
    assert_eq!(rig.wait_delivered(2), Reached::Inbox);
    rig.wait_model("once-s2");
    rig.wait_turn_started(2);
    rig.idle();
    // Another prompt after them, as a barrier: everything before is in.
    rig.deliver(3, "once-s3: reveille asks you to do s3");
    rig.wait_model("once-s3");
    rig.idle();
    assert_eq!(rig.model.turns_on("once-s1").len(), 1);
    let s2 = rig.model.turns_on("once-s2");
    assert_eq!(s2.len(), 1);
    assert_eq!(
        s2[0].last_user.matches("once-s2").count(),
        1,
        "two copies merged: {:?}",
        s2[0]
    );
    let taken = rig.claude.prompts_taken(&rig.reg.session_id);
    assert_eq!(
        taken.iter().filter(|(t, _)| t.contains("once-s2")).count(),
        1
    );
}

#[test]
fn a_prompt_written_just_before_a_restart_is_found_in_the_inbox_and_not_written_again() {
    let Some(mut rig) = Rig::start() else { return };
    rig.claude.type_prompt("long turn delay=3");
    rig.wait_model("long turn");
    let text = "just-before-s1: reveille asks you to do s1";
    rig.deliver(1, text);
    // reveille dies at once: the transcript, written in 100 ms batches,
    // may not show the prompt yet. The engine hands a prompt out again
    // only once its kind's window (`core::confirm`, the transcript's lag)
    // has passed since the last write (tested in the engine's
    // `tests/windows.rs`); here, where no engine runs, by when the
    // transcript shows it waiting in the inbox.
    rig.restart_backend();
    let sid = rig.reg.session_id.clone();
    wait_until("the transcript to show the prompt enqueued", T, || {
        rig.claude
            .transcript(&sid)
            .iter()
            .any(|e| {
                e["type"] == "queue-operation"
                    && e["operation"] == "enqueue"
                    && e["content"]
                        .as_str()
                        .is_some_and(|c| c.contains("just-before-s1"))
            })
            .then_some(())
    });
    rig.deliver(1, text);
    assert_eq!(rig.wait_delivered(1), Reached::Inbox);
    rig.wait_model("just-before-s1");
    rig.wait_turn_started(1);
    rig.idle();
    let dropped: Vec<serde_json::Value> = rig
        .claude
        .transcript(&rig.reg.session_id)
        .into_iter()
        .filter(|e| {
            e["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Dropped a peer message"))
        })
        .collect();
    assert!(dropped.is_empty(), "written a second time: {dropped:#?}");
    assert_eq!(rig.model.turns_on("just-before-s1").len(), 1);
}

#[test]
fn a_stopped_claude_refuses_the_prompt_and_gets_it_once_when_it_is_back() {
    let Some(mut rig) = Rig::start() else { return };
    let sid = rig.reg.session_id.clone();
    let old_socket = rig.reg.socket.clone();
    // A session a person has used (`--resume` finds no session without a
    // transcript), then its program killed.
    rig.claude.type_prompt("first words");
    rig.wait_model("first words");
    rig.idle();
    // Its transcript written (in batches, a moment after the turn): what
    // `--resume` needs to find the session again.
    wait_until("the transcript to hold the person's prompt", T, || {
        let taken = rig.claude.prompts_taken(&sid);
        taken
            .iter()
            .any(|(text, _)| text.contains("first words"))
            .then_some(())
    });
    rig.claude.kill();
    rig.wait_state(None);
    assert!(
        old_socket.exists(),
        "a killed session leaves its socket behind"
    );
    rig.deliver(1, "back-s1: reveille asks you to do s1");
    let why = rig.wait_undeliverable(1);
    assert!(why.contains("not running") && why.contains(&sid), "{why}");
    rig.reg = rig.claude.resume(&sid);
    assert_eq!(rig.reg.session_id, sid, "the same session");
    assert_ne!(rig.reg.socket, old_socket, "a new socket");
    rig.wait_state(Some(AgentState::Idle));
    // The engine retries once the session is back.
    rig.deliver(1, "back-s1: reveille asks you to do s1");
    assert_eq!(rig.wait_delivered(1), Reached::Inbox);
    rig.wait_model("back-s1");
    rig.wait_turn_started(1);
    rig.idle();
    assert_eq!(rig.model.turns_on("back-s1").len(), 1);
}

#[test]
fn the_agent_ticks_a_plan_step_with_its_own_shell_tool() {
    let Some(mut rig) = Rig::start() else { return };
    let plan = rig
        .claude
        .cwd
        .join("20260101T000000_0a1b2c3d--ship__wip.md");
    std::fs::write(&plan, "# Ship\n\n- [x] Build\n- [ ] Test it\n").unwrap();
    let text = format!(
        "reveille: step s2 of {} is ready: Test it.\nWhen it is finished, change `- [ ] Test it` to `- [x] Test it` in {}.",
        plan.display(),
        plan.display()
    );
    rig.deliver(1, &text);
    wait_until("the agent to tick the step", T, || {
        let now = std::fs::read_to_string(&plan).ok()?;
        now.contains("- [x] Test it").then_some(())
    });
    rig.wait_turn_started(1);
    rig.idle();
    let after_tool = rig.model.requests().into_iter().any(|r| r.after_tool);
    assert!(after_tool, "the tool's result went back to the model");
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "# Ship\n\n- [x] Build\n- [x] Test it\n"
    );
}

#[test]
fn a_session_without_cross_session_accept_holds_the_prompt_and_reveille_says_why() {
    let Some(mut rig) = Rig::start() else { return };
    rig.claude
        .write_settings(&serde_json::json!({"skipDangerousModePermissionPrompt": true}));
    // Claude Code reads its settings again when the file changes; a prompt
    // sent before it did is let through: deliver until one is held.
    let mut held = None;
    for seq in 100..110 {
        rig.deliver(seq, &format!("held-{seq}: reveille asks you to do s1"));
        let answer = rig.wait_input("an answer", |i| match i {
            Input::Undeliverable { seq: q, why, .. } if *q == seq => Some(Some(why.reason.clone())),
            Input::Delivered { seq: q, .. } if *q == seq => Some(None),
            _ => None,
        });
        match answer {
            Some(why) => {
                held = Some((seq, why));
                break;
            }
            None => rig.idle(),
        }
    }
    let (seq, why) = held.expect("a prompt held for a person");
    // Asked again (the engine's retry), it is not written a second time.
    rig.deliver(seq, &format!("held-{seq}: reveille asks you to do s1"));
    let again = rig.wait_input("the retry's answer", |i| match i {
        Input::Undeliverable { seq: q, why, .. } if *q == seq => Some(why.reason.clone()),
        _ => None,
    });
    assert!(again.contains("crossSessionInbound"), "{again}");
    // The held message's dialog is a wait for a person: an approval the
    // registry does not name (no tool call is pending).
    rig.wait_state(Some(AgentState::Waiting(Wait::approval(""))));
    assert!(why.contains("crossSessionInbound"), "{why}");
    assert!(
        rig.claude.screen().contains("Held message"),
        "{}",
        rig.claude.screen()
    );
}

#[test]
fn spawn_is_refused_at_once_and_other_kinds_are_not_delivered() {
    let (tx, mut rx) = Reports::channel();
    let dir = tempfile::tempdir().unwrap();
    let settings = ClaudeSettings {
        config_dir: dir.path().to_path_buf(),
    };
    let mut backend = ClaudeBackend::new(&settings, PROJECT, tx);
    let spawn = reveille::core::effect::Spawn {
        child: "claude:child".into(),
        parent: "claude:parent".into(),
    };
    match backend.spawn(&spawn) {
        Some(Input::ChildSpawned {
            child,
            outcome: Err(why),
        }) => {
            assert_eq!(child, "claude:child");
            assert!(why.contains("cannot create Claude Code sessions"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let d = Delivery {
        session: "claude:nobody".into(),
        seq: 1,
        text: "x".into(),
        plan: String::new(),
        step: String::new(),
        parent: None,
        again: false,
    };
    assert_eq!(backend.deliver(&d), None);
    let answer = wait_until("an answer", T, || rx.try_recv().ok());
    match answer {
        Input::Undeliverable { session, why, .. } => {
            assert_eq!(session, "claude:nobody");
            assert!(
                why.reason.contains("no Claude Code has run"),
                "{}",
                why.reason
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_persons_half_typed_input_is_left_alone() {
    let Some(mut rig) = Rig::start() else { return };
    rig.claude.type_unsent("half-typed words of a person");
    wait_until("the words on the screen", T, || {
        rig.claude
            .screen()
            .contains("half-typed words")
            .then_some(())
    });
    rig.deliver(1, "while-typing-s1: reveille asks you to do s1");
    rig.wait_model("while-typing-s1");
    rig.wait_turn_started(1);
    rig.idle();
    let asked = rig
        .model
        .requests()
        .into_iter()
        .any(|r| r.last_user.contains("half-typed"));
    assert!(!asked, "the person's unsent words reached the model");
    let screen = rig.claude.screen();
    let input = screen.lines().rev().find(|l| l.starts_with('❯'));
    assert!(
        input.is_some_and(|l| l.contains("half-typed words of a person")),
        "the prompt box lost the person's words:\n{screen}"
    );
}
