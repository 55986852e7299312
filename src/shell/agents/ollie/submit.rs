//! A Submit to an ollie-9p session and the evidence of what became of it
//! (the delivery's own reads of `prompt.prev` and `idx`), for the one rule
//! in the core (`core/taken.rs`) to judge: ollie-9p's transport.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;

use super::held::Held;
use super::tree::{listing, Listing};
use super::{await_turn, read_state, Flavour};
use crate::core::effect::Delivery;
use crate::core::input::{Evidence, Input, Observation, Observer, Seen, Undeliverable};
use crate::core::session::AgentState;
use crate::shell::backend::{on_thread, undeliverable, Reports, Thread};

/// Submit to an ollie-9p session on a blocking thread (a 9P server
/// takes its time): the plain text (ollie-9p trims it and makes one
/// prompt of each write-and-close, so no framing applies), and what
/// `prompt.prev` then shows reported as evidence (`core::taken` judges
/// it); then the turn starting is watched for the journal
/// (`Input::TurnStarted`).
pub fn submit_later(
    thread: Thread,
    reports: &Reports,
    d: &Delivery,
    dir: Arc<OwnedFd>,
    flavour: Flavour,
    held: Arc<Held>,
    sessions_dir: &Path,
) {
    let text = d.text.clone();
    let sessions_dir = sessions_dir.to_path_buf();
    let (session, seq) = (d.session.clone(), d.seq);
    on_thread(thread, reports, d, move |reports| {
        // Not listed in `idx`: killed or renamed a moment ago, though
        // the kernel still resolves its old path for about a second (and
        // a held directory follows a rename) — a prompt written there is
        // lost, or reaches the renamed session unannounced. It waits in
        // the outbox instead.
        // (Reading `idx` while `prompt` opens gains nothing: 9pfuse
        // serves one request at a time, measured.)
        let looked = held.listing(&sessions_dir, &session);
        if matches!(looked, Ok(Listing::Absent)) {
            held.forget(&session);
        }
        let listed_as = match judge_listing(looked, &sessions_dir, flavour) {
            Ok(state) => state,
            Err(why) => return Evidence::Refused(why.reason),
        };
        // The state it is in as the prompt reaches it, told first: it
        // decides whether the prompt woke it or waits behind a turn
        // (the tree's last poll may be older than a person's Submit).
        // `idx` said it; an older ollie-9p's is in its `state` file.
        let before = match flavour {
            Flavour::Current => listed_as,
            Flavour::Legacy => read_state(&dir, flavour).ok().flatten(),
        };
        // (An older ollie-9p's sessions have no `idx` to follow them
        // by: their state stays unobserved.)
        if let Some(state) = before.as_ref().filter(|_| flavour == Flavour::Current) {
            let _ = reports.send(seen(&session, state.clone()));
        }
        let prompt = super::open_prompt(&dir);
        let evidence = submitted(prompt, &dir, flavour, &text, &sessions_dir, &session);
        if matches!(evidence, Evidence::Refused(_)) {
            // Opened afresh next time: a held directory that refused a
            // Submit may be of a session gone or a mount replaced.
            held.forget(&session);
        }
        // An idle agent's turn on it is about to start: seen for the
        // journal. A busy one runs it after its turn.
        let taken = matches!(evidence, Evidence::Recorded | Evidence::Queued);
        if taken && before.is_some_and(|s| s.is_idle()) {
            let reports = reports.clone();
            std::thread::spawn(move || {
                if let Some(state) = await_turn(&dir, flavour) {
                    if !state.is_idle() && flavour == Flavour::Current {
                        let _ = reports.send(seen(&session, state));
                    }
                    let _ = reports.send(Input::TurnStarted { session, seq });
                }
            });
        }
        evidence
    });
}

/// Submit `text` through `prompt` (opened by the caller) and what the session then shows of it: found in its
/// `prompt.prev` (an older ollie-9p has none to look in: queued); another
/// text there while it is still listed (someone else wrote meanwhile: it
/// took ours too); no longer listed (killed under the write: not taken);
/// or the read failed — not a lost prompt, but a doubt, looked at again.
fn submitted(
    prompt: std::io::Result<std::fs::File>,
    dir: &OwnedFd,
    flavour: Flavour,
    text: &str,
    sessions_dir: &Path,
    session: &str,
) -> Evidence {
    if let Err(e) = prompt.and_then(|p| super::submit_through(p, text)) {
        return Evidence::Refused(format!("submit to prompt: {e}"));
    }
    if flavour == Flavour::Legacy {
        return Evidence::Queued;
    }
    match super::took(dir, text) {
        Ok(true) => Evidence::Recorded,
        Ok(false) => match still_listed(sessions_dir, session, flavour) {
            Ok(()) => Evidence::Queued,
            Err(why) => Evidence::Refused(format!(
                "the session did not take the prompt: {}",
                why.reason
            )),
        },
        Err(e) => Evidence::Unsure(format!("reading prompt.prev after the Submit failed: {e}")),
    }
}

/// Whether `session` is still listed in the tree's `idx` — `Err` with the
/// reason when it is not, or `idx` cannot be read (retried: a prompt is
/// never written to a session that may be gone). An older ollie-9p has no
/// `idx` to ask.
pub fn still_listed(
    sessions_dir: &Path,
    session: &str,
    flavour: Flavour,
) -> Result<(), Undeliverable> {
    judge_listing(listing(sessions_dir, session), sessions_dir, flavour).map(|_| ())
}

/// What a read of `idx` (`looked`) means for a Submit: listed, with the
/// state it shows, or why not to write.
fn judge_listing(
    looked: std::io::Result<Listing>,
    sessions_dir: &Path,
    flavour: Flavour,
) -> Result<Option<AgentState>, Undeliverable> {
    match looked {
        Ok(Listing::Listed(state)) => Ok(state),
        Ok(Listing::Absent) => Err(undeliverable(
            "the session is no longer listed in idx (killed or renamed); its prompts wait in its outbox",
        )),
        Err(_) if flavour == Flavour::Legacy => Ok(None),
        Err(e) => Err(undeliverable(format!(
            "cannot read {}: {e}",
            sessions_dir.join("idx").display()
        ))),
    }
}

/// A delivery's own look at an ollie-9p session's state (stamped as it
/// is sent: `Reports`).
fn seen(session: &str, state: AgentState) -> Input {
    Input::Observed(Observation::new(
        session.to_string(),
        Seen::State(state),
        Observer::Delivery,
    ))
}
