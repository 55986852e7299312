//! The flags, as one clap definition: `--help`, the shell completions and
//! the man page are all generated from it, so they cannot drift apart.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// What `--help` adds after the options: examples, files, signals and the
/// environment, the sections a man page has.
const AFTER_HELP: &str = "\
Examples:
  reveille run --config config/example.toml   run in the foreground
  reveille check --project myproj             every value and where it came from
  reveille status --project myproj --json     plans, ready/announced steps, outboxes
  reveille ready pl/20261130T101500_a1b2c3d4--ship__todo.md
  reveille why pl/20261130T101500_a1b2c3d4--ship__todo.md s3
  reveille ready .beads/issues.jsonl          beads' ready rule, offline

Files:
  ~/.config/reveille/<project>.toml    the configuration ($XDG_CONFIG_HOME)
  ~/.local/state/reveille/<project>/   state: state.json, journal.jsonl, lock
                                       ($XDG_STATE_HOME; [state] dir)
  <plan_dir>/YYYYMMDDTHHMMSS_<uid>--<slug>__<todo|wip|done|abandoned>.md
                                       plan files; also *.plan.json
  <sessions.dir>/<session>/fifo.in     where a session's prompts are written

Signals (run):
  SIGHUP            re-read the configuration (an invalid one is refused)
  SIGTERM, SIGINT   finish writes in flight, persist the state, exit 0

Environment:
  REVEILLE_<SECTION>__<KEY>   any configuration key (REVEILLE_PROJECT__PLAN_DIR)
  RUST_LOG                    log filter, overriding [log] level
  XDG_CONFIG_HOME, XDG_STATE_HOME, HOME
  JOURNAL_STREAM, NOTIFY_SOCKET, WATCHDOG_USEC   set by systemd

Exit status: 0 success; 1 an error (reported on stderr); 2 bad usage;
141 the output pipe was closed (as for SIGPIPE).";

/// Wakes AI coding agents when their next plan step or tracker task
/// becomes unblocked.
#[derive(Parser)]
#[command(name = "reveille", version, about, after_long_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Which configuration to use.
#[derive(Args, Clone, Default)]
pub struct ConfigFlags {
    /// Configuration file (default: ~/.config/reveille/<project>.toml if it exists).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub config: Option<PathBuf>,
    /// Project name (default: from the configuration, else "default").
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the daemon in the foreground.
    Run(ConfigFlags),
    /// Validate the configuration and print every resolved value and its origin.
    Check(ConfigFlags),
    /// Show plans, ready and announced steps, pending prompts, event offset.
    Status {
        #[command(flatten)]
        flags: ConfigFlags,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print the ready steps of a plan file (or ready issues of a beads
    /// issues.jsonl), computed offline.
    Ready {
        /// A plan file (`*.md`, `*.plan.json`) or a beads `issues.jsonl`.
        #[arg(value_hint = clap::ValueHint::FilePath)]
        file: PathBuf,
        /// Print JSON instead of `id<TAB>title` lines.
        #[arg(long)]
        json: bool,
    },
    /// Explain every unchecked step of a plan: what it still waits for,
    /// which are ready, and what the daemon did with them.
    Why {
        /// A plan file (`*.md`, `*.plan.json`).
        #[arg(value_hint = clap::ValueHint::FilePath)]
        file: PathBuf,
        /// Only this step: `s3`, `3`, `t3`, or a part of its title.
        step: Option<String>,
        #[command(flatten)]
        flags: ConfigFlags,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}
