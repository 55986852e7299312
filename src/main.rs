//! The `reveille` binary: flags → configuration → logging → run. Errors
//! become a message on stderr and a non-zero exit code; output that cannot
//! be written never panics (see `cli::output`).

mod cli;

use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Parser;

use reveille::config::{self, ConfigErrors, Settings};
use reveille::shell::{daemon, logging, status};

use cli::args::{Cli, Command, ConfigFlags};
use cli::exit;
use cli::output::{print, print_json, warn, AlreadySaid, OutputError};

fn load(flags: &ConfigFlags) -> Result<config::Loaded, ConfigErrors> {
    config::load(&cli::project::options(flags))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(e),
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => exit_for(&e),
    }
}

/// `--help`, `--version` and usage errors. Help and version text that
/// does not go to a terminal is written like any other output, so a
/// closed pipe or a full disk is handled the same way.
fn usage(e: clap::Error) -> ExitCode {
    use std::io::IsTerminal;
    let informational = matches!(
        e.kind(),
        clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
    );
    if !informational || std::io::stdout().is_terminal() {
        e.exit()
    }
    match print(&e.render().to_string()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(out) => exit_for(&out.into()),
    }
}

/// The message (said once) and exit status for a failed command.
fn exit_for(e: &anyhow::Error) -> ExitCode {
    if e.downcast_ref::<AlreadySaid>().is_some() {
        return ExitCode::FAILURE;
    }
    if let Some(out) = e.downcast_ref::<OutputError>() {
        return match out {
            OutputError::Closed => ExitCode::from(exit::CLOSED_PIPE),
            OutputError::Failed(_) => {
                warn(out);
                ExitCode::FAILURE
            }
        };
    }
    match e.downcast_ref::<ConfigErrors>() {
        // One line per problem, each naming its key and origin; a status
        // of its own, which the unit does not restart for.
        Some(errors) => {
            errors.0.iter().for_each(warn);
            ExitCode::from(exit::CONFIG)
        }
        None => {
            warn(format!("{e:#}"));
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Check(flags) => {
            let loaded = load(&flags)?;
            let wrong = config::not_directories(&loaded);
            if !wrong.is_empty() {
                return Err(ConfigErrors(wrong).into());
            }
            print(&config::render_check(&loaded))?;
        }
        Command::Reload(flags) => return cli::reload::run(&flags),
        Command::Status { flags, json, watch } => show_status(&flags, json, watch)?,
        Command::Ready { file, flags, json } => cli::offline::ready(&file, &flags, json)?,
        Command::Why {
            file,
            step,
            flags,
            json,
        } => cli::offline::why(&file, step.as_deref(), &flags, json)?,
        Command::Demo { keep } => cli::demo::run(keep)?,
        Command::Completions { shell } => print(&cli::args::completions(shell))?,
        Command::Man => print(&cli::args::man_page())?,
        Command::Run(flags) => {
            let loaded = load(&flags)?;
            start(loaded.settings, flags)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `reveille status`: from the state directory, even when the
/// configuration has gone bad since the daemon read it (the problems are
/// said once, the state is shown with those keys at their defaults);
/// `--watch` keeps showing it (`cli::live`).
fn show_status(flags: &ConfigFlags, json: bool, watch: bool) -> anyhow::Result<()> {
    let (loaded, errors) = config::load_salvaged(&cli::project::options(flags));
    for e in &errors {
        warn(e);
    }
    if !errors.is_empty() {
        warn("the configuration has errors: showing the state with those keys at their defaults (a running daemon keeps the configuration it loaded)");
    }
    let Some(loaded) = loaded else {
        bail!("no usable configuration");
    };
    let settings = &loaded.settings;
    let has_file = loaded.file.as_ref().is_some_and(|f| f.is_file());
    if !has_file && !settings.state.dir.exists() {
        let looked: Vec<String> = loaded
            .looked_at
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let hint = cli::project::ambiguity(flags)
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        bail!(
            "no project {:?}: no configuration file (looked for {}) and no state directory {}{hint}",
            settings.project.name,
            if looked.is_empty() {
                "none".to_string()
            } else {
                looked.join(", ")
            },
            settings.state.dir.display()
        );
    }
    if watch {
        return cli::live::run(settings, json);
    }
    let s = status::gather(settings).map_err(anyhow::Error::msg)?;
    if json {
        print_json(&s)?;
    } else {
        print(&status::render(&s))?;
    }
    Ok(())
}

fn start(settings: Settings, flags: ConfigFlags) -> anyhow::Result<()> {
    let sink =
        logging::init(settings.log.target, &settings.log.level).map_err(anyhow::Error::msg)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the event loop")?;
    let reload = Box::new(move || load(&flags).map(|l| l.settings));
    runtime
        .block_on(async {
            let shutdown = daemon::terminated()?;
            daemon::run(settings, reload, shutdown).await
        })
        .map_err(|e| {
            // Said once: in the journal (with the project's fields) when
            // logs go there — stderr would land in the journal a second
            // time — else on stderr, by `exit_for`.
            if sink == logging::LogSink::Journald {
                tracing::error!("{e}");
                return AlreadySaid(e.to_string()).into();
            }
            e.into()
        })
}
