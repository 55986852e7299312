//! The flags, as one clap definition: `--help`, the shell completions and
//! the man page are all generated from it, so they cannot drift apart.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// What `--help` adds after the options: examples, files, signals and the
/// environment, the sections a man page has.
const AFTER_HELP: &str = "\
Examples:
  reveille demo                               see a wake-up in a throw-away project
  reveille run --config config/example.toml   run in the foreground
  reveille check --project myproj             every value and where it came from
  reveille reload --project myproj            re-read the configuration, say if refused
  reveille status --project myproj --json     plans, ready/announced steps, outboxes
  reveille status --watch                     the same, live on the terminal (q quits)
  reveille ready pl/20261130T101500_a1b2c3d4--ship__todo.md
  reveille why pl/20261130T101500_a1b2c3d4--ship__todo.md s3
  reveille ready .beads/issues.jsonl          beads' ready rule, offline

Files:
  ~/.config/reveille/<project>.toml    the configuration ($XDG_CONFIG_HOME)
  ~/.local/state/reveille/<project>/   state: state.json, journal.jsonl, lock,
                                       reload.json (the answer to the last reload),
                                       sessions.json, reminders.json (views for status)
                                       ($XDG_STATE_HOME; [state] dir)
  <plan_dir>/YYYYMMDDTHHMMSS_<uid>--<slug>__<todo|wip|done|abandoned>.md
                                       plan files; also *.plan.json
  <sessions.dir>/<session>/fifo.in     where a session's prompts are written

Signals (run):
  SIGHUP            re-read the configuration (an invalid one is refused;
                    `reveille reload` sends it and reports the answer)
  SIGTERM, SIGINT   finish writes in flight, persist the state, exit 0

Environment:
  REVEILLE_<SECTION>__<KEY>   any configuration key (REVEILLE_PROJECT__PLAN_DIR)
  RUST_LOG                    log filter, overriding [log] level
  NO_COLOR                    set (non-empty): no colour in the stderr log
  XDG_CONFIG_HOME, XDG_STATE_HOME, HOME
  JOURNAL_STREAM, NOTIFY_SOCKET, WATCHDOG_USEC   set by systemd

Exit status: 0 success; 1 an error (reported on stderr); 2 bad usage;
78 a configuration error (EX_CONFIG; not restarted by the unit);
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
    /// Project name (default: the only configured project; for a file, the
    /// project whose plan directory holds it; else "default").
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the daemon in the foreground.
    Run(ConfigFlags),
    /// Validate the configuration and print every resolved value and its origin.
    Check(ConfigFlags),
    /// Make the running daemon re-read its configuration (SIGHUP) and wait
    /// for its answer; a refused reload exits non-zero with the reason.
    Reload(ConfigFlags),
    /// Show plans, ready and announced steps, pending prompts, sessions,
    /// reminders; with --watch, keep showing them as they change.
    Status {
        #[command(flatten)]
        flags: ConfigFlags,
        /// Print JSON instead of text (with --watch: one object per line,
        /// each time it changes).
        #[arg(long)]
        json: bool,
        /// Keep watching: on a terminal, a full-screen view redrawn as
        /// things change, cut to the terminal's width (q, Ctrl-C or SIGTERM
        /// end it and restore the terminal); when stdout is not a terminal,
        /// or with --json, a new snapshot each time it changes, until
        /// SIGINT or SIGTERM.
        #[arg(long)]
        watch: bool,
    },
    /// Print the ready steps of a plan file (or ready issues of a beads
    /// issues.jsonl), computed offline.
    Ready {
        /// A plan file (`*.md`, `*.plan.json`) or a beads `issues.jsonl`.
        #[arg(value_hint = clap::ValueHint::FilePath)]
        file: PathBuf,
        #[command(flatten)]
        flags: ConfigFlags,
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
    /// See a wake-up now: a throw-away project, a session with a named pipe
    /// and a reader, the daemon, and a plan ticked step by step.
    Demo {
        /// Keep the demo's directory (plans, state, daemon log) afterwards.
        #[arg(long)]
        keep: bool,
    },
    /// Print a shell completion script (bash, zsh or fish) to stdout.
    Completions {
        /// The shell to complete for.
        shell: Shell,
    },
    /// Print the man page (roff) to stdout: `reveille man | man -l -`.
    Man,
}

