//! Was it taken: from what a backend saw of one prompt it wrote
//! (`input::Evidence`), the one rule that decides whether the prompt is delivered,
//! must be sent again, or needs another look.
//!
//! Sending again is a repeat if the prompt had landed — the agent runs
//! the step twice — so a prompt is sent again only on evidence that it
//! was not taken. A backend that could not tell (a confirmation read
//! failed: ollie-9p's store reads time out after 10 s with EIO) says so,
//! and the answer is another look at the session, never another send:
//! the session's next observation (`Input::Observed`, newer than the
//! doubt) settles it.

use std::time::Duration;

use super::confirm;
use super::input::{Evidence, Reached, Seen, Undeliverable};
use super::session::Kind;

/// What the rule decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It reached the session, this far.
    Delivered(Reached),
    /// It was not taken: it stays first in its outbox and is sent again.
    Retry(Undeliverable),
    /// Not known yet: nothing more goes to the session until a look at
    /// it newer than this doubt settles it (`settle`). Why, in words.
    LookAgain(String),
    /// Not known yet, and the agent's own record will tell: nothing more
    /// goes to the session, and unless the record tells first, the prompt
    /// is looked for in it (`Effect::Look`) once this window has passed.
    LookAfter(Duration),
}

/// The rule: what `evidence` of a prompt to a session of `kind` means.
pub fn judge(kind: Kind, evidence: Evidence) -> Verdict {
    match evidence {
        Evidence::Written => Verdict::Delivered(Reached::Written),
        Evidence::Queued | Evidence::Recorded | Evidence::TurnStarted => {
            Verdict::Delivered(Reached::Accepted)
        }
        Evidence::Refused(reason) | Evidence::NotRecorded(reason) => {
            Verdict::Retry(Undeliverable { reason })
        }
        Evidence::Unsure(why) => Verdict::LookAgain(why),
        Evidence::Sent => Verdict::LookAfter(confirm::windows(kind).record),
    }
}

/// A doubt settled by a look at the session made after it: still there,
/// it took the write (a session drops a write only by dying under it);
/// gone or unreachable, what it had went with it, and the prompt waits
/// in the outbox for it to come back.
pub fn settle(seen: &Seen) -> Verdict {
    match seen {
        Seen::State(_) => Verdict::Delivered(Reached::Accepted),
        Seen::Gone(why) | Seen::Unreachable(why) => Verdict::Retry(Undeliverable {
            reason: format!("the session went away before its prompt was confirmed: {why}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::session::AgentState;

    #[test]
    fn only_a_refusal_or_an_absence_sends_again_and_a_doubt_is_looked_at_again() {
        let judge = |e| judge(Kind::Dir, e);
        assert_eq!(
            judge(Evidence::Written),
            Verdict::Delivered(Reached::Written)
        );
        for taken in [Evidence::Queued, Evidence::Recorded, Evidence::TurnStarted] {
            assert_eq!(judge(taken), Verdict::Delivered(Reached::Accepted));
        }
        assert!(matches!(
            judge(Evidence::Refused("ENXIO".into())),
            Verdict::Retry(_)
        ));
        assert!(matches!(
            judge(Evidence::NotRecorded("not in the transcript".into())),
            Verdict::Retry(_)
        ));
        assert_eq!(
            judge(Evidence::Unsure("EIO".into())),
            Verdict::LookAgain("EIO".into())
        );
        assert_eq!(
            settle(&Seen::State(AgentState::Idle)),
            Verdict::Delivered(Reached::Accepted)
        );
        assert!(matches!(
            settle(&Seen::Gone("killed".into())),
            Verdict::Retry(_)
        ));
    }

    #[test]
    fn a_prompt_sent_into_a_record_that_lags_is_looked_for_after_the_kinds_window() {
        assert_eq!(
            super::judge(Kind::Claude, Evidence::Sent),
            Verdict::LookAfter(confirm::CLAUDE_RECORD)
        );
    }
}
