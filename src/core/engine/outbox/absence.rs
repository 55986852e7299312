//! A prompt looked for in an agent that may hide a prompt while it starts
//! it (Codex: a kind with a `hidden` window, `core::confirm`) and not
//! found: what the lane keeps of it for the one rule (`core::taken`) —
//! when it was first found absent from an idle agent, whether its next
//! look waits for the agent to be idle, and whether looks proved it not
//! taken, so that it is written again only then, as a first delivery.

use super::super::config::Now;
use super::{Lane, Lanes};

impl Lane {
    /// Prompt `seq` is handed out; `again`: it may have reached the agent
    /// (its backend looks before writing it). A first delivery (never
    /// handed out, or proved not taken) starts its absences afresh.
    pub(super) fn handed_out(&mut self, seq: u64, again: bool) {
        self.not_taken.take_if(|s| *s == seq);
        self.look_when_idle = None;
        if !again {
            self.absent = None;
        }
    }

    /// An outcome of prompt `seq` came: what was kept of its absence goes.
    pub(super) fn answered(&mut self, seq: u64) {
        self.absent.take_if(|(s, _)| *s == seq);
        self.look_when_idle.take_if(|s| *s == seq);
    }
}

impl Lanes {
    /// How long ago prompt `seq` of `session` was first found absent from
    /// the idle agent (`None`: it was not, since it was last written).
    pub(in crate::core::engine) fn absent_for(
        &self,
        now: Now,
        session: &str,
        seq: u64,
    ) -> Option<Now> {
        let (s, at) = self.lanes.get(session)?.absent?;
        (s == seq).then(|| now.saturating_sub(at))
    }

    /// Prompt `seq`, being written, was found absent from the idle agent:
    /// the first such absence is kept, with when.
    pub(in crate::core::engine) fn absent(&mut self, now: Now, session: &str, seq: u64) {
        let lane = self.lane(session);
        if lane.writing == Some(seq) && lane.absent.is_none_or(|(s, _)| s != seq) {
            lane.absent = Some((seq, now));
        }
    }

    /// Prompt `seq`'s look waits for `session` to be seen no longer busy.
    /// Returns whether it is being written (else there is nothing to look
    /// for).
    pub(in crate::core::engine) fn look_when_idle(&mut self, session: &str, seq: u64) -> bool {
        let lane = self.lane(session);
        if lane.writing != Some(seq) {
            return false;
        }
        lane.look_when_idle = Some(seq);
        true
    }

    /// `session` was seen no longer busy: the prompt whose look waited for
    /// that, if it is still being written.
    pub(in crate::core::engine) fn idle_look(&mut self, session: &str) -> Option<u64> {
        let lane = self.lanes.get_mut(session)?;
        let seq = lane.look_when_idle.take()?;
        (lane.writing == Some(seq)).then_some(seq)
    }

    /// Looks proved prompt `seq`, being written, not taken: its lane is
    /// free, and its next hand-out is a first delivery, at once.
    pub(in crate::core::engine) fn not_taken(&mut self, session: &str, seq: u64) -> bool {
        let lane = self.lane(session);
        if lane.writing != Some(seq) {
            return false;
        }
        lane.writing = None;
        lane.writing_seen = None;
        lane.absent = None;
        lane.look_when_idle = None;
        lane.not_taken = Some(seq);
        self.wake(session);
        true
    }
}
