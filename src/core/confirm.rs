//! The windows of the one rule "was it taken" (`core::taken`), per kind of
//! agent: how long what an agent shows of a prompt may lag behind the
//! prompt. Named, measured parameters of that rule, with time from the
//! engine's timers — not clocks read by the backends.
//!
//! A backend that can look for its own prompts in the agent's record
//! (Claude Code's transcript, Codex's thread, opencode's messages) answers
//! a prompt handed out again (`Delivery::again`) by looking before it
//! writes: found, it was taken; not found, it is written. A look made too
//! soon after the last write would not find a prompt the agent has but
//! has not recorded yet, and writing it again runs it twice. So the engine
//! hands such a prompt out only once its kind's `unseen` window has passed
//! since its last possible write (`again_at`).

use std::time::Duration;

use super::session::Kind;

/// One kind's windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// How long a prompt written to the agent may be missing from the
    /// agent's own record. Claude Code writes its transcript in batches on
    /// a 100 ms flush timer started by a batch's first entry, so a prompt
    /// written just before reveille stopped can be in the session's inbox
    /// and nowhere in the transcript yet: 300 ms is that flush, the
    /// inbox's own write, and a margin for a loaded machine (measured
    /// here: recorded within ~50 ms). Zero for a kind whose write answers
    /// only once the agent has recorded the prompt (ollie-9p's Submit,
    /// opencode's post, which waits for the stored message) or that keeps
    /// no record (a pipe, a file).
    pub unseen: Duration,
    /// How long the agent may show a prompt it took in neither its queue
    /// nor its history while it starts a turn on it. Codex hides a queued
    /// turn while dispatching it (`dispatching queued turns are not
    /// client-visible`): idle up to ~20 ms after the prompt left the queue,
    /// hidden up to ~70 ms on two loaded cores; 200 ms is several times
    /// that. Unlike `unseen`, this is not counted from reveille's write —
    /// a queued prompt starts whenever the turn before it ends — but from a
    /// look that found the agent idle and the prompt nowhere: the one rule
    /// (`core::taken`) answers that first absence with a look after this
    /// window (`Effect::Look` on the engine's timer), and only an absence
    /// on the idle agent this long or longer after the first proves the
    /// prompt not taken.
    pub hidden: Duration,
    /// How long a prompt written into the agent (`Evidence::Sent`) may go
    /// without its record saying anything of it before it is looked for
    /// there (`Effect::Look`); not there then, it was not taken. Claude
    /// Code records a prompt in its transcript within ~50 ms (measured
    /// here); 3 s leaves room for a machine under load. opencode: see
    /// `OPENCODE_RECORD`.
    pub record: Duration,
}

/// Claude Code's transcript flush (see `Windows::unseen`).
pub const CLAUDE_TRANSCRIPT_LAG: Duration = Duration::from_millis(300);

/// Codex's hidden dispatch (see `Windows::hidden`): the longest seen here
/// was ~70 ms on two loaded cores (idle for up to ~20 ms of it), so 200 ms
/// is several times that. Paid only by a prompt handed out again and found
/// nowhere on an idle thread, never by a first delivery.
pub const CODEX_HIDDEN_DISPATCH: Duration = Duration::from_millis(200);

/// How long Claude Code's transcript may not mention a prompt written
/// into the session's inbox (see `Windows::record`).
pub const CLAUDE_RECORD: Duration = Duration::from_secs(3);

/// How long after its post an opencode prompt is looked for among the
/// session's messages (see `Windows::record`). opencode answers
/// `prompt_async` with 204 before it stores the message, and a message
/// posted while the session starts a turn (another client's prompt) can
/// be stored — its event stream says so — and then be gone from the
/// session, never run. A turn on an idle session starts 60–190 ms after
/// the post (measured here) and answers it (an assistant message whose
/// parent is it), which tells the engine at once, before the window ends;
/// 3 s is many times that on a loaded machine. The look then finds it
/// answered, waiting behind a running turn (looked for again after
/// another window), or gone: sent again.
pub const OPENCODE_RECORD: Duration = Duration::from_secs(3);

/// The windows of `kind`.
pub fn windows(kind: Kind) -> Windows {
    let none = Duration::ZERO;
    match kind {
        Kind::Dir => Windows {
            unseen: none,
            hidden: none,
            record: none,
        },
        Kind::Opencode => Windows {
            unseen: none,
            hidden: none,
            record: OPENCODE_RECORD,
        },
        Kind::Claude => Windows {
            unseen: CLAUDE_TRANSCRIPT_LAG,
            hidden: none,
            record: CLAUDE_RECORD,
        },
        Kind::Codex => Windows {
            unseen: none,
            hidden: CODEX_HIDDEN_DISPATCH,
            record: none,
        },
    }
}

/// When prompt handed out again to a session of `kind` may go: once its
/// `unseen` window has passed since `last_write`, the last moment a write
/// of it may have happened — its last hand-out or outcome in this run, or
/// (`None`) this run's start, engine time zero, for a prompt an earlier
/// run handed out.
pub fn again_at(kind: Kind, last_write: Option<Duration>) -> Duration {
    last_write.unwrap_or(Duration::ZERO) + windows(kind).unseen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_kind_that_can_lose_a_stored_prompt_looks_for_it_after_its_window() {
        assert_eq!(windows(Kind::Opencode).record, OPENCODE_RECORD);
        assert_eq!(windows(Kind::Dir).record, Duration::ZERO);
    }

    #[test]
    fn only_a_kind_whose_record_lags_holds_a_prompt_handed_out_again() {
        assert_eq!(again_at(Kind::Claude, None), CLAUDE_TRANSCRIPT_LAG);
        assert_eq!(
            again_at(Kind::Claude, Some(ms(5_000))),
            ms(5_000) + CLAUDE_TRANSCRIPT_LAG
        );
        for kind in [Kind::Dir, Kind::Opencode, Kind::Codex] {
            assert_eq!(again_at(kind, None), Duration::ZERO, "{kind:?}");
            assert_eq!(again_at(kind, Some(ms(7))), ms(7), "{kind:?}");
        }
    }
}
