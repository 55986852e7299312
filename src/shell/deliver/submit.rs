//! A Submit to an ollie-9p session and the evidence of what became of it
//! (the delivery's own reads of `prompt.prev` and `idx`), for the one rule
//! in the core (`core/taken.rs`) to judge.

use std::os::fd::OwnedFd;
use std::path::Path;

use super::undeliverable;
use crate::core::input::{Evidence, Input, Observation, Observer, Seen, Undeliverable};
use crate::core::session::AgentState;
use crate::shell::ollie::{self, Flavour};
use crate::shell::sessions::listed;

/// Submit `text` and what the session then shows of it: found in its
/// `prompt.prev` (an older ollie-9p has none to look in: queued); another
/// text there while it is still listed (someone else wrote meanwhile: it
/// took ours too); no longer listed (killed under the write: not taken);
/// or the read failed — not a lost prompt, but a doubt, looked at again.
pub(super) fn submitted(
    dir: &OwnedFd,
    flavour: Flavour,
    text: &str,
    sessions_dir: &Path,
    session: &str,
) -> Evidence {
    if let Err(e) = ollie::submit(dir, text) {
        return Evidence::Refused(format!("submit to prompt: {e}"));
    }
    if flavour == Flavour::Legacy {
        return Evidence::Queued;
    }
    match ollie::took(dir, text) {
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
pub(super) fn still_listed(
    sessions_dir: &Path,
    session: &str,
    flavour: Flavour,
) -> Result<(), Undeliverable> {
    match listed(sessions_dir, session) {
        Ok(true) => Ok(()),
        Ok(false) => Err(undeliverable(
            "the session is no longer listed in idx (killed or renamed); its prompts wait in its outbox",
        )),
        Err(_) if flavour == Flavour::Legacy => Ok(()),
        Err(e) => Err(undeliverable(format!(
            "cannot read {}: {e}",
            sessions_dir.join("idx").display()
        ))),
    }
}

/// A delivery's own look at an ollie-9p session's state (stamped as it
/// is sent: `Reports`).
pub(super) fn seen(session: &str, state: AgentState) -> Input {
    Input::Observed(Observation::new(
        session.to_string(),
        Seen::State(state),
        Observer::Delivery,
    ))
}
