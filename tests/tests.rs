//! The one integration-test binary (`autotests = false`): every module here
//! is a group of tests, `util` is their shared harness.

mod agent_claude;
mod agent_codex;
mod agent_opencode;
mod agents;
mod bench_smoke;
mod cli;
mod config_example;
mod conformance;
mod core_purity;
mod daemon;
mod desktop;
mod doubles;
mod e2e_claude;
mod e2e_codex;
mod e2e_opencode;
mod e2e_remote;
mod fanout;
mod hostile;
mod install;
mod netns;
mod realollie;
mod reliability;
mod reminders;
mod structure;
mod systemd;
mod tracker9p;
mod tracker_agents;
mod under_unit;
mod util;