/// The shells `completions` writes scripts for.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    fn generator(self) -> clap_complete::Shell {
        match self {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
        }
    }
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> String {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_complete::generate(shell.generator(), &mut cmd, "reveille", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The man page, in roff: clap_mangen's sections for the command, with
/// its per-subcommand pages (which would each need installing) replaced
/// by one COMMANDS section holding every subcommand's usage and options.
pub fn man_page() -> String {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    cmd.build();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    // Rendering into a Vec cannot fail.
    let _ = man.render_title(&mut out);
    let _ = man.render_name_section(&mut out);
    let _ = man.render_synopsis_section(&mut out);
    let _ = man.render_description_section(&mut out);
    let _ = man.render_options_section(&mut out);
    let mut text = String::from_utf8_lossy(&out).into_owned();
    text.push_str(".SH COMMANDS\n");
    for sub in cmd.get_subcommands_mut().filter(|s| s.get_name() != "help") {
        text.push_str(&subcommand_section(sub));
    }
    text.push_str(&configuration_section());
    text.push_str(&extra_section());
    let mut out = Vec::new();
    let _ = man.render_version_section(&mut out);
    text.push_str(&String::from_utf8_lossy(&out));
    text
}

/// The CONFIGURATION section: where the file is, the layers, and every
/// key with its default and environment variable, from the definitions
/// `load` uses (`config::reference`), so the page cannot drift.
fn configuration_section() -> String {
    let mut out = String::from(".SH CONFIGURATION\n");
    out.push_str(&roff(
        "Each key takes the value of the highest layer that sets it: built-in defaults, \
         then the file (--config FILE, else ~/.config/reveille/<project>.toml, \
         $XDG_CONFIG_HOME), then environment variables REVEILLE_<SECTION>__<KEY>, then \
         --project. Paths expand ~, $VAR and ${VAR}. Unknown keys are errors. \
         `reveille check` prints every resolved value and where it came from; \
         doc/CONFIG.md and config/example.toml say what each key means.",
    ));
    let mut section = String::new();
    for k in reveille::config::reference() {
        let (sec, key) = k.key.split_once('.').unwrap_or(("", &k.key));
        if sec != section {
            section = sec.to_string();
            out.push_str(&format!(".SS \"[{}]\"\n", roff(sec).trim_end()));
        }
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR = {}\n{}",
            roff(key).trim_end(),
            roff(&k.default).trim_end(),
            roff(&format!("env: {}", k.env))
        ));
    }
    out
}

/// Text for roff: backslashes and hyphens escaped, no line starting with
/// a control character.
/// EXTRA: what `--help` adds after the options (examples, files,
/// signals, environment), in no-fill mode: it is laid out in columns
/// already, and filled, troff warned "cannot adjust line" at the plan
/// file name pattern, wider than a terminal.
fn extra_section() -> String {
    format!(".SH EXTRA\n.nf\n{}.fi\n", roff(AFTER_HELP))
}

fn roff(s: &str) -> String {
    let escaped = s.replace('\\', "\\e").replace('-', "\\-");
    escaped
        .lines()
        .map(|l| match l.starts_with(['.', '\'']) {
            true => format!("\\&{l}\n"),
            false => format!("{l}\n"),
        })
        .collect()
}

fn subcommand_section(sub: &mut clap::Command) -> String {
    let usage = sub.render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ");
    let about = sub
        .get_long_about()
        .or(sub.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default();
    let mut out = format!(".SS \"{}\"\n", roff(usage).trim_end());
    out.push_str(&roff(&about));
    for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
        let value = arg
            .get_value_names()
            .and_then(|v| v.first())
            .map_or_else(|| arg.get_id().as_str().to_uppercase(), |v| v.to_string());
        let name = match arg.get_long() {
            Some(long) if arg.get_action().takes_values() => format!("--{long} {value}"),
            Some(long) => format!("--{long}"),
            None => format!("<{value}>"),
        };
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}",
            roff(&name).trim_end(),
            roff(&help)
        ));
    }
    out
}
