//! The `reveille` binary: flags → configuration → logging → run. Errors
//! become a message on stderr and a non-zero exit code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};

use reveille::config::{self, LoadOptions, Settings};
use reveille::core::beads;
use reveille::core::plan::{parse_plan, PlanFormat};
use reveille::core::ready_report;
use reveille::shell::{daemon, logging, status};

/// Wakes AI coding agents when their next plan step or tracker task
/// becomes unblocked.
#[derive(Parser)]
#[command(name = "reveille", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct ConfigFlags {
    /// Configuration file (default: ~/.config/reveille/<project>.toml if it exists).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Project name (default: from the configuration, else "default").
    #[arg(long, value_name = "NAME")]
    project: Option<String>,
}

#[derive(Subcommand)]
enum Command {
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
        file: PathBuf,
        /// Print JSON instead of `id<TAB>title` lines.
        #[arg(long)]
        json: bool,
    },
}

fn load(flags: &ConfigFlags) -> Result<config::Loaded, config::ConfigErrors> {
    config::load(&LoadOptions {
        config: flags.config.clone(),
        project: flags.project.clone(),
        env: None,
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("reveille: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Check(flags) => {
            let loaded = load(&flags)?;
            daemon::check_templates(&loaded.settings).map_err(anyhow::Error::msg)?;
            print!("{}", config::render_check(&loaded));
            Ok(ExitCode::SUCCESS)
        }
        Command::Status { flags, json } => {
            let loaded = load(&flags)?;
            let s = status::gather(&loaded.settings).map_err(anyhow::Error::msg)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print!("{}", status::render(&s));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Ready { file, json } => ready(&file, json),
        Command::Run(flags) => {
            let loaded = load(&flags)?;
            start(loaded.settings, flags)
        }
    }
}

fn start(settings: Settings, flags: ConfigFlags) -> anyhow::Result<ExitCode> {
    let target = match settings.log.target {
        config::LogTarget::Auto => logging::LogTarget::Auto,
        config::LogTarget::Journald => logging::LogTarget::Journald,
        config::LogTarget::Stderr => logging::LogTarget::Stderr,
    };
    logging::init(target, &settings.log.level).map_err(anyhow::Error::msg)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the event loop")?;
    let reload = Box::new(move || load(&flags).map(|l| l.settings).map_err(|e| e.to_string()));
    match runtime.block_on(daemon::run(settings, reload)) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            tracing::error!("{e}");
            Err(e.into())
        }
    }
}

fn ready(file: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bytes = std::fs::read(file).with_context(|| format!("{}", file.display()))?;
    let format = if name.ends_with(".plan.json") {
        PlanFormat::Json
    } else if name.ends_with(".jsonl") {
        return ready_issues(file, &bytes, json);
    } else {
        PlanFormat::Markdown
    };
    let plan = match parse_plan(format, &bytes, 64 << 20) {
        Ok(plan) => plan,
        Err(e) => bail!("{}: {e}", file.display()),
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ready_report::ready_json(&plan))?
        );
    } else {
        print!("{}", ready_report::ready_lines(&plan));
    }
    Ok(ExitCode::SUCCESS)
}

/// `reveille ready .beads/issues.jsonl`: `bd ready`'s rule, offline.
fn ready_issues(file: &Path, bytes: &[u8], json: bool) -> anyhow::Result<ExitCode> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| anyhow::anyhow!("{}: not UTF-8 ({e})", file.display()))?;
    let (issues, errors) = beads::parse_issues(text);
    for e in &errors {
        eprintln!("reveille: {}: {e}", file.display());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let ready = beads::ready(&issues, now);
    if json {
        print!("{}", beads::ready_json(&issues, &ready));
    } else {
        print!("{}", beads::ready_lines(&issues, &ready));
    }
    Ok(ExitCode::SUCCESS)
}
