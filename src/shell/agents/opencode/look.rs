//! The engine's look at a prompt posted to an opencode session and
//! reported sent (`Evidence::Sent`) or not known to be taken
//! (`Evidence::Unsure`: its post broke midway, or a look before this one
//! could not read the session), once opencode's `record` window
//! (`core::confirm::OPENCODE_RECORD`) has passed without an answer to it
//! being seen: the session's messages say what became of it. Run on the
//! backend's worker thread, in order with the deliveries.
//!
//! | the session's messages show reveille's copy (its `messageID` tag) | reported |
//! |---|---|
//! | answered (an assistant message whose parent it is) | `Delivered`, `TurnStarted` |
//! | not answered, the session busy: waiting behind a running turn, or lost with it | `Evidence::Sent`: looked for again after the window |
//! | not answered, the session idle | `Evidence::NotRecorded`: sent again |
//! | not there | `Evidence::NotRecorded`: sent again |
//! | the messages or the status could not be read | `Evidence::Unsure`: looked at again after the window, never posted again on it |
//!
//! Only an answer proves a prompt taken. opencode can store a message
//! posted while the session starts another client's turn and yet never
//! run it: in the conformance suite's `prompt_race`, the message was there
//! 3 s after its post, unanswered, the session idle after that other
//! turn, and no turn ever came for it. Such a copy does not run, so the
//! prompt is posted again; one that was answered, or still waits behind a
//! running turn, is never posted again.

use super::deliver::{copy_in, evidence, Courier, LOOK_BACK};
use super::message_id;
use crate::core::confirm;
use crate::core::effect::Delivery;
use crate::core::input::Evidence;
use crate::core::session::Kind;

impl Courier {
    /// Look for prompt `d` among the messages of the bare session `id`,
    /// and report what they show.
    pub fn look(&self, d: &Delivery, id: &str) {
        // Its status first: a copy unanswered in messages read after the
        // session was seen idle had no turn start on it by then.
        let busy = match self.busy(id) {
            Ok(busy) => busy,
            Err(why) => return self.shared.lock().send(evidence(d, Evidence::Unsure(why))),
        };
        let tag = message_id::tag(&self.project, d.seq);
        let copy = match self.api.messages(id, LOOK_BACK) {
            Ok(messages) => copy_in(&messages, &tag),
            Err(e) => {
                let why = format!("reading its messages failed: {}", self.failed(id, e));
                return self.shared.lock().send(evidence(d, Evidence::Unsure(why)));
            }
        };
        let window = confirm::windows(Kind::Opencode).record;
        let server = self.api.server.url();
        let dropped = match copy {
            Some((_, true)) => return self.shared.lock().taken_as_found(id, d.seq),
            Some((message, false)) if busy => {
                tracing::debug!(project = %self.project, session = %d.session, "{} ({message}) is unanswered behind the running turn of {id}: looked for again", d.step);
                return self.shared.lock().send(evidence(d, Evidence::Sent));
            }
            Some((message, false)) => format!("opencode session {id} on {server} is idle and never answered the prompt (its message {message}) {window:?} after it was posted: it ended its turns without running it"),
            None => format!("opencode session {id} on {server} does not have the prompt (its message msg_…{tag}) {window:?} after it was posted"),
        };
        tracing::debug!(project = %self.project, session = %d.session, "{} was not taken: {dropped}", d.step);
        let mut f = self.shared.lock();
        f.not_taken(id, d.seq);
        f.send(evidence(d, Evidence::NotRecorded(dropped)));
    }

    /// Whether `id` is running a turn, as its server says now.
    fn busy(&self, id: &str) -> Result<bool, String> {
        let directory = self.directory(id)?;
        let before = self.shared.lock().mark(id);
        let state = self
            .api
            .state(id, &directory)
            .map_err(|e| format!("reading its status failed: {}", self.failed(id, e)))?;
        let state = self.shared.lock().polled(id, Some(state), before);
        Ok(state.is_some_and(|s| !s.is_idle()))
    }
}
