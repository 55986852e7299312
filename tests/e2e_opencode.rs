//! Issue 22 for an opencode user, proven through the real programs: the
//! real `reveille run` (its default session `opencode:<id>`, `[opencode]
//! url` the isolated instance) and the real opencode, started as a person
//! starts it (`opencode --port P`, the TUI, or `opencode serve --port P`),
//! offline against the fake model, whose shell-tool calls tick the steps
//! in the plan file. Every assertion is about what the agent experienced:
//! the model's requests (each step's prompt reached it once, when), the
//! transcript (in which order), the plan file (ticked by the agent).

pub(crate) mod plan_watch;
pub(crate) mod rig;
mod waiting;

use std::time::{Duration, Instant};

use crate::util::agents::opencode::Mode;
use crate::util::daemon::Daemon;
use crate::util::plans::Step;
use crate::util::{try_wait_until, wait_until};
use plan_watch::PlanWatch;
use rig::{spread, Rig, T};

#[test]
fn a_three_step_plan_runs_to_its_end_with_the_agent_ticking_each_step() {
    let Some(rig) = Rig::new(Mode::Tui) else {
        return;
    };
    let d = rig.daemon();
    let watch = PlanWatch::start(&rig.project.plan_dir);
    let titles = ["Write the lexer", "Write the parser", "Write the tests"];
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let (plan, written) = rig.plan("a1b2c3d4", "Ship the parser", &steps);
    rig.wait_ticked(&plan, &titles);
    rig.each_once(&titles);
    // Ready: the plan written, then each step the moment the agent's own
    // edit ticked the one before it.
    let (mut ours, mut after_turn) = (Vec::new(), Vec::new());
    for (i, title) in titles.iter().enumerate() {
        let ready = match i {
            0 => written,
            _ => watch
                .ticked_at(&plan, titles[i - 1])
                .expect("the agent's tick seen"),
        };
        let asked = rig.turns_on_step(title)[0].at;
        assert!(asked > ready, "{title}: asked before it was ready");
        let latency = asked - ready;
        // The agent was busy with the step before until its answer's
        // last byte: from there on the wait is reveille's and opencode's.
        if i > 0 {
            after_turn.push(asked - rig.turn_end(titles[i - 1]));
        }
        // A figure, not a check: opencode's own first request of a fresh
        // server took 0.7 s on two loaded cores. That each step woke the
        // agent through its own prompt is checked below (the journal).
        println!("{title}: ready → model request {latency:?}");
        ours.push(latency);
    }
    let direct = direct_path(&rig, 5);
    println!(
        "opencode TUI, ready → model request, through reveille: {}",
        spread(&ours)
    );
    println!(
        "opencode TUI, the previous turn's last byte → model request, through reveille: {}",
        spread(&after_turn)
    );
    println!(
        "opencode TUI, prompt_async sent directly → model request: {}",
        spread(&direct)
    );
    // The journal and status say what happened.
    for step in ["s1", "s2", "s3"] {
        rig.wait_woken(&d, step);
    }
    rig.wait_state("idle");
    let s = rig.session_status();
    assert_eq!(s["kind"], "opencode", "{s}");
    assert_eq!(s["last_delivery"]["step"], "s3", "{s}");
    assert_eq!(s["last_delivery"]["outcome"], "turn_started", "{s}");
}

/// The agent's own fastest path, in the same run: `prompt_async` sent by
/// the test → the model's request, `n` times, each on an idle session.
fn direct_path(rig: &Rig, n: usize) -> Vec<Duration> {
    (0..n)
        .map(|i| {
            let needle = format!("direct number {i}.");
            let t0 = Instant::now();
            rig.oc.prompt_async(&rig.session, &needle);
            let turn = wait_until("the direct turn", T, || {
                rig.model.turns_on(&needle).first().cloned()
            });
            rig.oc.wait_idle(&rig.session, T);
            turn.at - t0
        })
        .collect()
}

