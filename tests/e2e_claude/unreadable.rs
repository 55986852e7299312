//! A transcript reveille cannot read (EIO for every read by its process,
//! through a passthrough FUSE mount over the config's `projects/`; Claude
//! Code's own reads and writes pass) while a step it prompted stays open:
//! the agent takes the prompt, reveille cannot tell, and it must neither
//! write the prompt again nor take the silence for a lost prompt. Once the
//! transcript reads again, the prompt is found taken.
//!
//! The conformance cell `failed_confirmation::claude` does the same with a
//! step the agent ticks, which withdraws a prompt reveille would have sent
//! again; here nothing closes the step, so a second write would show.

use super::rig::{toml, Rig, T};
use crate::conformance::{step_needle, LEFT_OPEN};
use crate::doubles::fuse::fuse_unavailable;
use crate::doubles::passthrough::Passthrough;
use crate::util::plans::Step;
use crate::util::wait_until;

const TITLE: &str = "Unreadable transcript e2e-u1";

/// The daemon's writes of step `s1` into the inbox.
fn writes(log: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("writing s1 into the inbox of"))
        .count()
}

#[test]
fn a_prompt_whose_taking_cannot_be_read_is_written_once_and_found_taken_later() {
    if let Some(why) = fuse_unavailable() {
        return eprintln!("skipped: {why}");
    }
    // A prompt the agent reads and leaves its step open on.
    let Some(rig) = Rig::start(|p| p.set("prompt", "template", &toml(LEFT_OPEN))) else {
        return;
    };
    let needle = step_needle("s1", TITLE);
    let mount = Passthrough::over(&rig.claude.config_dir.join("projects")).unwrap();
    mount.fail_reads(rig.daemon_pid(), ".jsonl");
    rig.plan(
        "20260101T000000_0e0e0e0e--unreadable__todo.md",
        "Unreadable",
        &[Step::new(TITLE)],
    );
    rig.wait_model(&needle);
    // Until reveille's look at the end of the record window met the fault
    // (or it wrote the prompt again).
    let doubt = "could not tell whether session";
    wait_until("reveille to say it could not tell", T, || {
        let log = rig.daemon().log();
        (log.contains(doubt) || writes(&log) > 1).then_some(())
    });
    mount.heal();
    assert!(mount.failed() > 0, "reveille never read the transcript");
    // Read again 3 s later: taken, and its turn started.
    rig.wait_status("the step's turn seen", |s| {
        s["last_delivery"]["outcome"] == "turn_started"
    });
    rig.idle();
    let log = rig.daemon().log();
    let (written, turns) = (writes(&log), rig.turns(&needle));
    let dropped = rig.dropped_notices().len();
    assert!(
        written == 1 && turns == 1 && dropped == 0,
        "s1 was written into the inbox {written} times, began {turns} turns, and {dropped} copies were dropped by the inbox's guard:\n{log}"
    );
    assert_eq!(rig.daemon().log_count(doubt), 1, "{log}");
    rig.assert_once(&[needle]);
}
