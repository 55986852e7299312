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
    /// Not known yet, for a kind whose record will tell (its `record`
    /// window is not zero): said once; nothing more goes to the session,
    /// no look at its state settles it (opencode can store a prompt and
    /// never run it, so a session still there proves nothing), and the
    /// prompt is looked for in the record once this window has passed.
    /// Why, in words.
    LookAgainAfter(String, Duration),
    /// Not taken: the session runs a turn that would take it in. It stays
    /// first and goes once the session is observed idle — the newest look
    /// says when, not a backoff.
    WaitIdle(Undeliverable),
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
        Evidence::Unsure(why) => unsure(kind, why),
        Evidence::Sent => Verdict::LookAfter(confirm::windows(kind).record),
        Evidence::Busy(reason) => busy(kind, reason),
    }
}

/// Could not tell: a kind whose record will tell is looked for in it
/// after its window; any other, by the session's next look (`settle`).
/// Never sent again, never called delivered on a doubt alone.
fn unsure(kind: Kind, why: String) -> Verdict {
    match confirm::windows(kind).record {
        Duration::ZERO => Verdict::LookAgain(why),
        window => Verdict::LookAgainAfter(why, window),
    }
}

/// Refused for a running turn: a kind that takes a prompt only while
/// idle waits for the idle; any other backs off as for any refusal.
fn busy(kind: Kind, reason: String) -> Verdict {
    let why = Undeliverable { reason };
    match kind.waits_for_idle() {
        true => Verdict::WaitIdle(why),
        false => Verdict::Retry(why),
    }
}

/// Whether a doubt of a prompt to a session of `kind` is settled by the
/// session's next look (`settle`): only for a kind that keeps no record
/// to look in, whose write is lost only with the session (ollie-9p). A
/// kind whose record will tell is answered by its own look after its
/// window (`Verdict::LookAgainAfter`).
pub fn settled_by_look(kind: Kind) -> bool {
    confirm::windows(kind).record.is_zero()
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
    fn a_doubt_of_a_kind_whose_record_tells_is_looked_for_after_its_window_not_settled_by_a_state()
    {
        let why = || "reading its messages failed".to_string();
        assert_eq!(
            super::judge(Kind::Opencode, Evidence::Unsure(why())),
            Verdict::LookAgainAfter(why(), confirm::OPENCODE_RECORD)
        );
        assert_eq!(
            super::judge(Kind::Claude, Evidence::Unsure(why())),
            Verdict::LookAgainAfter(why(), confirm::CLAUDE_RECORD)
        );
        assert!(!settled_by_look(Kind::Opencode));
        assert!(!settled_by_look(Kind::Claude));
        assert!(
            settled_by_look(Kind::Dir),
            "ollie-9p: the next look settles"
        );
    }

    #[test]
    fn a_busy_refusal_waits_for_the_idle_only_where_prompts_go_only_to_an_idle_agent() {
        let why = || "busy: waits for the running turn to end".to_string();
        let busy = Undeliverable { reason: why() };
        assert_eq!(
            super::judge(Kind::Opencode, Evidence::Busy(why())),
            Verdict::WaitIdle(busy.clone())
        );
        assert_eq!(
            super::judge(Kind::Dir, Evidence::Busy(why())),
            Verdict::Retry(busy)
        );
    }

    #[test]
    fn a_prompt_sent_into_a_record_that_lags_is_looked_for_after_the_kinds_window() {
        assert_eq!(
            super::judge(Kind::Claude, Evidence::Sent),
            Verdict::LookAfter(confirm::CLAUDE_RECORD)
        );
    }
}
