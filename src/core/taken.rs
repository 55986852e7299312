//! Was it taken: from what a backend saw of one prompt it wrote
//! (`input::Evidence`), the one rule that decides whether the prompt is delivered,
//! must be sent again, or needs another look.
//!
//! Sending again is a repeat if the prompt had landed — the agent runs
//! the step twice — so a prompt is sent again only on evidence that it
//! was not taken. A backend that could not tell (a confirmation read
//! failed: ollie-9p's store reads time out after 10 s with EIO) says so,
//! and the answer is another look, never another send: for a kind that
//! keeps no record to look in (ollie-9p), the session's next observation
//! (`Input::Observed`, newer than the doubt) settles it; for a kind whose
//! record tells (Claude Code, opencode), a look in that record after its
//! window (`settled_by_look`).
//!
//! An absence (`Evidence::NotRecorded`) from an agent that can hide a
//! prompt it is starting (a kind with a `hidden` window, `core::confirm`:
//! Codex) is not yet evidence: the first one on an idle agent is answered
//! with a look once the window has passed, one on a busy agent with a look
//! once it is idle, and only an absence on an idle agent at least the
//! window after the first proves the prompt was not taken.

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
    /// Not known yet, the agent busy with a turn that may be on it: nothing
    /// more goes to the session, and the prompt is looked for
    /// (`Effect::Look`) once a look at the session finds it no longer busy.
    LookWhenIdle,
    /// Looked for twice, a window apart, and not there: it was not taken.
    /// Sent again as a first delivery (no look before the write: the looks
    /// were made).
    NotTaken(Undeliverable),
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

/// What the engine knows of a prompt beside the evidence about it: the
/// rule judges an absence by it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Known {
    /// How long ago the prompt was first found absent on an idle agent,
    /// since it was last handed out to be written (`None`: it was not).
    pub absent_for: Option<Duration>,
    /// The session's newest look finds it busy (running a turn, or waiting
    /// for a person on one).
    pub busy: bool,
}

/// The rule: what `evidence` of a prompt to a session of `kind` means,
/// given what is `known` of it.
pub fn judge(kind: Kind, evidence: Evidence, known: Known) -> Verdict {
    match evidence {
        Evidence::Written => Verdict::Delivered(Reached::Written),
        Evidence::Queued | Evidence::Recorded | Evidence::TurnStarted => {
            Verdict::Delivered(Reached::Accepted)
        }
        Evidence::Refused(reason) => Verdict::Retry(Undeliverable { reason }),
        Evidence::NotRecorded(reason) => absent(kind, reason, known),
        Evidence::Unsure(why) => unsure(kind, why),
        Evidence::Sent => Verdict::LookAfter(confirm::windows(kind).record),
        Evidence::Busy(reason) => busy(kind, reason),
    }
}

