//! The shell: small workers that touch the world and talk to the core only
//! through `Input`s and `Effect`s.
//!
//! - `daemon`: the event loop of `reveille run`;
//! - `checklists`: which instance announces a shared session tree's checklists;
//! - `watch`: inotify roots, polling fallback, rescans;
//! - `read`: capped, non-blocking reads of plan and tracker files;
//! - `desktop`: freedesktop notifications on the user's session bus;
//! - `agents`: every kind of session (named pipes and files, ollie-9p,
//!   Codex, Claude Code, opencode), one folder each, and their one list;
//! - `backend`: the seam they plug into; `backends`: the router by kind;
//! - `tail`: the tracker's event log, by byte offset;
//! - `mtab`: 9beads' mount table, judged against the project's directory;
//! - `store`: the journal, the snapshot and the one-instance lock;
//! - `reminders`: `reminders.json`, the open announced items for status;
//! - `reload_report`: `reload.json`, the daemon's answer to each reload;
//! - `status`: `reveille status`, offline from the state directory;
//! - `why`: `reveille why`, what each step of one plan waits for;
//! - `ignored`: plan-like files whose names break the rule, reported once;
//! - `notices`: telling the person (`[notify]`);
//! - `systemd`: sd_notify; `logging`: journald or stderr.

pub mod agents;
pub mod backend;
pub mod backends;
pub mod checklists;
pub mod daemon;
pub mod desktop;
pub mod ignored;
pub mod inotify;
pub mod logging;
pub mod mtab;
pub mod notices;
pub mod read;
pub mod reload_report;
pub mod reminders;
pub mod session_view;
pub mod status;
pub mod store;
pub mod systemd;
pub mod tail;
pub mod wall;
pub mod watch;
pub mod why;
