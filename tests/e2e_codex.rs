//! Codex sessions woken by the real `reveille run`, proven through the
//! real `codex` TUI and its app-server daemon, offline against the fake
//! model: what a Codex user gets from reveille (issue 22). Each test
//! starts codex as a person does, the fake model, and the daemon with
//! `project.default_session = "codex:<thread>"` (`rig`), and asserts on
//! what the agent experienced — the model's request log, the thread's
//! history, the plan file — and on what reveille says (journal, status).
//!
//! - `plan_run`: a three-step plan run to its end by the agent ticking
//!   each step itself, with the wake latency beside the agent's own path;
//! - `long_turn`: a step ready during a person's long turn runs after it;
//! - `crash`: reveille killed -9 mid-plan, at several points;
//! - `codex_restart`: the agent's program stopped and started again
//!   mid-plan, and what `status` and the journal say meanwhile;
//! - `reminders`: an idle agent with its step open is reminded, also by
//!   a reveille that has not delivered to it in this run;
//! - `fanout`: a parallel step goes to a child thread reveille creates.
//!
//! Every test counts the model's turns per step: no prompt twice.

mod codex_restart;
mod crash;
mod fanout;
mod file_log;
mod long_turn;
mod plan_run;
mod question;
mod reminders;
pub(crate) mod rig;
mod waiting;
