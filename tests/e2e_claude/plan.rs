//! A plan runs to its end through reveille and the real claude, the agent
//! ticking each step with its own shell tool; how long each step waited,
//! beside the agent's own fastest path measured in the same run; what
//! `status` and the journal say afterwards.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::rig::{ms, p50_max, ready, Rig};
use super::watch::PlanWatch;
use crate::util::agents::claude::send_later;
use crate::util::plans::{plan_text, write_in_place, Step};

const GOAL: &str = "Ship the parser";
const TITLES: [&str; 3] = [
    "Write the lexer e2e-p1",
    "Write the parser e2e-p2",
    "Wire it up e2e-p3",
];

/// What a step prompt looks like without reveille: the default template's
/// lines, sent by the test itself.
fn direct_prompt(n: usize, path: &Path) -> String {
    let title = format!("Direct {}", TITLES[n]);
    format!(
        "[direct] Step s{} of \"{GOAL}\" is ready: {title}\nPlan file: {p}\nWhen it is finished, change `- [ ] {title}` to `- [x] {title}` in {p}.\n",
        n + 1,
        p = path.display()
    )
}

/// The agent's own fastest path on an idle session: a `later` message
/// written straight to its socket → the model's request.
fn own_idle(rig: &Rig, n: usize) -> Duration {
    let marker = format!("idle-direct-{n}");
    let sent = Instant::now();
    send_later(&rig.reg, &marker);
    let took = rig.wait_model(&marker).at - sent;
    rig.idle();
    took
}

/// The same three steps with reveille replaced by the fastest sender
/// there is: the test itself, writing each next step straight to the
/// socket the moment the agent's tick lands. Per step, ready → request.
fn own_chain(rig: &Rig) -> Vec<Duration> {
    let dir = rig.claude.cwd.join("direct");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("20260101T000000_0d1e2c3a--direct__todo.md");
    let steps: Vec<Step> = (0..3)
        .map(|n| Step::new(&format!("Direct {}", TITLES[n])))
        .collect();
    let sent = Arc::new(Mutex::new(1));
    let (reg, p, next) = (rig.reg.clone(), path.clone(), sent.clone());
    let watch = PlanWatch::start(&path, move |w| {
        let mut next = next.lock().unwrap();
        let done = format!("- [x] Direct {}", TITLES[*next - 1]);
        if *next < 3 && w.text.contains(&done) {
            send_later(&reg, &direct_prompt(*next, &p));
            *next += 1;
        }
    });
    let written = write_in_place(&path, plan_text(GOAL, &steps, "").as_bytes());
    send_later(&rig.reg, &direct_prompt(0, &path));
    for s in &steps {
        rig.wait_ticked(&path, &s.title);
    }
    rig.idle();
    let mut ready_at = vec![written];
    for s in &steps[..2] {
        ready_at.push(watch.ticked(&s.title).expect("its tick was seen"));
    }
    steps
        .iter()
        .zip(ready_at)
        .map(|(s, at)| rig.wait_model(&ready(&s.title)).at - at)
        .collect()
}

#[test]
fn a_three_step_plan_runs_to_its_end_with_the_agent_ticking_each_step_itself() {
    let Some(rig) = Rig::start(|_| {}) else {
        return;
    };
    let own: Vec<Duration> = (0..3).map(|n| own_idle(&rig, n)).collect();
    let chain = own_chain(&rig);
    let name = "20260101T000000_0a1b2c3d--ship-the-parser__todo.md";
    let path = rig.plan_dir.join(name);
    let watch = PlanWatch::start(&path, |_| {});
    let steps: Vec<Step> = TITLES.iter().map(|t| Step::new(t)).collect();
    // An idle agent, as reveille sees it too.
    rig.wait_state(Some("idle"));
    let (path, written) = rig.plan(name, GOAL, &steps);
    let written_wall = SystemTime::now() - written.elapsed();
    for t in TITLES {
        rig.wait_ticked(&path, t);
    }
    rig.idle();
    let mut ready_at = vec![(written, written_wall)];
    for t in &TITLES[..2] {
        let w = watch.tick(t).expect("its tick was seen");
        ready_at.push((w.at, w.wall));
    }
    let ours: Vec<Duration> = TITLES
        .iter()
        .zip(&ready_at)
        .map(|(t, (at, _))| rig.wait_model(&ready(t)).at - *at)
        .collect();
    let share = reveilles_share(&rig, &ready_at);
    says_what_happened(&rig);
    report(&rig, &ours, &own, &chain);
    let direct: Vec<String> = TITLES.iter().map(|t| format!("Direct {t}")).collect();
    println!(
        "claude e2e, the previous turn's last answer → the next step's request: reveille {:?}; direct chain {:?}",
        turn_gaps(&rig, &TITLES.map(String::from)),
        turn_gaps(&rig, &direct)
    );
    println!("claude e2e, reveille's own part, step ready → written into the inbox: {share:?}");
    // The figures are printed for doc/PERFORMANCE.md; what is checked is
    // that each step ran once, and that the journal says how it got there.
    rig.assert_once(&TITLES.map(ready));
    let text = std::fs::read_to_string(&path).unwrap();
    let all_ticked = plan_text(GOAL, &steps, "").replace("- [ ] ", "- [x] ");
    assert_eq!(
        text, all_ticked,
        "the agent ticked each step, and nothing else"
    );
}