#[test]
fn a_step_ready_during_a_persons_long_turn_runs_as_its_own_turn_after_it() {
    let Some(rig) = Rig::new(Mode::Tui) else {
        return;
    };
    let d = rig.daemon();
    rig.oc.type_prompt("a long question, delay=3");
    wait_until("the person's long turn to start", T, || {
        rig.model.turns_on("a long question").first().cloned()
    });
    rig.wait_state("busy");
    let title = "Summarise the answer";
    let (plan, _) = rig.plan("b2c3d4e5", "Follow up", &[Step::new(title)]);
    // Announced, and kept for the end of the person's turn.
    d.wait_log(&format!("announced s1 to session {}", rig.q()), T);
    d.wait_log(&format!("s1 waits for session {} to be idle", rig.q()), T);
    assert_eq!(rig.project.pending(&rig.q()), vec!["s1".to_string()]);
    assert_eq!(rig.session_status()["state"], "busy");
    assert!(rig.turns_on_step(title).is_empty(), "given during the turn");
    rig.wait_ticked(&plan, &[title]);
    rig.each_once(&[title]);
    let long = rig.model.turns_on("a long question");
    assert_eq!(long.len(), 1, "the person's turn ran once");
    // Its own turn: asked after the long turn's answer was written, and no
    // request carried both texts.
    let long_end = rig
        .model
        .requests()
        .iter()
        .filter(|r| r.last_user.contains("a long question"))
        .filter_map(|r| r.done)
        .max()
        .expect("the long turn answered");
    let mine = rig.turns_on_step(title)[0].at;
    assert!(
        mine > long_end,
        "asked {:?} before the long turn ended",
        long_end - mine
    );
    println!(
        "opencode TUI, a person's turn's last byte → the step's model request: {:?}",
        mine - long_end
    );
    assert!(rig
        .model
        .requests()
        .iter()
        .all(|r| !(r.last_user.contains("a long question") && r.last_user.contains(title))));
    let said = rig.oc.transcript(&rig.session);
    let at = |f: &dyn Fn(&rig::Said) -> bool| said.iter().position(f).expect("in the transcript");
    let person = at(&|m| m.role == "user" && m.text.contains("a long question"));
    let answer =
        at(&|m| m.role == "assistant" && m.parent.as_deref() == Some(said[person].id.as_str()));
    let prompt = at(&|m| m.role == "user" && m.text.contains(title));
    assert!(person < answer && answer < prompt, "{said:#?}");
    rig.wait_woken(&d, "s1");
}

/// A moment to kill reveille at: its name, and whether it has come.
type KillPoint<'a> = (&'a str, &'a dyn Fn(&Daemon) -> bool);

#[test]
fn every_step_runs_though_reveille_is_killed_mid_plan() {
    let Some(rig) = Rig::new(Mode::Serve) else {
        return;
    };
    let watch = PlanWatch::start(&rig.project.plan_dir);
    let titles = ["Sketch it", "Build it", "Test it", "Ship it"];
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let mut d = rig.daemon();
    let (plan, _) = rig.plan("c3d4e5f6", "Kill me", &steps);
    // kill -9 at three points: as s1 is announced (before its delivery);
    // the moment s2 was posted (before its delivery is recorded: the next
    // run finds it in the transcript); the moment s3 is ticked (as s4 is
    // announced). Each time started again at once.
    let points: [KillPoint; 3] = [
        ("s1 announced", &|d| {
            d.log_count("announced s1 to session") > 0
        }),
        ("s2 posted", &|d| d.log_count("posted seq 1 to") > 0),
        ("s3 ticked", &|_| {
            watch.ticked_at(&plan, titles[2]).is_some()
        }),
    ];
    for (point, reached) in points {
        if try_wait_until(T, || reached(&d).then_some(())).is_none() {
            panic!("timed out waiting for {point}; {}", rig.explain());
        }
        d.kill9();
        d = Daemon::start(&rig.project);
    }
    rig.wait_ticked(&plan, &titles);
    let runs: Vec<usize> = titles.iter().map(|t| rig.turns_on_step(t).len()).collect();
    println!("opencode serve, turns per step with 3 kills of reveille: {runs:?}");
    assert!(runs.iter().all(|&n| n >= 1), "{runs:?}");
    let repeats: usize = runs.iter().map(|n| n - 1).sum();
    assert!(
        repeats <= points.len(),
        "{repeats} repeats for {} kills",
        points.len()
    );
    wait_until("nothing pending", T, || {
        rig.project.pending(&rig.q()).is_empty().then_some(())
    });
    drop(d);
}

