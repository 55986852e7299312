//! Claude Code sessions woken by the real daemon: the real `reveille run`
//! with `project.default_session = "claude:<id>"` and `[claude]
//! config_dir` pointing at the session's isolated instance, the real
//! `claude` TUI started as a person starts it (under tmux, in a home of its
//! own), and the fake model it talks to. Every test asserts what the agent
//! experienced — the requests the model saw, the session's transcript, the
//! plan file its shell tool edited — and that no prompt reached the model
//! twice.
//!
//! - `plan`: a three-step plan run to its end by the agent ticking each
//!   step; per-step latency beside the agent's own fastest path; `status`
//!   and the journal afterwards;
//! - `busy`: a step ready during a person's long turn runs after it, as a
//!   turn of its own;
//! - `crash`: reveille killed -9 at several points of a plan;
//! - `resume`: the agent's program stopped and started again mid-plan;
//! - `remind`: an idle agent that left its step open is reminded;
//! - `fanout`: a parallel step meant for a child goes to the parent;
//! - `unreadable`: a transcript reveille cannot read while its step is
//!   open: the prompt is written once, and found taken later.
//!
//! One Claude Code at a time (`one_at_a_time`), like the backend's tests.

mod busy;
mod crash;
mod fanout;
mod gave_up;
mod plan;
mod remind;
mod resume;
pub(crate) mod rig;
mod stuck;
mod unreadable;
mod waiting;
mod watch;