/// Per step, from its becoming ready to reveille writing its prompt into
/// the session's inbox (the daemon's debug entry): the part of the wait
/// that is reveille's — the rest is Claude Code's.
fn reveilles_share(rig: &Rig, ready_at: &[(Instant, SystemTime)]) -> Vec<Duration> {
    (1..=ready_at.len())
        .map(|n| {
            let needle = format!("writing s{n} into the inbox of");
            let at = rig.logged_at(&needle).expect("the write was logged");
            at.duration_since(ready_at[n - 1].1).unwrap_or_default()
        })
        .collect()
}

/// Per step after the first, from the last answer of the turn that ticked
/// the step before it to the model request of its own turn: Claude Code's
/// own part, the inbox taken once a turn ends.
fn turn_gaps(rig: &Rig, titles: &[String]) -> Vec<Duration> {
    let requests = rig.model.requests();
    titles
        .windows(2)
        .map(|pair| {
            let done = requests
                .iter()
                .filter(|r| r.last_user.contains(&ready(&pair[0])))
                .filter_map(|r| r.done)
                .max()
                .expect("the turn's answers were written");
            rig.wait_model(&ready(&pair[1])).at - done
        })
        .collect()
}

/// The figures, and what the model was given for the first step.
fn report(rig: &Rig, ours: &[Duration], own: &[Duration], chain: &[Duration]) {
    let (p50, max) = p50_max(ours.to_vec());
    let (own_p50, own_max) = p50_max(own.to_vec());
    let (chain_p50, chain_max) = p50_max(chain.to_vec());
    println!("claude e2e, per step ready → model request: reveille {ours:?}; direct chain {chain:?}; idle direct {own:?}");
    println!(
        "claude e2e, three-step plan, step ready → its turn's model request: p50 {}, max {} via reveille; \
         the same chain with each step written straight to the socket at the tick: p50 {}, max {}; \
         a `later` message to the idle session's socket: p50 {}, max {}",
        ms(p50),
        ms(max),
        ms(chain_p50),
        ms(chain_max),
        ms(own_p50),
        ms(own_max)
    );
    let first = &rig.model.turns_on(&ready(TITLES[0]))[0];
    println!("what the model received for s1:\n{}", first.last_user);
}

/// `status` and the journal after the plan: the session, its state, what
/// it was told last and how that went; each prompt's way in words.
fn says_what_happened(rig: &Rig) {
    let s = rig.wait_status("s3's turn started, the session idle", |s| {
        s["last_delivery"]["outcome"] == "turn_started"
            && s["last_delivery"]["step"] == "s3"
            && s["state"] == "idle"
    });
    assert_eq!(s["kind"], "claude", "{s:#}");
    assert_eq!(s["pending"], serde_json::json!([]), "{s:#}");
    let session = rig.session();
    let out = rig.project.run(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("session {session}")));
    let line = line.unwrap_or_else(|| panic!("no line for the session in:\n{text}"));
    assert!(line.contains("(claude): idle for"), "{line}");
    assert!(line.contains("last told s3: turn started"), "{line}");
    rig.wait_log(&["woke idle session", &session, "for s1"]);
    // A next step is written into the inbox while the turn that ticked the
    // step before it still runs — or, when that turn ended before the
    // transcript showed it taking its own prompt (the 100 ms batches), to
    // the idle session: a wake-up, and said so.
    for step in ["s2", "s3"] {
        let woke = format!("woke idle session {session} for {step} ");
        let started = format!("turn started on {step} in session {session}");
        let said = rig.wait_log_any(&[&woke, &started]);
        if said.contains(&started) {
            rig.wait_log(&[&format!("{step} waits in the inbox of {session}")]);
        }
    }
}