#[test]
fn a_step_announced_while_the_agents_program_is_down_is_delivered_once_it_is_back() {
    let Some(mut rig) = Rig::new(Mode::Serve) else {
        return;
    };
    let watch = PlanWatch::start(&rig.project.plan_dir);
    // s2's turn is slow (delay=1 on each of its two model calls): the
    // server is killed between its tick and its end, so s3 is announced
    // while the agent is busy and waits while its program is down.
    let titles = [
        "Write the notes",
        "Check the notes, delay=1",
        "Publish the notes",
    ];
    let steps: Vec<Step> = titles.iter().map(|t| Step::new(t)).collect();
    let d = rig.daemon();
    let (plan, _) = rig.plan("d4e5f6a7", "Notes", &steps);
    wait_until("s2 ticked", T, || watch.ticked_at(&plan, titles[1]));
    rig.oc.kill9();
    d.wait_log(&format!("announced s3 to session {}", rig.q()), T);
    wait_until("status to show the session gone, s3 kept", T, || {
        let s = rig.session_status();
        (s["state"].is_null() && s["pending"] == serde_json::json!(["s3"])).then_some(())
    });
    assert!(rig.turns_on_step(titles[2]).is_empty());
    let restarting = Instant::now();
    rig.oc.start_again();
    let back = Instant::now();
    rig.wait_ticked(&plan, &titles);
    let asked = rig.turns_on_step(titles[2])[0].at;
    println!(
        "opencode serve restarted in {:?}; serving → the model asked for s3: {:?}",
        back - restarting,
        asked.saturating_duration_since(back)
    );
    rig.each_once(&titles);
    rig.wait_woken(&d, "s3");
    let said = rig.oc.transcript(&rig.session);
    assert_eq!(
        said.iter()
            .filter(|m| m.role == "user" && m.text.contains(&rig::ready_line(titles[2])))
            .count(),
        1,
        "{said:#?}"
    );
}

#[test]
fn an_idle_agent_that_left_its_step_open_is_reminded_also_after_a_reveille_restart() {
    let Some(mut rig) = Rig::new(Mode::Serve) else {
        return;
    };
    // A prompt without the close instruction: the fake model answers it
    // and leaves the step open. The reminder's default wording has it.
    let template =
        "[reveille] Step {id} is ready: {title}\nRead it; leave the plan file as it is for now.\n";
    rig.project
        .set("prompt", "template", &format!("{template:?}"));
    rig.project.set("sessions", "remind_after_ms", "3000");
    let title = "Tidy the docs";
    let d = rig.daemon();
    let (plan, _) = rig.plan("e5f6a7b8", "Docs", &[Step::new(title)]);
    wait_until("the step's turn", T, || {
        rig.turns_on_step(title).first().cloned()
    });
    rig.oc.wait_idle(&rig.session, T);
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(!plan_watch::ticked(&text, title), "left open: {text}");
    // reveille restarts before the reminder is due: it follows the session
    // again (Backend::observe) and its idle clock starts anew.
    d.kill9();
    let d = Daemon::start(&rig.project);
    let seen = Instant::now();
    rig.wait_ticked(&plan, &[title]);
    let reminder = format!("Reminder 1 of 3: s1 is still open: {title}");
    let reminded = rig.model.turns_on(&reminder);
    assert_eq!(reminded.len(), 1, "{:#?}", rig.model.requests());
    assert!(
        reminded[0].at - seen >= Duration::from_secs(3),
        "reminded early"
    );
    println!(
        "opencode serve: restart → the reminder at the model: {:?} (remind_after_ms = 3000)",
        reminded[0].at - seen
    );
    rig.each_once(&[title]);
    d.wait_log(
        &format!("reminded session {} of s1 (reminder 1 of 3)", rig.q()),
        T,
    );
    assert!(rig.model.turns_on("Reminder 2 of").is_empty());
}

