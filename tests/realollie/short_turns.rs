//! A turn shorter than the state poll: the agent is woken, its turn starts
//! and ends between two reads of `idx`, which shows it idle both times.
//! The delivery's own read saw it busy; the next poll's idle is newer and
//! wins, so `status` shows it idle within one poll of the turn's end and
//! the reminder comes.

use std::time::{Duration, Instant};

use super::{sequential, toml, Rig, AGENT, IDLE, T};
use crate::util::daemon::Daemon;
use crate::util::realollie::{unix_now, Options};
use crate::util::wait_until;

/// The state poll: far longer than a turn (one fake model request,
/// `Options::default`'s 0.2 s).
const POLL_MS: u64 = 1500;
/// The idle time before a reminder (the smallest reveille accepts).
const AFTER_MS: u64 = 1000;

/// The state `status --json` shows for the agent.
fn shown(rig: &Rig) -> Option<String> {
    let status = rig.project.status_json();
    let sessions = status["sessions"].as_array()?.clone();
    let agent = sessions.into_iter().find(|s| s["id"] == AGENT)?;
    agent["state"].as_str().map(str::to_string)
}

#[test]
fn a_turn_shorter_than_a_poll_is_seen_ending_and_reminded() {
    let Some(mut rig) = Rig::new(Options::default(), IDLE) else {
        return;
    };
    rig.project
        .set("sessions", "state_poll_ms", &POLL_MS.to_string());
    rig.project
        .set("sessions", "remind_after_ms", &AFTER_MS.to_string());
    rig.project.set("sessions", "remind_max", "1");
    let reminder = "[reveille] Reminder {n} of {max}: {id} {title}\n";
    rig.project
        .set("prompt", "remind_template", &toml(reminder));
    let daemon = Daemon::start(&rig.project);
    rig.plan("short", &sequential(&["Left open"]));
    // The turn on the step: one request, and it ends without ticking.
    wait_until("the step's turn to end", T, || {
        let turn = rig.ollie.turns_with("s1 Left open").into_iter().next()?;
        turn.ended
    });
    let ended = Instant::now();
    let turn = rig.ollie.turns_with("s1 Left open").remove(0);
    let lasted = turn.ended.unwrap() - turn.started;
    eprintln!("the turn lasted {lasted:.2} s; the state poll is {POLL_MS} ms");
    // Shown idle within one poll of the turn's end (and the views'
    // 200 ms), however it was seen busy meanwhile; not busy for ever.
    let within = Duration::from_millis(POLL_MS + 200) + Duration::from_secs(1);
    let idle = wait_until("status to show the agent idle", within, || {
        (shown(&rig).as_deref() == Some("idle")).then_some(unix_now())
    });
    eprintln!(
        "status showed it idle {:.2} s after the turn ended ({:?} after it was seen ending)",
        idle - turn.ended.unwrap(),
        ended.elapsed()
    );
    let reminded = rig.ollie.wait_turn("Reminder 1 of 1", T);
    eprintln!(
        "the reminder's turn started {:.2} s after the first turn ended",
        reminded.started - turn.ended.unwrap()
    );
    assert_eq!(
        daemon.log_count("reminded session agent of s1"),
        1,
        "{}",
        daemon.log()
    );
}