/// The prompt was looked for in the agent's queue and record and is in
/// neither. A kind that hides nothing: not taken. One that may hide a
/// prompt while it starts it (`hidden`): on a busy agent the running turn
/// may be that prompt, so look again once idle; on an idle one, the first
/// absence is looked at again once the window has passed, and only an
/// absence the window or more after it proves it not taken.
fn absent(kind: Kind, reason: String, known: Known) -> Verdict {
    let hidden = confirm::windows(kind).hidden;
    if hidden.is_zero() {
        return Verdict::Retry(Undeliverable { reason });
    }
    if known.busy {
        return Verdict::LookWhenIdle;
    }
    match known.absent_for {
        Some(since) if since >= hidden => Verdict::NotTaken(Undeliverable { reason }),
        Some(since) => Verdict::LookAfter(hidden - since),
        None => Verdict::LookAfter(hidden),
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
/// in the outbox for it to come back. A session of a kind that may hide a
/// prompt it starts (Codex, whose doubt is an answer lost with its
/// connection: the call may not have reached it) is still there whether
/// or not it took the prompt, so its record is looked in now
/// (`Effect::Look`, at once: a turn running on it is found), and that look
/// decides.
pub fn settle(kind: Kind, seen: &Seen) -> Verdict {
    match seen {
        Seen::State(_) if !confirm::windows(kind).hidden.is_zero() => {
            Verdict::LookAfter(Duration::ZERO)
        }
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
        let judge = |e| judge(Kind::Dir, e, Known::default());
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
            settle(Kind::Dir, &Seen::State(AgentState::Idle)),
            Verdict::Delivered(Reached::Accepted)
        );
        assert!(matches!(
            settle(Kind::Dir, &Seen::Gone("killed".into())),
            Verdict::Retry(_)
        ));
    }

    #[test]
    fn a_doubt_of_a_kind_whose_record_tells_is_looked_for_after_its_window_not_settled_by_a_state()
    {
        let why = || "reading its messages failed".to_string();
        assert_eq!(
            super::judge(Kind::Opencode, Evidence::Unsure(why()), Known::default()),
            Verdict::LookAgainAfter(why(), confirm::OPENCODE_RECORD)
        );
        assert_eq!(
            super::judge(Kind::Claude, Evidence::Unsure(why()), Known::default()),
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
            super::judge(Kind::Opencode, Evidence::Busy(why()), Known::default()),
            Verdict::WaitIdle(busy.clone())
        );
        assert_eq!(
            super::judge(Kind::Dir, Evidence::Busy(why()), Known::default()),
            Verdict::Retry(busy)
        );
    }

    #[test]
    fn a_prompt_sent_into_a_record_that_lags_is_looked_for_after_the_kinds_window() {
        assert_eq!(
            super::judge(Kind::Claude, Evidence::Sent, Known::default()),
            Verdict::LookAfter(confirm::CLAUDE_RECORD)
        );
    }

    fn codex_absent(known: Known) -> Verdict {
        super::judge(Kind::Codex, Evidence::NotRecorded("nowhere".into()), known)
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_first_absence_from_an_agent_that_hides_a_dispatch_is_looked_at_after_its_window() {
        assert_eq!(
            codex_absent(Known::default()),
            Verdict::LookAfter(confirm::CODEX_HIDDEN_DISPATCH)
        );
    }

    #[test]
    fn an_absence_a_window_after_the_first_is_not_taken_and_one_sooner_waits_for_the_rest() {
        let hidden = confirm::CODEX_HIDDEN_DISPATCH;
        let absent_for = |d| Known {
            absent_for: Some(d),
            busy: false,
        };
        assert!(matches!(
            codex_absent(absent_for(hidden)),
            Verdict::NotTaken(why) if why.reason == "nowhere"
        ));
        assert!(matches!(
            codex_absent(absent_for(hidden * 5)),
            Verdict::NotTaken(_)
        ));
        assert_eq!(
            codex_absent(absent_for(ms(50))),
            Verdict::LookAfter(hidden - ms(50))
        );
    }

    #[test]
    fn an_absence_on_a_busy_agent_is_looked_at_once_it_is_idle_whatever_came_before() {
        for absent_for in [None, Some(ms(1)), Some(ms(10_000))] {
            let known = Known {
                absent_for,
                busy: true,
            };
            assert_eq!(codex_absent(known), Verdict::LookWhenIdle, "{absent_for:?}");
        }
    }

    #[test]
    fn a_doubt_of_a_kind_that_hides_a_dispatch_is_settled_by_a_look_in_its_record() {
        for state in [AgentState::Idle, AgentState::Busy("active".into())] {
            assert_eq!(
                settle(Kind::Codex, &Seen::State(state)),
                Verdict::LookAfter(Duration::ZERO)
            );
        }
        assert!(matches!(
            settle(Kind::Codex, &Seen::Unreachable("down".into())),
            Verdict::Retry(_)
        ));
    }

    #[test]
    fn a_kind_that_hides_nothing_sends_again_on_its_first_absence() {
        for kind in [Kind::Claude, Kind::Opencode, Kind::Dir] {
            let busy = Known {
                absent_for: None,
                busy: true,
            };
            let v = super::judge(kind, Evidence::NotRecorded("x".into()), busy);
            assert!(matches!(v, Verdict::Retry(_)), "{kind:?}: {v:?}");
        }
    }

    proptest::proptest! {
        /// Whatever is known, an absence is "not taken" only from an idle
        /// agent found absent at least the window before; everything else
        /// from it is a look, never a send.
        #[test]
        fn an_absence_sends_again_only_after_two_idle_looks_a_window_apart(
            absent_ms in proptest::option::of(0..1_000u64),
            busy: bool,
        ) {
            let known = Known { absent_for: absent_ms.map(ms), busy };
            match codex_absent(known) {
                Verdict::NotTaken(_) => {
                    proptest::prop_assert!(!busy);
                    proptest::prop_assert!(known.absent_for >= Some(confirm::CODEX_HIDDEN_DISPATCH));
                }
                Verdict::LookAfter(w) => {
                    proptest::prop_assert!(!busy);
                    proptest::prop_assert!(w > Duration::ZERO);
                    proptest::prop_assert!(w <= confirm::CODEX_HIDDEN_DISPATCH);
                }
                Verdict::LookWhenIdle => proptest::prop_assert!(busy),
                other => proptest::prop_assert!(false, "{other:?}"),
            }
        }
    }
}
