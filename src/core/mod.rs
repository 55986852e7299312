//! The pure engine. Nothing under `core` performs I/O, reads a clock or
//! depends on tokio or notify: time and file contents arrive as arguments,
//! and decisions leave as data (`Effect`s). That keeps every rule testable
//! synchronously, without threads, sleeps or temp dirs.
//!
//! - `name`: the plan file-name grammar and plan identity;
//! - `plan` (with `plan::markdown`, `plan::json`, `plan::graph`): the
//!   plan model, its two parsers and the ready set;
//! - `lifecycle`: Todo → Wip → Done | Abandoned;
//! - `memory`: the durable memory, in parts that each apply their share of
//!   the records (`plans`, `tasks`, `outbox`, `children`, `position`);
//! - `record`: the journal records that change it, and the items announced
//!   (work and notes);
//! - `engine`, `input`, `effect`: the engine and its interface; the engine
//!   is a coordinator over parts that own their state — `engine::ledger`
//!   (durable memory, delivery lanes), `engine::plans`, `engine::tasks`,
//!   `engine::sessions`, `engine::reminders`, `engine::children` (fan-out)
//!   — and one `engine::timers` table;
//! - `driver`: the one loop over the engine (`drive`) behind the `World`
//!   trait, shared by the daemon, `status` and the engine tests;
//! - `source`: where announced work comes from (`Source`);
//! - `prompt`: templates; `session`: names from data, agent states;
//! - `fnv`: the stable hash of what is persisted or shared;
//! - `tracker`, `beads`, `timestamp`, `lines`: the task tracker's event
//!   lines, ready files and `issues.jsonl` with `bd ready`'s rule;
//! - `ready_report`: `reveille ready` output;
//! - `taken`: was a prompt taken — the one rule over a delivery's evidence;
//!   `confirm`: its windows per kind of agent (how long a record may lag).

pub mod beads;
pub mod close;
pub mod confirm;
pub mod driver;
pub mod effect;
pub mod engine;
pub mod fnv;
pub mod input;
pub mod lifecycle;
pub mod lines;
pub mod memory;
pub mod name;
pub mod plan;
pub mod prompt;
pub mod ready_report;
pub mod record;
pub mod session;
pub mod source;
pub mod taken;
pub mod timestamp;
pub mod tracker;