#[test]
fn a_parallel_step_runs_once_in_a_child_reveille_creates_and_removes() {
    let Some(mut rig) = Rig::new(Mode::Serve) else {
        return;
    };
    rig.project.set("fanout", "max_children", "1");
    let d = rig.daemon();
    // The child's turn is slower (delay=1): two agents ticking one plan
    // file at the same moment can lose one tick (each reads the file and
    // writes it back), which only a reminder would recover.
    let titles = ["Draw the map", "Write the key, delay=1", "Bind the atlas"];
    let steps = [
        Step::new(titles[0]).after("none"),
        Step::new(titles[1]).after("none"),
        Step::new(titles[2]).after("1, 2"),
    ];
    let (plan, _) = rig.plan("f6a7b8c9", "Atlas", &steps);
    // The child, as opencode lists it under its parent.
    let child = wait_until("a child under the parent", T, || {
        let (_, kids) = rig
            .oc
            .call("GET", &format!("/session/{}/children", rig.session), None)
            .ok()?;
        kids.as_array()?.first().cloned()
    });
    let id = child["id"].as_str().unwrap().to_string();
    let title = child["title"].as_str().unwrap().to_string();
    let name = title
        .strip_prefix("reveille child ")
        .expect("reveille's title");
    assert!(name.starts_with(&format!("{}.s2-", rig.q())), "{name}");
    // The child's own transcript has its prompt (read while it works: it
    // is deleted, transcript and all, once its step is done).
    let sub_agent = format!("one step of \"Atlas\": s2: {}", titles[1]);
    wait_until("the child's prompt in its transcript", T, || {
        let theirs = rig.oc.transcript(&id);
        theirs
            .iter()
            .any(|m| m.role == "user" && m.text.contains(&sub_agent))
            .then_some(())
    });
    let status = rig.project.status_json();
    let listed = status["children"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["id"] == name).cloned())
        .expect("the child in status");
    assert_eq!(listed["parent"], rig.q().as_str(), "{listed}");
    assert_eq!(listed["step"], "s2", "{listed}");
    rig.wait_ticked(&plan, &titles);
    // s1 and s3 ran in the parent, s2 in the child, each once; the child's
    // turn called the shell tool that ticked it.
    rig.each_once(&[titles[0], titles[2]]);
    assert_eq!(rig.model.turns_on(&sub_agent).len(), 1);
    assert!(rig
        .model
        .requests()
        .iter()
        .any(|r| r.after_tool && r.last_user.contains(&sub_agent)));
    let ours = rig.oc.transcript(&rig.session);
    assert!(
        ours.iter().all(|m| !m.text.contains("sub-agent")),
        "{ours:#?}"
    );
    // The parent is told once; the child is removed once idle.
    let told = format!("s2 was completed by child {name}");
    wait_until("the parent told", T, || {
        rig.model.turns_on(&told).first().cloned()
    });
    assert_eq!(rig.model.turns_on(&told).len(), 1);
    d.wait_log(
        &format!("killing child session {name}: s2 is checked and it is idle"),
        T,
    );
    wait_until("the child deleted", T, || {
        let (status, _) = rig.oc.call("GET", &format!("/session/{id}"), None).ok()?;
        (status == 404).then_some(())
    });
    d.wait_log(&format!("child session {name} exists, working on s2"), T);
}
